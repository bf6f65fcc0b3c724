// SPDX-License-Identifier: MIT
// Leaky bucket as a queue: requests wait their turn and leave at the drain rate.
#pragma once

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

// State: word[0] = the time the queue has drained everything admitted so far. A request
// leaves (goes upstream) when those before it have drained: delay = max(drained, now) - now.
// The queue holds at most capacity units, the one being sent included; a full queue rejects.
class LeakyBucket final : public Algorithm {
 public:
  LeakyBucket(int64_t capacity, int64_t rate_milli_per_s)
      : capacity_(capacity), interval_ns_(intervalNs(rate_milli_per_s)) {}

  AlgorithmKind kind() const override { return AlgorithmKind::kLeakyBucket; }
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
