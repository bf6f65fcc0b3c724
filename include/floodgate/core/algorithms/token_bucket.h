// SPDX-License-Identifier: MIT
// Token bucket with weighted cost: capacity units of burst, refilled at rate_per_s.
#pragma once

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

// State: word[0] = tokens missing from a full bucket in picotokens (10^-12 unit; 0 = full,
// so an absent key is a full bucket), word[1] = time of the last refill. Refill is exact
// integer arithmetic: the rate in thousandths per second is picotokens per nanosecond.
// A stale reading (before the last refill) refills nothing.
class TokenBucket final : public Algorithm {
 public:
  TokenBucket(int64_t capacity, int64_t rate_milli_per_s)
      : capacity_(capacity), rate_milli_per_s_(rate_milli_per_s) {}

  AlgorithmKind kind() const override { return AlgorithmKind::kTokenBucket; }
  Decision decide(KeyState& state, int64_t now_ns, int64_t cost) const override;
  void refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const override;
  bool idle(const KeyState& state, int64_t now_ns) const override;
  int64_t quota() const override;
  int64_t windowSeconds() const override;
  size_t stateBytes() const override;
  int64_t rateMilliPerS() const { return rate_milli_per_s_; }

 private:
  // Adds the tokens earned since the last refill, up to a full bucket.
  void refill(KeyState& state, int64_t now_ns) const;

  int64_t capacity_;
  int64_t rate_milli_per_s_;
};

}  // namespace floodgate::http
