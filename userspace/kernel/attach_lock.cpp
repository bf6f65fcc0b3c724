// SPDX-License-Identifier: MIT
// AttachLock: flock(2) on a file under /run, polled through lockWithin.
#include "kernel/attach_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "kernel/writer_lock.h"

namespace floodgate {

Result<std::optional<AttachLock>> AttachLock::acquireWithin(std::chrono::milliseconds wait) {
  if (mkdir(kDirectory, 0755) != 0 && errno != EEXIST) {
    return Error::failure(std::string("cannot create ") + kDirectory + ": " + std::strerror(errno));
  }
  UniqueFd fd(open(kPath, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return Error::failure(std::string("cannot open ") + kPath + ": " + std::strerror(errno));
  }
  Result<bool> locked = lockWithin(fd.get(), wait, kPath);
  if (!locked) return locked.error();
  if (!*locked) return std::optional<AttachLock>();
  return std::optional<AttachLock>(AttachLock(std::move(fd)));
}

Result<AttachLock> AttachLock::acquire() {
  auto lock = acquireWithin(kWait);
  if (!lock) return lock.error();
  if (!*lock) {
    return Error::failure("another floodgate has been attaching or detaching for " +
                          std::to_string(kWait.count() / 1000) +
                          " s: nothing was changed; try again once it is done");
  }
  return std::move(**lock);
}

}  // namespace floodgate
