// SPDX-License-Identifier: MIT
// AnswerLock: the daemon's lock, and whether a scrape or a health check waits for it or
// answers from its last answer. Every section but a request takes the lock through a Hold,
// which numbers it (the mutex is AnswerLock's own, so there is no other way to take it). A request
// waits a bounded time for the lock; once a wait has run out during one hold, the requests after it
// answer at once until that hold ends, instead of each waiting in turn: an apply (the verifier,
// another `floodgate attach`'s lock), a ban waiting seconds for another command's writer lock, a
// replay taken in one turn. The next hold has a number of its own and is waited for again, so a
// request never answers from the last one merely because the event loop took the lock for an
// instant (it does, many times a second during a flood), as counters frozen through a flood would
// read as no traffic.
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

  // Holds the lock from its construction to its destruction, numbered.
  class Hold {
   public:
    explicit Hold(AnswerLock& answers);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    AnswerLock& answers_;
    std::lock_guard<std::timed_mutex> lock_;
  };

  // The lock, not yet taken, for a request: lock() it, or lock() on it to wait as long as
  // it takes.
  std::unique_lock<std::timed_mutex> forRequest() {
    return std::unique_lock(mutex_, std::defer_lock);
  }
  // Locks `lock` (from forRequest()) to answer a request: at once, or within `wait`. False,
  // with `lock` not locked, when the wait runs out, and at once while the hold a wait already
  // ran out in goes on. Thread-safe.
  bool lock(std::unique_lock<std::timed_mutex>& lock);

 private:
  const std::chrono::milliseconds wait_;
  std::timed_mutex mutex_;
  std::atomic<uint64_t> begun_{0};    // holds begun: the number of the last one
  std::atomic<uint64_t> holding_{0};  // the number of the hold under way; 0: none
  std::atomic<uint64_t> ran_out_{0};  // the number of the last one a wait ran out in
};

}  // namespace floodgate::daemon
