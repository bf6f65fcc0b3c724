// SPDX-License-Identifier: MIT
// `floodgate detach IFACE`: removes the program and its pins; the program behind it, if
// any, takes its place unless --drop-next.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "controller/xdp_limiter.h"

namespace floodgate::cli {

void addDetachCommand(CLI::App& app, Action& selected) {
  struct DetachFlags {
    std::string interface;
    bool drop_next = false;
  };
  auto flags = std::make_shared<DetachFlags>();
  CLI::App* cmd = app.add_subcommand("detach", "Detach the limiter and remove its state");
  addInterfaceArgument(cmd, flags->interface, "Interface to detach from")->required();
  cmd->add_flag("--drop-next", flags->drop_next,
                "Do not put the program chained behind floodgate in its place");
  cmd->callback([flags, &selected] {
    selected = [flags]() -> Status {
      auto report = XdpLimiter::detach(flags->interface, !flags->drop_next);
      if (!report) return report.error();
      std::cout << "detached floodgate from " << flags->interface << "\n";
      for (const std::string& note : report->notes) std::cout << note << "\n";
      return okStatus();
    };
  });
}

}  // namespace floodgate::cli
