// SPDX-License-Identifier: MIT
// AttachLock: flock(2) on kPinRoot, polled through lockWithin.
#include "kernel/attach_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "kernel/pins.h"
#include "kernel/writer_lock.h"

namespace floodgate {

Result<AttachLock> AttachLock::acquire() {
  if (mkdir(kPinRoot, 0700) != 0 && errno != EEXIST) {
    return Error::failure(std::string("cannot create ") + kPinRoot + ": " + std::strerror(errno));
  }
  UniqueFd fd(open(kPinRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return Error::failure(std::string("cannot open ") + kPinRoot +
                          " to lock it: " + std::strerror(errno));
  }
  Result<bool> locked = lockWithin(fd.get(), kWait, kPinRoot);
  if (!locked) return locked.error();
  if (!*locked) {
    return Error::failure("another floodgate has been attaching or detaching for " +
                          std::to_string(kWait.count() / 1000) +
                          " s: nothing was changed; try again once it is done");
  }
  return AttachLock(std::move(fd));
}

}  // namespace floodgate
