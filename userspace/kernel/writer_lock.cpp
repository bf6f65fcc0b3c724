// SPDX-License-Identifier: MIT
// WriterLock: flock(2) on the pin directory, polled, so a waiting writer can give up.
#include "kernel/writer_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace floodgate {

Result<bool> lockWithin(int fd, std::chrono::milliseconds wait, const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Error::failure("cannot lock " + path + ": " + std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

Result<WriterLock::Guard> WriterLock::acquire(const std::string& what) {
  if (depth_ > 0) {
    ++depth_;
    return Guard(this);
  }
  if (!fd_.valid()) {
    fd_.reset(open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd_.valid()) {
      return Error::failure("cannot open " + directory_ + " to lock it: " + std::strerror(errno));
    }
  }
  Result<bool> locked = lockWithin(fd_.get(), kWait, directory_);
  if (!locked) return locked.error();
  if (!*locked) {
    return Error::failure("another floodgate has been changing " + what + " for " +
                          std::to_string(kWait.count() / 1000) +
                          " s (a 'floodgate run' applying its config, or another command): "
                          "nothing was changed; try again");
  }
  depth_ = 1;
  return Guard(this);
}

void WriterLock::release() {
  if (--depth_ == 0) flock(fd_.get(), LOCK_UN);
}

}  // namespace floodgate
