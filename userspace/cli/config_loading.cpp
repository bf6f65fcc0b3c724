// SPDX-License-Identifier: MIT
// optionsFromConfig: loadConfig, print diagnostics and warnings (the config's, and the
// interface's frame sizes and VLAN offload against its rules), attachOptionsFor.
#include "cli/config_loading.h"

#include <iostream>

#include "config/floodgate_config.h"
#include "controller/frame_size_warnings.h"
#include "controller/vlan_cookie_warning.h"
#include "floodgate/common/text.h"

namespace floodgate::cli {

Result<AttachOptions> optionsFromConfig(const std::string& file, const std::string& interface) {
  config::Diagnostics diagnostics;
  config::FloodgateConfig cfg = config::loadConfig(file, diagnostics);
  if (!diagnostics.empty()) {
    std::cerr << diagnostics.format();
    return Error::failure(file + " is not valid (" +
                          counted(diagnostics.size(), "problem", "problems") +
                          " above): nothing was changed");
  }
  // what `floodgate check` warns of (a list that holds every address, say) is said here too
  for (const std::string& warning : config::configWarnings(cfg)) {
    std::cerr << "warning: " << file << ": " << warning << "\n";
  }
  auto options = config::attachOptionsFor(cfg, interface);
  if (options) {
    for (const std::string& warning : frameSizeWarnings(*options)) {
      std::cerr << "warning: " << warning << "\n";
    }
    if (auto warning = vlanCookieWarning(*options)) std::cerr << "warning: " << *warning << "\n";
  }
  return options;
}

}  // namespace floodgate::cli
