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

Result<WriterLock::Guard> WriterLock::acquire(const std::string& what,
                                              std::chrono::milliseconds wait) {
  if (!state_) return Error::failure("no pin directory to lock for " + what);
  State& state = *state_;
  if (state.depth > 0) {
    ++state.depth;
    return Guard(&state);
  }
  if (!state.fd.valid()) {
    state.fd.reset(open(state.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!state.fd.valid()) {
      return Error::failure("cannot open " + state.directory +
                            " to lock it: " + std::strerror(errno));
    }
  }
  Result<bool> locked = lockWithin(state.fd.get(), wait, state.directory);
  if (!locked) return locked.error();
  if (!*locked) {
    const std::string changing =
        wait.count() >= 1000
            ? "has been changing " + what + " for " + std::to_string(wait.count() / 1000) + " s"
            : "is changing " + what;
    return Error::failure("another floodgate " + changing +
                          " (a 'floodgate run' applying its config, or another command): "
                          "nothing was changed; try again");
  }
  state.depth = 1;
  return Guard(&state);
}

void WriterLock::State::release() {
  if (--depth == 0) flock(fd.get(), LOCK_UN);
}

}  // namespace floodgate
