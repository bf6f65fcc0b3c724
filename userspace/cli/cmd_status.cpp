// SPDX-License-Identifier: MIT
// `floodgate status [IFACE] [--json]`: what is attached where, with which settings.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/json_text.h"
#include "controller/status_views.h"
#include "controller/xdp_limiter.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct StatusFlags {
  std::string interface;
  bool json = false;
};

Status showStatus(const StatusFlags& flags) {
  if (Status s = checkPrivileges(); !s) return s;
  std::vector<std::string> interfaces =
      flags.interface.empty() ? XdpLimiter::attachedInterfaces() : std::vector{flags.interface};
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& name : interfaces) {
    auto limiter = XdpLimiter::open(name);
    if (!limiter) return limiter.error();
    auto status = limiter->status();
    if (!status) return status.error();
    if (flags.json) {
      all.push_back(statusJson(*status));
    } else {
      std::cout << statusText(*status);
    }
  }
  if (flags.json) {
    std::cout << jsonText({{"interfaces", all}}) << "\n";
  } else if (interfaces.empty()) {
    std::cout << "floodgate is not attached to any interface\n";
  }
  return okStatus();
}

}  // namespace

void addStatusCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand("status", "Show attached limiters and their settings");
  addInterfaceArgument(cmd, flags->interface, "Only this interface");
  cmd->add_flag("--json", flags->json, "Machine-readable output");
  cmd->callback([flags, &selected] { selected = [flags] { return showStatus(*flags); }; });
}

}  // namespace floodgate::cli
