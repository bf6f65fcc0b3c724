// SPDX-License-Identifier: MIT
// Token bucket decisions, in exact integer picotokens.
#include "floodgate/core/algorithms/token_bucket.h"

#include <algorithm>

namespace floodgate::http {

namespace {
constexpr int64_t kPicoPerUnit = 1'000'000'000'000;
int64_t& missing(KeyState& s) { return s.word[0]; }
int64_t& refilledAt(KeyState& s) { return s.word[1]; }
}  // namespace

void TokenBucket::refill(KeyState& state, int64_t now_ns) const {
  if (now_ns <= refilledAt(state)) return;  // stale or same reading: nothing earned
  int64_t elapsed_ns = now_ns - refilledAt(state);
  // Compare before multiplying so a long idle period cannot overflow.
  if (elapsed_ns >= ceilDiv(missing(state), rate_milli_per_s_)) {
    missing(state) = 0;
  } else {
    missing(state) -= elapsed_ns * rate_milli_per_s_;
  }
  refilledAt(state) = now_ns;
}

Decision TokenBucket::decide(KeyState& state, int64_t now_ns, int64_t cost) const {
  refill(state, now_ns);
  Decision d;
  d.limit = capacity_;
  int64_t available = capacity_ * kPicoPerUnit - missing(state);
  int64_t need = cost * kPicoPerUnit;
  if (cost > capacity_) {
    d.outcome = Outcome::kCostExceedsBurst;
  } else if (need <= available) {
    missing(state) += need;
    available -= need;
  } else {
    d.outcome = Outcome::kRejected;
    // Tokens accrue from the last refill on (later than now_ns for a stale reading).
    int64_t ready_ns = refilledAt(state) + ceilDiv(need - available, rate_milli_per_s_);
    d.retry_after_ns = std::max<int64_t>(1, ready_ns - now_ns);
  }
  d.remaining = available / kPicoPerUnit;
  d.reset_ns =
      std::max<int64_t>(0, refilledAt(state) + ceilDiv(missing(state), rate_milli_per_s_) - now_ns);
  return d;
}

void TokenBucket::refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const {
  // Only the tokens not refilled since admitted_ns (see unrefilledNs()), in picotokens.
  const int64_t charged = cost * kPicoPerUnit;
  const int64_t elapsed_ns = std::max<int64_t>(0, now_ns - admitted_ns);
  // Compare before multiplying so a late refund cannot overflow.
  if (elapsed_ns >= ceilDiv(charged, rate_milli_per_s_)) return;
  const int64_t back = charged - elapsed_ns * rate_milli_per_s_;
  missing(state) = std::max<int64_t>(0, missing(state) - back);
}

bool TokenBucket::idle(const KeyState& state, int64_t now_ns) const {
  if (state.word[0] == 0) return true;
  return now_ns > state.word[1] &&
         now_ns - state.word[1] >= ceilDiv(state.word[0], rate_milli_per_s_);
}

int64_t TokenBucket::quota() const { return capacity_; }
int64_t TokenBucket::windowSeconds() const {
  // The time an empty bucket takes to fill: capacity units per this many seconds.
  int64_t fill_ns = ceilDiv(capacity_ * kPicoPerUnit, rate_milli_per_s_);
  return std::max<int64_t>(1, ceilDiv(fill_ns, kNsPerS));
}
size_t TokenBucket::stateBytes() const { return 2 * sizeof(int64_t); }

}  // namespace floodgate::http
