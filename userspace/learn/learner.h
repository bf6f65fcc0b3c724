// SPDX-License-Identifier: MIT
// The learner: per-source packet counts sampled from a running limiter, turned into 1 s
// windows per source, their distribution per rule, a proposed limit at a percentile and
// margin, and the share of the traffic that limit would have dropped. Pure: samples and
// times come in as values (from a Sampler, learn_loop.h), so tests replay recorded ones.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "controller/rule_spec.h"
#include "floodgate/common/result.h"
#include "learn/rate_histogram.h"

namespace floodgate::learn {

inline constexpr uint64_t kWindowNs = 1000000000ULL;  // the rate windows: 1 s
// The default sample interval, which is also the burst window.
inline constexpr uint64_t kDefaultSampleNs = 100000000ULL;
inline constexpr size_t kDefaultMaxSources = 65536;
// Per-source sample counts kept for the replay, 4 bytes each: 32 MiB.
inline constexpr size_t kDefaultReplayBudget = 8u << 20;

// A source as the program keys it: a rule and an address masked to the rule's prefix.
struct SourceKey {
  uint32_t rule_id = 0;
  uint8_t family = 0;  // enum fg_family
  uint8_t prefix = 0;
  std::array<uint8_t, 16> addr{};  // IPv4 in the first 4 bytes
  bool operator==(const SourceKey&) const = default;
};

// One owned slot of the source table at a sample.
struct SlotReading {
  uint32_t slot = 0;
  uint64_t fingerprint = 0;  // the owner: a different one means the slot changed hands
  SourceKey key;
  uint32_t packets = 0;  // charged since the owner took the slot; wraps at 2^32
};

// One rule's counters at a sample (all verdicts summed); they only grow.
struct RuleReading {
  uint32_t id = 0;
  uint64_t packets = 0;
  uint64_t bytes = 0;              // frame bytes
  uint64_t untracked_packets = 0;  // charged to the rule's shared bucket (no slot of their own)
};

// A rule of the running limiter, as learning needs it.
struct LearnRule {
  uint32_t id = 0;
  std::string name;
  bool per_source = true;  // key: source (a global rule has no per-source rates)
  Algorithm algorithm = Algorithm::kTokenBucket;
  uint64_t window_ns = 0;  // window algorithms
  LimitSpec current;       // its limit now
};

struct LearnOptions {
  uint64_t duration_ns = 10 * kWindowNs;  // whole seconds
  uint64_t sample_ns = kDefaultSampleNs;  // divides kWindowNs
  // percentile and margin in thousandths: 99.9 % is 99900, × 1.5 is 1500
  uint64_t percentile_milli = 99900;
  uint64_t margin_milli = 1500;
  size_t max_sources = kDefaultMaxSources;      // tracked across all rules
  size_t replay_budget = kDefaultReplayBudget;  // sample counts kept for the replay
  uint32_t hz = 250;                            // the program's clock, for the replay
};

// A distribution's summary.
struct Spread {
  uint64_t p50 = 0, p99 = 0, p999 = 0, chosen = 0, max = 0;  // chosen: at the percentile asked
};

struct RuleLearned {
  LearnRule rule;
  uint64_t sources = 0;               // distinct sources of the rule tracked
  uint64_t source_windows = 0;        // (source, 1 s window) pairs with at least one packet
  Spread pps;                         // packets in a source's 1 s window
  Spread bps;                         // bits in it: an estimate (below)
  Spread burst;                       // the most packets a source sent in one sample interval
  uint64_t tracked_packets = 0;       // counted per source
  uint64_t rule_packets = 0;          // everything the rule counted over the run
  uint64_t untracked_packets = 0;     // of them, sources without a slot in the program
  std::optional<LimitSpec> proposal;  // as the config takes it for the algorithm; none: `note`
  uint64_t replayed_sources = 0;
  uint64_t replayed_packets = 0;
  uint64_t replay_dropped = 0;  // of replayed_packets, what the proposal would have dropped
  std::string note;             // why there is no proposal (no traffic, a global rule, a limit
                                // the rule cannot take), when there is none
  // Why the replay could not evaluate the proposal, when it could not: replay_dropped is then
  // not known (not 0), and --apply refuses the proposal without --force.
  std::string not_replayed;
};

struct LearnReport {
  uint64_t duration_ns = 0;
  uint64_t sample_ns = 0;
  uint64_t samples = 0;  // taken, the first (the baseline) included
  uint64_t percentile_milli = 0;
  uint64_t margin_milli = 0;
  size_t max_sources = 0;
  uint64_t sources_beyond_cap = 0;  // source sightings not tracked: the cap was reached
  bool stopped = false;             // ended early (Ctrl-C): samples cover less than duration_ns
  std::vector<RuleLearned> rules;
};

// Streams samples in; holds per-source state for at most max_sources sources and at most
// replay_budget sample counts, whatever the table holds. Not thread-safe.
class Learner {
 public:
  Learner(const LearnOptions& options, std::vector<LearnRule> rules);

  // One sample taken at `time_ns` (any clock, nondecreasing). The first is the baseline:
  // counts before it are not the run's. Slots of rules not given to the constructor are
  // ignored.
  void addSample(uint64_t time_ns, const std::vector<RuleReading>& rules,
                 const std::vector<SlotReading>& slots);

  // The distributions, proposals and replays of everything added.
  LearnReport finish();

 private:
  struct Source {
    SourceKey key;
    size_t rule = 0;  // index into rules_
    uint32_t slot = 0;
    int64_t window = -1;  // the 1 s window being summed
    uint64_t window_packets = 0;
    double window_bytes = 0;
    uint64_t window_burst = 0;
    // replay: counts of sample intervals first_tick.., or none when over budget
    bool replayed = false;
    uint64_t first_tick = 0;
    std::vector<uint32_t> ticks;
  };
  // An owned slot at a sample: what the next sample's reading of it is compared with.
  struct SlotMark {
    uint32_t slot = 0;
    uint32_t packets = 0;
    uint64_t fingerprint = 0;
    const SlotReading* reading = nullptr;  // while the sample is taken in
  };
  static bool bySlot(const SlotMark& a, const SlotMark& b);
  struct KeyHash {
    size_t operator()(const SourceKey& k) const;
  };
  struct RuleState {
    RateHistogram pps, bps, burst;
    uint64_t sources = 0;
    uint64_t tracked_packets = 0;
    RuleReading first, last;
    bool seen = false;
    double bytes_per_packet = 0;  // in the current sample interval
  };

  void noteSlot(const SlotReading& reading, uint64_t packets, uint64_t tick);
  std::optional<size_t> sourceFor(const SourceKey& key, uint64_t tick);
  void charge(Source& source, uint64_t packets, uint64_t tick);
  void closeWindow(Source& source);
  Spread spread(const RateHistogram& h) const;
  void propose(RuleLearned& out);

  LearnOptions options_;
  std::vector<LearnRule> rules_;
  std::vector<RuleState> rule_state_;
  std::unordered_map<uint32_t, size_t> rule_index_;  // rule id → index
  std::vector<Source> sources_;
  std::unordered_map<SourceKey, size_t, KeyHash> by_key_;
  std::vector<SlotMark> previous_;  // the owned slots of the last sample, by slot
  std::vector<uint64_t> times_;     // of every sample, the baseline first
  // per 1 s window, the ns of the sample intervals that start in it (more than a second
  // when samples ran late): what a window's count is a rate over
  std::vector<uint64_t> window_ns_;
  size_t replay_used_ = 0;
  uint64_t beyond_cap_ = 0;
};

// How many packets of `ticks` (packets per sample interval, the k-th ending at
// times_ns[first_tick + k], each starting where the previous ends) a limit `limit` under
// `algorithm` would have refused, replayed through the program's own arithmetic (fg_gcra.h,
// fg_window.h) on a clock of `hz` ticks a second: each interval's packets are spread evenly
// over the ticks it spans, and each tick's share is charged at that tick, as the program
// sees every packet of a tick at one time. The bucket starts full. An error saying why when
// the replay cannot be run (no pps limit, one that does not compile, no clock rate).
Result<uint64_t> replayDrops(const std::vector<uint32_t>& ticks,
                             const std::vector<uint64_t>& times_ns, uint64_t first_tick,
                             const LimitSpec& limit, Algorithm algorithm, uint64_t window_ns,
                             uint32_t hz);

}  // namespace floodgate::learn
