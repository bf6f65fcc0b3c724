// SPDX-License-Identifier: MIT
// Fixed window: at most limit units per aligned window; up to 2x at a boundary.
#pragma once

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

// State: word[0] = index of the current window (now / window), word[1] = units admitted in it.
// A stale reading whose window is older than the stored one counts against the stored one.
class FixedWindow final : public Algorithm {
 public:
  FixedWindow(int64_t limit, int64_t window_ms) : limit_(limit), window_ns_(window_ms * kNsPerMs) {}

  AlgorithmKind kind() const override { return AlgorithmKind::kFixedWindow; }
  Decision decide(KeyState& state, int64_t now_ns, int64_t cost) const override;
  void refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const override;
  bool idle(const KeyState& state, int64_t now_ns) const override;
  int64_t quota() const override;
  int64_t windowSeconds() const override;
  size_t stateBytes() const override;
  int64_t windowNs() const { return window_ns_; }

 private:
  int64_t limit_;
  int64_t window_ns_;
};

}  // namespace floodgate::http
