// SPDX-License-Identifier: MIT
// ConfigWatch: inotify on a config file's directory, so editors that write a new file and
// rename it over the old one are seen as well as in-place writes.
#pragma once

#include <string>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

class ConfigWatch {
 public:
  static Result<ConfigWatch> start(const std::string& config_path);

  // The descriptor to poll for POLLIN.
  int fd() const { return fd_.get(); }
  // Drains pending events; true when one concerned the config file.
  bool drain();

 private:
  UniqueFd fd_;
  std::string name_;  // the file's name within the watched directory
};

}  // namespace floodgate::daemon
