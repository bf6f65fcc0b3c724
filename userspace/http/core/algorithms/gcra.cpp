// SPDX-License-Identifier: MIT
// GCRA decisions.
#include "floodgate/core/algorithms/gcra.h"

#include <algorithm>

namespace floodgate::http {

Decision Gcra::decide(KeyState& state, int64_t now_ns, int64_t cost) const {
  int64_t& tat_ns = state.word[0];
  const int64_t tolerance_ns = capacity_ * interval_ns_;
  int64_t start_ns = std::max(tat_ns, now_ns);
  int64_t next_tat_ns = start_ns + cost * interval_ns_;

  Decision d;
  d.limit = capacity_;
  if (cost > capacity_) {
    d.outcome = Outcome::kCostExceedsBurst;
  } else if (next_tat_ns - now_ns <= tolerance_ns) {
    tat_ns = next_tat_ns;
  } else {
    d.outcome = Outcome::kRejected;
    d.retry_after_ns = next_tat_ns - tolerance_ns - now_ns;
  }
  int64_t used_ns = std::max<int64_t>(0, tat_ns - now_ns);
  d.remaining = std::max<int64_t>(0, (tolerance_ns - used_ns) / interval_ns_);
  d.reset_ns = used_ns;
  return d;
}

void Gcra::refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const {
  int64_t& tat_ns = state.word[0];
  const int64_t back_ns = unrefilledNs(cost * interval_ns_, admitted_ns, now_ns);
  // A tat at or before now is a full bucket: no fuller than that.
  tat_ns = std::max(tat_ns - back_ns, std::min(tat_ns, now_ns));
}

bool Gcra::idle(const KeyState& state, int64_t now_ns) const { return state.word[0] <= now_ns; }

int64_t Gcra::quota() const { return capacity_; }
int64_t Gcra::windowSeconds() const {
  return std::max<int64_t>(1, ceilDiv(capacity_ * interval_ns_, kNsPerS));
}
size_t Gcra::stateBytes() const { return sizeof(int64_t); }

}  // namespace floodgate::http
