// SPDX-License-Identifier: MIT
// GCRA (generic cell rate algorithm): a token bucket kept as one theoretical arrival time.
#pragma once

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

// State: word[0] = theoretical arrival time (TAT); a request of cost n is admitted when
// max(TAT, now) + n x interval - now <= capacity x interval. An absent key has TAT 0 (full).
// A stale reading makes TAT - now larger, so it only ever admits less.
class Gcra final : public Algorithm {
 public:
  Gcra(int64_t capacity, int64_t rate_milli_per_s)
      : capacity_(capacity), interval_ns_(intervalNs(rate_milli_per_s)) {}

  AlgorithmKind kind() const override { return AlgorithmKind::kGcra; }
  Decision decide(KeyState& state, int64_t now_ns, int64_t cost) const override;
  void refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const override;
  bool idle(const KeyState& state, int64_t now_ns) const override;
  int64_t quota() const override;
  int64_t windowSeconds() const override;
  size_t stateBytes() const override;
  int64_t unitIntervalNs() const { return interval_ns_; }

 private:
  int64_t capacity_;
  int64_t interval_ns_;  // per unit of cost, rounded up
};

}  // namespace floodgate::http
