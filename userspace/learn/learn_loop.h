// SPDX-License-Identifier: MIT
// The sampling loop of `floodgate learn`: reads a Sampler every sample interval on an
// injected clock for the run's duration, and hands each sample to a Learner.
#pragma once

#include <cstdint>
#include <vector>

#include "floodgate/common/result.h"
#include "learn/learner.h"

namespace floodgate::learn {

// Where samples come from: a running limiter (limiter_sampler.h) or recorded ones in tests.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // One reading of every rule's counters and every owned slot of the source table.
  virtual Status read(std::vector<RuleReading>& rules, std::vector<SlotReading>& slots) = 0;
};

// The time, and waiting for it. Tests step it by hand.
class LearnClock {
 public:
  virtual ~LearnClock() = default;
  virtual uint64_t nowNs() = 0;
  // Returns at `deadline_ns` or later; false when the run should stop early (Ctrl-C).
  virtual bool sleepUntil(uint64_t deadline_ns) = 0;
};

// Samples at start, start + sample_ns, ... up to start + duration_ns, each at its time on
// `clock` or as soon after as the sampler allows (a sample that comes late ends its interval
// late; targets it missed are skipped, never made up). Stops early, with what it has, when
// the clock says so. Errors of the sampler end the run.
Result<LearnReport> runLearning(Sampler& sampler, LearnClock& clock, const LearnOptions& options,
                                const std::vector<LearnRule>& rules);

}  // namespace floodgate::learn
