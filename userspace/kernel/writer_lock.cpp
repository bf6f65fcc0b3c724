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
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Error::failure("cannot lock " + directory_ + ": " + std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error::failure("another floodgate has been changing " + what + " for " +
                            std::to_string(kWait.count() / 1000) +
                            " s (a 'floodgate run' applying its config, or another command): "
                            "nothing was changed; try again");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  depth_ = 1;
  return Guard(this);
}

void WriterLock::release() {
  if (--depth_ == 0) flock(fd_.get(), LOCK_UN);
}

}  // namespace floodgate
