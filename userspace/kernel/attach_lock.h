// SPDX-License-Identifier: MIT
// One attach or detach at a time on this host: an exclusive flock on /run/floodgate/attach.lock,
// held from before the bpffs is looked at (two attaches on a host without one would each
// mount one) to the last pin written. Two fresh attaches of one interface would otherwise both
// find nothing pinned, both load, and the loser's cleanup delete the winner's pins: its
// program left on the hook with nothing to find it by. A file outside the bpffs, since an
// attach may mount that, and removes and recreates the interface's pin directory.
#pragma once

#include <chrono>
#include <optional>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

class AttachLock {
 public:
  // How long an attach or detach waits for another: a load takes seconds on a slow VM.
  static constexpr std::chrono::milliseconds kWait{60000};

  static constexpr const char* kDirectory = "/run/floodgate";
  static constexpr const char* kPath = "/run/floodgate/attach.lock";

  // Takes the lock (creating its file), waiting up to kWait; released when the returned lock
  // goes.
  static Result<AttachLock> acquire();
  // Takes the lock within `wait`: none when another attach or detach held it all that time
  // (the daemon's look at its limiters then waits for its next turn).
  static Result<std::optional<AttachLock>> acquireWithin(std::chrono::milliseconds wait);

 private:
  explicit AttachLock(UniqueFd fd) : fd_(std::move(fd)) {}

  UniqueFd fd_;  // closing it releases the flock
};

}  // namespace floodgate
