// SPDX-License-Identifier: MIT
// Replaying a source's sampled packet counts through the program's own bucket arithmetic.
#include <algorithm>

#include "controller/rule_compiler.h"
#include "fg_gcra.h"
#include "fg_window.h"
#include "learn/learner.h"

namespace floodgate::learn {
namespace {

// One state word's decision by the rule's algorithm, as buckets.bpf.h's fg_admit_word
// makes it: `now` in bucket time units.
bool admits(const fg_rule& rule, uint64_t word, uint64_t now, uint64_t increment, uint64_t capacity,
            uint64_t* next) {
  __u64 out = 0;
  int admitted = 0;
  const uint64_t window_ns = static_cast<uint64_t>(rule.window_ms) * 1000000ULL;
  if (rule.algorithm == FG_ALG_FIXED_WINDOW && window_ns) {
    admitted = fg_fixed_admit(word, now >> FG_TIME_SHIFT, window_ns, increment, capacity, &out);
  } else if (rule.algorithm == FG_ALG_SLIDING_WINDOW && window_ns) {
    admitted = fg_sliding_admit(word, now >> FG_TIME_SHIFT, window_ns, increment, capacity, &out);
  } else {
    admitted = fg_gcra_admit(word, now, increment, capacity, &out);
  }
  *next = out;
  return admitted != 0;
}

}  // namespace

Result<uint64_t> replayDrops(const std::vector<uint32_t>& ticks,
                             const std::vector<uint64_t>& times_ns, uint64_t first_tick,
                             const LimitSpec& limit, Algorithm algorithm, uint64_t window_ns,
                             uint32_t hz) {
  // each of these is a replay not run, never one that dropped nothing
  if (hz == 0) return Error::failure("the kernel's clock rate (HZ) is not known");
  if (first_tick == 0) return Error::failure("the source's counts start at the baseline");
  RuleSpec spec;
  spec.name = "learn";
  spec.limit = limit;
  spec.algorithm = algorithm;
  if (algorithm != Algorithm::kTokenBucket) spec.window_ns = window_ns;
  const uint64_t tick_units = fg_tick_units(hz);
  auto compiled = compileRule(spec, tick_units);
  if (!compiled) return Error::failure("the limit does not compile: " + compiled.error().message);
  const fg_rule& rule = *compiled;
  const fg_limit& pps = rule.limits[FG_LIMIT_PPS];
  if (pps.interval == 0) {
    return Error::failure("the limit has no pps, and the program counts no bytes per source");
  }

  uint64_t word = 0, dropped = 0;  // 0: a full bucket, an empty window
  for (size_t i = 0; i < ticks.size(); ++i) {
    const uint64_t k = first_tick + i;
    if (k >= times_ns.size()) break;
    const uint64_t n = ticks[i];
    if (n == 0) continue;
    const auto jiffy = [hz](uint64_t ns) {
      return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * hz / 1000000000ULL);
    };
    const uint64_t start = jiffy(times_ns[k - 1]);
    const uint64_t spans = std::max<uint64_t>(1, jiffy(times_ns[k]) - start);
    for (uint64_t s = 0; s < spans; ++s) {
      // the interval's packets spread evenly over the ticks it spans
      const uint64_t group = (s + 1) * n / spans - s * n / spans;
      if (group == 0) continue;
      const uint64_t now = (start + 1 + s) * tick_units;
      // every packet of a tick meets the same clock reading, so the program admits the
      // first `admitted` of them and refuses the rest: the largest count whose summed
      // increment the bucket takes (admission is monotone in the increment)
      uint64_t low = 0, high = group, next = 0;
      while (low < high) {
        const uint64_t mid = low + (high - low + 1) / 2;
        if (admits(rule, word, now, mid * pps.interval, pps.capacity, &next)) {
          low = mid;
        } else {
          high = mid - 1;
        }
      }
      if (low > 0 && admits(rule, word, now, low * pps.interval, pps.capacity, &next)) word = next;
      dropped += group - low;
    }
  }
  return dropped;
}

}  // namespace floodgate::learn
