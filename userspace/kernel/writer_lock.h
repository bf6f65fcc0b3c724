// SPDX-License-Identifier: MIT
// One writer at a time per limiter: an exclusive flock on its pin directory, held while a
// command or the daemon changes its rule sets, lists or bans, so two writers never
// interleave (a rule set half from one reload and half from another).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

// Takes an exclusive flock(2) on `fd`, polling, for up to `wait`: false when another holder
// kept it all that time.
Result<bool> lockWithin(int fd, std::chrono::milliseconds wait, const std::string& path);

// The lock of one limiter's pin directory, for one holder. Reentrant: nested writes of the
// same holder share the lock it took first. Not thread-safe (one holder per thread). A guard
// outlives a move of the lock it came from (its state moves with neither), so a caller may
// take a limiter's lock and then hand the limiter on while it holds it; not the destruction
// of the object the lock was moved to.
class WriterLock {
 public:
  // How long a second writer waits for the first before giving up.
  static constexpr std::chrono::milliseconds kWait{3000};

  WriterLock() = default;
  explicit WriterLock(std::string pin_directory)
      : state_(std::make_unique<State>(std::move(pin_directory))) {}

 private:
  struct State {
    explicit State(std::string pin_directory) : directory(std::move(pin_directory)) {}
    void release();

    std::string directory;
    UniqueFd fd;
    int depth = 0;
  };

 public:
  // Held until the returned guard goes.
  class Guard {
   public:
    explicit Guard(State* state) : state_(state) {}
    Guard(Guard&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (state_) state_->release();
    }

   private:
    State* state_;
  };

  // Takes the lock, waiting up to `wait` for another writer; `what` names the limiter in
  // the error ("eth0").
  Result<Guard> acquire(const std::string& what, std::chrono::milliseconds wait = kWait);

 private:
  std::unique_ptr<State> state_;
};

}  // namespace floodgate
