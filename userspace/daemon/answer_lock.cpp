// SPDX-License-Identifier: MIT
// AnswerLock: holds numbered, so that a wait that ran out in one says nothing of the next.
#include "daemon/answer_lock.h"

namespace floodgate::daemon {

// numbered once the mutex is held, and no longer before it is let go (members are destroyed
// after the destructor's body): a request that reads the number between the two sees the
// one before, or none, and waits
AnswerLock::Hold::Hold(AnswerLock& answers) : answers_(answers), lock_(answers.mutex_) {
  answers_.holding_ = ++answers_.begun_;
}

AnswerLock::Hold::~Hold() { answers_.holding_ = 0; }

bool AnswerLock::lock(std::unique_lock<std::timed_mutex>& lock) {
  if (lock.try_lock()) return true;
  const uint64_t holding = holding_;
  if (holding != 0 && ran_out_ == holding) return false;
  if (lock.try_lock_for(wait_)) return true;
  // Only a hold that lasted through the whole wait answers the next requests at once; one
  // that began during the wait (or another request's own) is waited for again by the next.
  if (holding != 0 && holding_ == holding) ran_out_ = holding;
  return false;
}

}  // namespace floodgate::daemon
