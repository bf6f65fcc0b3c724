// SPDX-License-Identifier: MIT
// Leaky bucket (queue) decisions: admitted requests get the delay until their turn.
#include "floodgate/core/algorithms/leaky_bucket.h"

#include <algorithm>

namespace floodgate::http {

Decision LeakyBucket::decide(KeyState& state, int64_t now_ns, int64_t cost) const {
  int64_t& drained_ns = state.word[0];
  const int64_t depth_ns = capacity_ * interval_ns_;
  int64_t leave_ns = std::max(drained_ns, now_ns);  // when those queued before have drained
  int64_t next_drained_ns = leave_ns + cost * interval_ns_;

  Decision d;
  d.limit = capacity_;
  if (cost > capacity_) {
    d.outcome = Outcome::kCostExceedsBurst;
  } else if (next_drained_ns - now_ns <= depth_ns) {
    drained_ns = next_drained_ns;
    d.delay_ns = leave_ns - now_ns;
  } else {
    d.outcome = Outcome::kRejected;  // queue full
    d.retry_after_ns = next_drained_ns - depth_ns - now_ns;
  }
  int64_t backlog_ns = std::max<int64_t>(0, drained_ns - now_ns);
  d.remaining = std::max<int64_t>(0, (depth_ns - backlog_ns) / interval_ns_);
  d.reset_ns = backlog_ns;
  return d;
}

void LeakyBucket::refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const {
  // As GCRA's: what has drained since admitted_ns left the queue as if the request were in it.
  int64_t& drained_ns = state.word[0];
  const int64_t back_ns = unrefilledNs(cost * interval_ns_, admitted_ns, now_ns);
  drained_ns = std::max(drained_ns - back_ns, std::min(drained_ns, now_ns));
}

bool LeakyBucket::idle(const KeyState& state, int64_t now_ns) const {
  return state.word[0] <= now_ns;
}

int64_t LeakyBucket::quota() const { return capacity_; }
int64_t LeakyBucket::windowSeconds() const {
  return std::max<int64_t>(1, ceilDiv(capacity_ * interval_ns_, kNsPerS));
}
size_t LeakyBucket::stateBytes() const { return sizeof(int64_t); }

}  // namespace floodgate::http
