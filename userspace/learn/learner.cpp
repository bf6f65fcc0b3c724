// SPDX-License-Identifier: MIT
// Samples → per-source 1 s windows → distributions per rule → a proposed limit and what it
// would have dropped.
#include "learn/learner.h"

#include <algorithm>
#include <cmath>

#include "controller/rule_compiler.h"

namespace floodgate::learn {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

// Packets a slot took between two readings of its 32-bit counter. A difference below 2^31
// is the count, across a wrap too; a larger one can only mean the counter started again
// (the slot changed hands and came back to the same source in between), so the new
// reading is what it took since.
uint64_t packetsBetween(uint32_t before, uint32_t after) {
  const uint32_t difference = after - before;
  return difference < (1U << 31) ? difference : after;
}

// (value × milli + 999) / 1000: a value scaled by a factor in thousandths, rounded up.
uint64_t scaleUp(uint64_t value, uint64_t milli) {
  const unsigned __int128 scaled = static_cast<unsigned __int128>(value) * milli;
  const unsigned __int128 out = (scaled + 999) / 1000;
  return out > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(out);
}

}  // namespace

bool Learner::bySlot(const SlotMark& a, const SlotMark& b) { return a.slot < b.slot; }

size_t Learner::KeyHash::operator()(const SourceKey& k) const {
  uint64_t h = 1469598103934665603ULL ^ (static_cast<uint64_t>(k.rule_id) << 16) ^
               (static_cast<uint64_t>(k.family) << 8) ^ k.prefix;
  for (uint8_t byte : k.addr) h = (h ^ byte) * 1099511628211ULL;
  return static_cast<size_t>(h);
}

Learner::Learner(const LearnOptions& options, std::vector<LearnRule> rules)
    : options_(options), rules_(std::move(rules)), rule_state_(rules_.size()) {
  for (size_t i = 0; i < rules_.size(); ++i) rule_index_[rules_[i].id] = i;
}

void Learner::addSample(uint64_t time_ns, const std::vector<RuleReading>& rules,
                        const std::vector<SlotReading>& slots) {
  if (!times_.empty() && time_ns < times_.back()) time_ns = times_.back();
  times_.push_back(time_ns);
  const uint64_t tick = times_.size() - 1;  // the interval this sample ends (0: baseline)
  if (tick > 0) {
    const uint64_t window = (times_[tick - 1] - times_[0]) / kWindowNs;
    if (window_ns_.size() <= window) window_ns_.resize(window + 1, 0);
    window_ns_[window] += times_[tick] - times_[tick - 1];
  }
  for (const RuleReading& reading : rules) {
    auto found = rule_index_.find(reading.id);
    if (found == rule_index_.end()) continue;
    RuleState& state = rule_state_[found->second];
    if (!state.seen) {
      state.first = state.last = reading;
      state.seen = true;
      continue;
    }
    // the rule's mean frame size in this interval prices its sources' packets in bits
    const uint64_t packets = reading.packets - state.last.packets;
    if (packets > 0) {
      state.bytes_per_packet = static_cast<double>(reading.bytes - state.last.bytes) / packets;
    }
    state.last = reading;
  }
  // Each owned slot against its reading of the last sample: the packets its source sent
  // between the two. Only a source that sent any is followed (and counted against
  // --max-sources), however many slots idle sources hold. Readings come by slot (the table's
  // order); any others are put in that order first.
  std::vector<SlotMark> marks;
  marks.reserve(slots.size());
  for (const SlotReading& reading : slots) {
    marks.push_back(SlotMark{reading.slot, reading.packets, reading.fingerprint, &reading});
  }
  if (!std::is_sorted(marks.begin(), marks.end(), bySlot)) {
    std::stable_sort(marks.begin(), marks.end(), bySlot);
  }
  size_t before = 0;
  for (const SlotMark& mark : marks) {
    while (before < previous_.size() && previous_[before].slot < mark.slot) ++before;
    if (tick == 0) continue;  // the baseline: what the slots took before the run is not seen
    const bool same_owner = before < previous_.size() && previous_[before].slot == mark.slot &&
                            previous_[before].fingerprint == mark.fingerprint;
    // A slot taken (or taken by another source) since the last sample counts from 0 at the
    // take: what an old owner sent since the last sample is lost with the slot (it was idle,
    // or the program would not have given the slot away).
    noteSlot(*mark.reading,
             same_owner ? packetsBetween(previous_[before].packets, mark.packets) : mark.packets,
             tick);
  }
  for (SlotMark& mark : marks) mark.reading = nullptr;
  previous_ = std::move(marks);
}

void Learner::noteSlot(const SlotReading& reading, uint64_t packets, uint64_t tick) {
  if (!rule_index_.count(reading.key.rule_id) || reading.fingerprint == 0 || packets == 0) return;
  auto source = sourceFor(reading.key, tick);
  if (!source) {
    ++beyond_cap_;
    return;
  }
  Source& followed = sources_[*source];
  followed.slot = reading.slot;
  charge(followed, packets, tick);
}

std::optional<size_t> Learner::sourceFor(const SourceKey& key, uint64_t tick) {
  if (auto found = by_key_.find(key); found != by_key_.end()) return found->second;
  if (sources_.size() >= options_.max_sources) return std::nullopt;
  Source source;
  source.key = key;
  source.rule = rule_index_.at(key.rule_id);
  ++rule_state_[source.rule].sources;
  // a replay series for the rest of the run, if the budget holds all of it
  const uint64_t planned = options_.sample_ns ? options_.duration_ns / options_.sample_ns : 0;
  const uint64_t remaining = planned >= tick ? planned - tick + 1 : 1;
  if (replay_used_ + remaining <= options_.replay_budget) {
    source.replayed = true;
    source.first_tick = tick;
    source.ticks.assign(remaining, 0);
    replay_used_ += remaining;
  }
  sources_.push_back(std::move(source));
  by_key_[key] = sources_.size() - 1;
  return sources_.size() - 1;
}

void Learner::charge(Source& source, uint64_t packets, uint64_t tick) {
  RuleState& rule = rule_state_[source.rule];
  // the window the interval starts in: intervals that divide a second fall wholly inside
  // one, and a sample taken a little late (as every sample is) stays in its window
  const auto window = static_cast<int64_t>((times_[tick - 1] - times_[0]) / kWindowNs);
  if (window != source.window) {
    closeWindow(source);
    source.window = window;
  }
  source.window_packets += packets;
  source.window_bytes += static_cast<double>(packets) * rule.bytes_per_packet;
  // one source may be read in two slots of one sample (it moved): the interval is summed
  if (source.replayed && tick >= source.first_tick) {
    const uint64_t index = tick - source.first_tick;
    if (index < source.ticks.size()) {
      source.ticks[index] += static_cast<uint32_t>(std::min<uint64_t>(packets, UINT32_MAX));
      source.window_burst = std::max<uint64_t>(source.window_burst, source.ticks[index]);
    } else {
      // the run took more samples than planned: this source leaves the replay
      source.replayed = false;
      source.window_burst = std::max(source.window_burst, packets);
    }
  } else {
    source.window_burst = std::max(source.window_burst, packets);
  }
  rule.tracked_packets += packets;
}

void Learner::closeWindow(Source& source) {
  if (source.window_packets > 0) {
    RuleState& rule = rule_state_[source.rule];
    // A window is 1 s, so its count is its rate, but samples that ran late make it hold the
    // intervals that start in it: more than a second (the late one), or less (the one after).
    // Its count is then a rate over that time, taken as at least half a second, so the few
    // packets of a sliver of a window are not blown up into a rate.
    const auto window = static_cast<size_t>(source.window);
    const uint64_t covered =
        window < window_ns_.size() ? std::max(window_ns_[window], kWindowNs / 2) : kWindowNs;
    const auto perSecond = [covered](long double count) {
      return static_cast<uint64_t>(std::ceil(count * kWindowNs / covered));
    };
    rule.pps.add(perSecond(source.window_packets));
    rule.bps.add(perSecond(source.window_bytes * 8));
    rule.burst.add(source.window_burst);
  }
  source.window_packets = 0;
  source.window_bytes = 0;
  source.window_burst = 0;
}

Spread Learner::spread(const RateHistogram& h) const {
  return Spread{h.percentile(50000), h.percentile(99000), h.percentile(99900),
                h.percentile(options_.percentile_milli), h.max()};
}

void Learner::propose(RuleLearned& out) {
  if (!out.rule.per_source) {
    out.note = "a global rule (key: global) has no per-source rates";
    return;
  }
  if (out.rule.current.pps == 0) {
    // A proposal is applied as it is (--apply): a pps limit here would be a new kind of limit
    // on the rule, not a better one of its own. And its own, bits/s, is not learned: the
    // program counts packets per source, so those rates are estimates no replay can check.
    out.note =
        "the rule limits bits/s only, and learning proposes pps limits (the program counts no "
        "bytes per source: the bits/s above are estimates); set its bps from them yourself";
    return;
  }
  if (out.source_windows == 0) {
    out.note = "no source of this rule sent a packet";
    return;
  }
  LimitSpec proposal = out.rule.current;
  proposal.pps = std::max<uint64_t>(1, scaleUp(out.pps.chosen, options_.margin_milli));
  if (out.rule.algorithm == Algorithm::kTokenBucket) {
    proposal.burst = std::max<uint64_t>(1, scaleUp(out.burst.chosen, options_.margin_milli));
  } else {
    // A window admits pps × window and takes no burst: the config refuses one. Nor does it
    // take a rate that admits no packet a window, so the least is one.
    proposal.burst = 0;
    proposal.burst_bytes = 0;
    const uint64_t window_ms = out.rule.window_ns / 1000000ULL;
    if (window_ms > 0) proposal.pps = std::max(proposal.pps, (1000 + window_ms - 1) / window_ms);
  }
  // A proposal the config would refuse is none: a sliding window counts at most 2^20 - 1
  // packets, which a fast source times the margin can pass.
  RuleSpec spec;
  spec.name = out.rule.name;
  spec.algorithm = out.rule.algorithm;
  if (out.rule.algorithm != Algorithm::kTokenBucket) spec.window_ns = out.rule.window_ns;
  spec.limit = proposal;
  if (auto compiled = compileRule(spec); !compiled) {
    out.note = "the percentile x margin comes to pps " + std::to_string(proposal.pps) +
               ", which the rule cannot take: " + compiled.error().message;
    return;
  }
  out.proposal = proposal;
  // the pps limit alone is replayed: per-source byte counts are not kept by the program
  LimitSpec replayed{proposal.pps, proposal.burst, 0, 0};
  for (const Source& source : sources_) {
    if (rules_[source.rule].id != out.rule.id || !source.replayed) continue;
    ++out.replayed_sources;
    for (uint32_t n : source.ticks) out.replayed_packets += n;
    if (!out.not_replayed.empty()) continue;
    auto dropped = replayDrops(source.ticks, times_, source.first_tick, replayed,
                               out.rule.algorithm, out.rule.window_ns, options_.hz);
    if (!dropped) {
      out.not_replayed = dropped.error().message;
      out.replay_dropped = 0;
      continue;
    }
    out.replay_dropped += *dropped;
  }
  if (out.not_replayed.empty() && out.replayed_packets == 0) {
    // sources are kept for the replay in the order they come: a rule whose sources came
    // after the budget was spent has none
    out.not_replayed = "no source of the rule was kept for the replay (its budget of " +
                       std::to_string(options_.replay_budget) +
                       " sample counts went to sources seen before)";
  }
}

LearnReport Learner::finish() {
  for (Source& source : sources_) closeWindow(source);
  LearnReport report;
  report.duration_ns = options_.duration_ns;
  report.sample_ns = options_.sample_ns;
  report.samples = times_.size();
  report.percentile_milli = options_.percentile_milli;
  report.margin_milli = options_.margin_milli;
  report.max_sources = options_.max_sources;
  report.sources_beyond_cap = beyond_cap_;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const RuleState& state = rule_state_[i];
    RuleLearned out;
    out.rule = rules_[i];
    out.sources = state.sources;
    out.source_windows = state.pps.count();
    out.pps = spread(state.pps);
    out.bps = spread(state.bps);
    out.burst = spread(state.burst);
    out.tracked_packets = state.tracked_packets;
    if (state.seen) {
      out.rule_packets = state.last.packets - state.first.packets;
      out.untracked_packets = state.last.untracked_packets - state.first.untracked_packets;
    }
    propose(out);
    report.rules.push_back(std::move(out));
  }
  return report;
}

}  // namespace floodgate::learn
