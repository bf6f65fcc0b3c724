// SPDX-License-Identifier: MIT
// Reading a sampler on a clock for a fixed time and learning from what it reads.
#include "learn/learn_loop.h"

namespace floodgate::learn {

Result<LearnReport> runLearning(Sampler& sampler, LearnClock& clock, const LearnOptions& options,
                                const std::vector<LearnRule>& rules) {
  Learner learner(options, rules);
  std::vector<RuleReading> rule_readings;
  std::vector<SlotReading> slots;
  const uint64_t start = clock.nowNs();
  const uint64_t end = start + options.duration_ns;
  bool stopped = false;
  if (Status s = sampler.read(rule_readings, slots); !s) return s.error();
  learner.addSample(start, rule_readings, slots);
  uint64_t target = start;
  while (target < end) {
    target += options.sample_ns;
    if (!clock.sleepUntil(target)) {
      stopped = true;
      break;
    }
    rule_readings.clear();
    slots.clear();
    const uint64_t now = clock.nowNs();
    if (Status s = sampler.read(rule_readings, slots); !s) return s.error();
    learner.addSample(now, rule_readings, slots);
    // a sampler slower than the interval: go on from the next target still ahead
    while (target + options.sample_ns <= now && target < end) target += options.sample_ns;
  }
  LearnReport report = learner.finish();
  report.stopped = stopped;
  return report;
}

}  // namespace floodgate::learn
