// SPDX-License-Identifier: MIT
// One writer at a time per limiter: an exclusive flock on its pin directory, held while a
// command or the daemon changes its rule sets, lists or bans, so two writers never
// interleave (a rule set half from one reload and half from another).
#pragma once

#include <chrono>
#include <string>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

// Takes an exclusive flock(2) on `fd`, polling, for up to `wait`: false when another holder
// kept it all that time.
Result<bool> lockWithin(int fd, std::chrono::milliseconds wait, const std::string& path);

// The lock of one limiter's pin directory, for one holder. Reentrant: nested writes of the
// same holder share the lock it took first. Not thread-safe (one holder per thread).
class WriterLock {
 public:
  // How long a second writer waits for the first before giving up.
  static constexpr std::chrono::milliseconds kWait{3000};

  WriterLock() = default;
  explicit WriterLock(std::string pin_directory) : directory_(std::move(pin_directory)) {}

  // Held until the returned guard goes.
  class Guard {
   public:
    explicit Guard(WriterLock* lock) : lock_(lock) {}
    Guard(Guard&& other) noexcept : lock_(std::exchange(other.lock_, nullptr)) {}
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (lock_) lock_->release();
    }

   private:
    WriterLock* lock_;
  };

  // Takes the lock, waiting up to kWait for another writer; `what` names the limiter in
  // the error ("eth0").
  Result<Guard> acquire(const std::string& what);

 private:
  void release();

  std::string directory_;
  UniqueFd fd_;
  int depth_ = 0;
};

}  // namespace floodgate
