// SPDX-License-Identifier: MIT
// `floodgate detach IFACE`: removes the program and its pins.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "controller/xdp_limiter.h"

namespace floodgate::cli {

void addDetachCommand(CLI::App& app, Action& selected) {
  auto interface = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("detach", "Detach the limiter and remove its state");
  addInterfaceArgument(cmd, *interface, "Interface to detach from")->required();
  cmd->callback([interface, &selected] {
    selected = [interface]() -> Status {
      if (Status s = XdpLimiter::detach(*interface); !s) return s;
      std::cout << "detached floodgate from " << *interface << "\n";
      return okStatus();
    };
  });
}

}  // namespace floodgate::cli
