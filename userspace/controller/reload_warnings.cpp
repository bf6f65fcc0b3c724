// SPDX-License-Identifier: MIT
// reloadKeepsWarnings: the attach-time settings a reload leaves as they are.
#include "controller/reload_warnings.h"

namespace floodgate {

std::vector<std::string> reloadKeepsWarnings(const XdpLimiterStatus& running,
                                             const AttachOptions& options) {
  // the words of attach --replace, which keeps the same sizes
  const std::string fresh = "takes effect only on a fresh attach ('floodgate detach " +
                            running.interface + "' first; bucket state starts over)";
  std::vector<std::string> out;
  if (running.table_slots != 0 && running.table_slots != options.table_slots) {
    out.push_back("the table size (" + std::to_string(options.table_slots) + ") " + fresh +
                  ": the running limiter keeps " + std::to_string(running.table_slots) + " slots");
  }
  if (running.list_max_entries != 0 && running.list_max_entries != options.list_max_entries) {
    out.push_back("the list size (" + std::to_string(options.list_max_entries) + ") " + fresh +
                  ": the running limiter keeps " + std::to_string(running.list_max_entries) +
                  " entries a list");
  }
  const std::string wanted = xdpModeName(options.mode);
  if (options.mode != XdpMode::kAuto && (running.mode == "native" || running.mode == "generic") &&
      running.mode != wanted) {
    out.push_back("the XDP mode (" + wanted + ") " + fresh + ": the program stays in " +
                  running.mode + " mode");
  }
  return out;
}

}  // namespace floodgate
