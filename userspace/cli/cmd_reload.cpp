// SPDX-License-Identifier: MIT
// `floodgate reload IFACE --config FILE`: validates, then applies a config to a running
// limiter atomically; unchanged rules keep their state. An invalid file changes nothing.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/config_loading.h"
#include "controller/reload_warnings.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/text.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct ReloadFlags {
  std::string interface, config;
};

Status reload(const ReloadFlags& flags) {
  auto options = optionsFromConfig(flags.config, flags.interface);
  if (!options) return options.error();
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(flags.interface);
  if (!limiter) return limiter.error();
  if (auto status = limiter->status(); status) {
    for (const std::string& warning : reloadKeepsWarnings(*status, *options)) {
      std::cerr << "floodgate: warning: " << warning << "\n";
    }
  }
  if (Status s = limiter->reload(*options); !s) return s;
  std::cout << "reloaded " << flags.interface << " from " << flags.config << " ("
            << counted(options->rules.size(), "rule", "rules") << ")\n";
  return okStatus();
}

}  // namespace

void addReloadCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<ReloadFlags>();
  CLI::App* cmd =
      app.add_subcommand("reload", "Apply a config to a running limiter, keeping state");
  addInterfaceArgument(cmd, flags->interface, "Interface")->required();
  cmd->add_option("--config", flags->config, "floodgate.yaml")->required();
  cmd->callback([flags, &selected] { selected = [flags] { return reload(*flags); }; });
}

}  // namespace floodgate::cli
