// SPDX-License-Identifier: MIT
// ConfigWatch: inotify on a config file's directory, so editors that write a new file and
// rename it over the old one are seen as well as in-place writes, and on the directory of
// the file the path resolves to, so a symlinked config is seen too: an edit of the link's
// target, a link pointed elsewhere, a Kubernetes ConfigMap's `..data` swap.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

class ConfigWatch {
 public:
  static Result<ConfigWatch> start(const std::string& config_path);

  // The descriptor to poll for POLLIN.
  int fd() const { return fd_.get(); }
  // Drains pending events; true when the config file may have changed and is complete
  // (a file just created under the config's name is waited for until it is closed).
  bool drain();

  // What the config path names now, through every link: a change of it is a new config.
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t mtime_ns = 0;
    off_t size = -1;  // -1: the path names nothing
    bool operator==(const Identity&) const = default;
  };

 private:
  bool beingWritten(const std::string& dir, uint32_t mask, const char* name) const;
  void followTarget();

  UniqueFd fd_;
  std::string path_;
  std::string dir_;   // the directory of the config path
  std::string name_;  // the file's name within it
  int dir_wd_ = -1;
  std::string target_dir_;  // the directory of the file the path resolves to
  std::string target_name_;
  int target_wd_ = -1;  // dir_wd_ when the two directories are one
  Identity seen_;
  bool being_written_ = false;  // a new file under the config's name, not yet closed
};

}  // namespace floodgate::daemon
