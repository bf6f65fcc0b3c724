// SPDX-License-Identifier: MIT
// AnswerLock: whether a scrape or a health check waits for the daemon's lock or answers
// from its last answer. A section that may hold the lock for seconds (an apply: the
// verifier, another `floodgate attach`'s lock) marks itself with a LongHold for as long as
// it holds it. A request waits a bounded time for the lock; once a wait has run out during
// a long section, the requests after it answer at once until that section ends, instead of
// each waiting in turn. Every other hold (the event pump, adapt, housekeeping: mostly
// microseconds, many times a second during a flood, though a ban may wait seconds for another
// command's writer lock) is waited for, so a request never answers from the last one merely
// because the lock was taken for an instant, as counters frozen through a flood would read as
// no traffic; a long one of those costs each request the whole wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace floodgate::daemon {

class AnswerLock {
 public:
  // `wait`: the longest a request waits for the lock.
  explicit AnswerLock(std::chrono::milliseconds wait) : wait_(wait) {}

  // Marks a section that holds the lock and may hold it long, from its construction to its
  // destruction: made once the lock is taken, gone before it is let go. One at a time.
  class LongHold {
   public:
    explicit LongHold(AnswerLock& answers);
    ~LongHold();
    LongHold(const LongHold&) = delete;
    LongHold& operator=(const LongHold&) = delete;

   private:
    AnswerLock& answers_;
  };

  // Locks `lock` (over the lock the sections take) to answer a request: at once, or within
  // `wait`. False, with `lock` not locked, when the wait runs out, and at once while the
  // long section a wait already ran out in goes on. Thread-safe.
  bool lock(std::unique_lock<std::timed_mutex>& lock);

 private:
  const std::chrono::milliseconds wait_;
  std::atomic<uint64_t> begun_{0};    // long sections begun: the number of the last one
  std::atomic<uint64_t> holding_{0};  // the number of the long section under way; 0: none
  std::atomic<uint64_t> ran_out_{0};  // the number of the last one a wait ran out in
};

}  // namespace floodgate::daemon
