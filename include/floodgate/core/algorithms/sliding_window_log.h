// SPDX-License-Identifier: MIT
// Sliding window log: exact, one timestamp per admitted unit, memory grows with the limit.
#pragma once

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

// State: log = arrival times of admitted units, oldest first, from index word[0] on;
// word[1] = the earliest admission a refund still applies to.
// A unit whose age equals the window is outside it. A stale reading is logged at the newest
// logged time, so it never expires earlier than the request really happened.
class SlidingWindowLog final : public Algorithm {
 public:
  SlidingWindowLog(int64_t limit, int64_t window_ms)
      : limit_(limit), window_ns_(window_ms * kNsPerMs) {}

  AlgorithmKind kind() const override { return AlgorithmKind::kSlidingWindowLog; }
  Decision decide(KeyState& state, int64_t now_ns, int64_t cost) const override;
  void refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const override;
  bool idle(const KeyState& state, int64_t now_ns) const override;
  int64_t used(const KeyState& state, int64_t now_ns) const override;
  int64_t quota() const override;
  int64_t windowSeconds() const override;
  size_t stateBytes() const override;
  int64_t windowNs() const { return window_ns_; }

 private:
  // Drops the entries that are out of the window at now_ns.
  void prune(KeyState& state, int64_t now_ns) const;

  int64_t limit_;
  int64_t window_ns_;
};

}  // namespace floodgate::http
