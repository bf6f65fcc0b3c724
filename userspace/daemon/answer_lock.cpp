// SPDX-License-Identifier: MIT
// AnswerLock: long sections numbered, so that a wait that ran out in one apply says nothing
// of the next one, nor of the short holds after it.
#include "daemon/answer_lock.h"

namespace floodgate::daemon {

AnswerLock::LongHold::LongHold(AnswerLock& answers) : answers_(answers) {
  answers_.holding_ = ++answers_.begun_;
}

AnswerLock::LongHold::~LongHold() { answers_.holding_ = 0; }

bool AnswerLock::lock(std::unique_lock<std::timed_mutex>& lock) {
  if (lock.try_lock()) return true;
  const uint64_t holding = holding_;
  if (holding != 0 && ran_out_ == holding) return false;
  if (lock.try_lock_for(wait_)) return true;
  // Only a long section that lasted through the whole wait answers the next requests at
  // once; a hold that was not one (or a section that began during the wait) is waited for
  // again by the next request.
  if (holding != 0 && holding_ == holding) ran_out_ = holding;
  return false;
}

}  // namespace floodgate::daemon
