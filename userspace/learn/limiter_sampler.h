// SPDX-License-Identifier: MIT
// The Sampler and clock of a real run: a running limiter's rule counters and source table,
// and CLOCK_MONOTONIC.
#pragma once

#include <atomic>

#include "controller/xdp_limiter.h"
#include "learn/learn_loop.h"

namespace floodgate::learn {

// Reads `limiter` (which must outlive it). The table is copied whole through its mapping,
// as `floodgate top` does: its size is fixed at attach, so the memory this takes does not
// grow with the sources sending.
class LimiterSampler : public Sampler {
 public:
  explicit LimiterSampler(const XdpLimiter& limiter) : limiter_(limiter) {}
  Status read(std::vector<RuleReading>& rules, std::vector<SlotReading>& slots) override;

 private:
  Status readTable(std::vector<SlotReading>& slots);
  Status readRules(std::vector<RuleReading>& rules);

  const XdpLimiter& limiter_;
  bool baseline_taken_ = false;
};

// CLOCK_MONOTONIC; sleepUntil wakes early and says false once `*stop` turns true.
class SteadyLearnClock : public LearnClock {
 public:
  explicit SteadyLearnClock(const std::atomic<bool>* stop = nullptr) : stop_(stop) {}
  uint64_t nowNs() override;
  bool sleepUntil(uint64_t deadline_ns) override;

 private:
  const std::atomic<bool>* stop_;
};

// The rules of `limiter`'s active set, as learning needs them.
Result<std::vector<LearnRule>> learnRules(const XdpLimiter& limiter);

}  // namespace floodgate::learn
