// SPDX-License-Identifier: MIT
// Sliding window counter: prev x (W - elapsed) / W + curr, an estimate that errs both ways.
#pragma once

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

// State: word[0] = index of the current window, word[1] = units in it, word[2] = units in
// the window before. The classic rule: a request of cost c is admitted when the estimate
// before it plus c - 1 is below the limit, compared exactly in integers:
// prev x (W - elapsed) < (limit - curr - c + 1) x W. A stale reading counts as the start of
// the stored window (all of prev).
class SlidingWindowCounter final : public Algorithm {
 public:
  SlidingWindowCounter(int64_t limit, int64_t window_ms)
      : limit_(limit), window_ns_(window_ms * kNsPerMs) {}

  AlgorithmKind kind() const override { return AlgorithmKind::kSlidingWindowCounter; }
  Decision decide(KeyState& state, int64_t now_ns, int64_t cost) const override;
  void refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const override;
  bool idle(const KeyState& state, int64_t now_ns) const override;
  int64_t quota() const override;
  int64_t windowSeconds() const override;
  size_t stateBytes() const override;
  int64_t windowNs() const { return window_ns_; }

 private:
  // Moves state to window index (never backwards); returns the index used.
  int64_t roll(KeyState& state, int64_t now_ns) const;

  int64_t limit_;
  int64_t window_ns_;
};

}  // namespace floodgate::http
