// SPDX-License-Identifier: MIT
// One `floodgate run` per network namespace: an exclusive flock on
// /run/floodgate/run-net<inode>.lock (the inode of the namespace, so daemons of other
// namespaces, a container's, run beside it), taken before the config is applied. A second
// daemon would otherwise adopt the first one's limiters, apply its own config to them, and
// then, failing to listen where the first does, exit leaving them changed.
#pragma once

#include <string>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

class RunLock {
 public:
  // Takes the lock without waiting, and writes this process's pid in its file; an error
  // naming the daemon that holds it otherwise. Released when the returned lock goes.
  static Result<RunLock> acquire();

  // The lock file of this process's network namespace.
  static Result<std::string> path();

 private:
  explicit RunLock(UniqueFd fd) : fd_(std::move(fd)) {}

  UniqueFd fd_;  // closing it releases the flock
};

}  // namespace floodgate::daemon
