// SPDX-License-Identifier: MIT
// One attach or detach at a time on this host: an exclusive flock on the pin root, held from
// the look at what is pinned for an interface to the last pin written. Two fresh attaches of
// one interface would otherwise both find nothing pinned, both load, and the loser's cleanup
// delete the winner's pins: its program left on the hook with nothing to find it by. The
// root, not the interface's own directory, since an attach removes and recreates that one.
#pragma once

#include <chrono>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

class AttachLock {
 public:
  // How long an attach or detach waits for another: a load takes seconds on a slow VM.
  static constexpr std::chrono::milliseconds kWait{60000};

  // Takes the lock (creating the pin root on the bpffs mounted at /sys/fs/bpf), waiting up
  // to kWait; released when the returned lock goes.
  static Result<AttachLock> acquire();

 private:
  explicit AttachLock(UniqueFd fd) : fd_(std::move(fd)) {}

  UniqueFd fd_;  // closing it releases the flock
};

}  // namespace floodgate
