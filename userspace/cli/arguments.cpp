// SPDX-License-Identifier: MIT
// Arguments several verbs share, declared once with their checks.
#include "cli/commands.h"
#include "floodgate/common/text.h"

namespace floodgate::cli {

CLI::Option* addInterfaceArgument(CLI::App* cmd, std::string& interface, const std::string& help) {
  return cmd->add_option("interface", interface, help)
      ->check(CLI::Validator(
          [](std::string& name) {
            Status valid = checkInterfaceName(name);
            return valid ? std::string() : valid.error().message;
          },
          "IFACE"));
}

}  // namespace floodgate::cli
