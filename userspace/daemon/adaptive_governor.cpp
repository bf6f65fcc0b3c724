// SPDX-License-Identifier: MIT
// AdaptiveGovernor: readings → rates → one step at a time, with a dead band and hold times.
#include "daemon/adaptive_governor.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "floodgate/common/units.h"

namespace floodgate::daemon {
namespace {

constexpr double kNsPerS = 1e9;
// Levels looked at for the deepest one: a step of 0.95 takes a 64-bit limit to 1 in ~870.
constexpr uint32_t kMaxLevels = 4096;
// A reading more than this many intervals after the last is late (the daemon's loop fell
// behind, or it was stopped): its rate is an average over the gap.
constexpr uint64_t kLateIntervals = 2;
// A pulse (a reading that is not calm inside a calm stretch) is forgiven only if it covers at
// most 1 / kPulseShare of relax_after: one second of flood in 30 does not start the calm over.
constexpr uint64_t kPulseShare = 4;

// One step down from `value`: × step rounded up, never below `floor`. Rounded up so that one
// step back up (to `value`) multiplies a limit by at most 1 / step, which the relax rule
// counts on. Where rounding up would keep a small value where it is (10 × 0.95), the step is
// one unit, so the floors are reached whatever the step; such a level's way back up is a
// larger factor, which calm() accounts for.
uint64_t stepDown(uint64_t value, uint64_t floor, double step) {
  if (value <= floor) return value;
  const long double scaled = std::ceil(static_cast<long double>(value) * step);
  const uint64_t next =
      scaled >= static_cast<long double>(value) ? value - 1 : static_cast<uint64_t>(scaled);
  return std::max(next, floor);
}

// The most one step up from `lower` to `upper` multiplies a rate by (1 for none): what the
// load a rule passes can grow by. Bursts are left out: they move what passes in an instant,
// not in an interval's reading.
double rateGrowth(const LimitSpec& upper, const LimitSpec& lower) {
  double most = 1;
  auto one = [&](uint64_t up, uint64_t down) {
    if (down) most = std::max(most, static_cast<double>(up) / static_cast<double>(down));
  };
  one(upper.pps, lower.pps);
  one(upper.bits_per_s, lower.bits_per_s);
  return most;
}

std::string rate(double value) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(0);
  out << value;
  return out.str();
}

std::string factor(double value) {
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

}  // namespace

AdaptiveGovernor::AdaptiveGovernor(const config::AdaptiveConfig& config,
                                   std::vector<AdaptiveRule> rules, bool monitor,
                                   const Runnable& runnable)
    : config_(config),
      rules_(std::move(rules)),
      monitor_(monitor),
      released_(rules_.size(), false),
      running_(rules_.size(), 0) {
  // Every level down to the first that no step changes: each rule on its floor, or where its
  // next level would be limits it cannot run.
  std::vector<LimitSpec> level;
  for (const AdaptiveRule& rule : rules_) level.push_back(rule.configured);
  levels_.push_back(level);
  while (levels_.size() < kMaxLevels) {
    bool moved = false;
    for (size_t i = 0; i < rules_.size(); ++i) {
      const LimitSpec& floor = rules_[i].floor;
      LimitSpec& limit = level[i];
      const LimitSpec before = limit;
      if (floor.pps) {
        limit.pps = stepDown(limit.pps, floor.pps, config_.step);
        limit.burst = stepDown(limit.burst, floor.burst, config_.step);
      }
      if (floor.bits_per_s) {
        limit.bits_per_s = stepDown(limit.bits_per_s, floor.bits_per_s, config_.step);
        limit.burst_bytes = stepDown(limit.burst_bytes, floor.burst_bytes, config_.step);
      }
      if (runnable && !(before == limit) && !runnable(i, limit)) limit = before;
      moved = moved || !(before == limit);
    }
    if (!moved) break;
    levels_.push_back(level);
  }
  max_level_ = static_cast<uint32_t>(levels_.size() - 1);
}

LimitSpec AdaptiveGovernor::limitsAt(size_t index, uint32_t level) const {
  return levels_[std::min<size_t>(level, max_level_)][index];
}

bool AdaptiveGovernor::over(double pps, double bps) const {
  return (config_.capacity_pps && pps > static_cast<double>(config_.capacity_pps)) ||
         (config_.capacity_bps && bps > static_cast<double>(config_.capacity_bps));
}

bool AdaptiveGovernor::calm(double pps, double bps) const {
  // Below capacity × relax_below, and under capacity still once the governed rules' rates
  // grow by the next relax step's factor: with relax_below at most step, the second only
  // tells where a step of one unit (stepDown) grows a rate by more than 1 / step.
  double grows = 1;
  for (size_t i = 0; level_ > 0 && i < rules_.size(); ++i) {
    if (!released_[i])
      grows = std::max(grows, rateGrowth(limitsAt(i, level_ - 1), limitsAt(i, level_)));
  }
  const double low = config_.relax_below;
  auto under = [&](double load, uint64_t capacity) {
    const auto cap = static_cast<double>(capacity);
    return !capacity || (load < cap * low && load * grows < cap);
  };
  return under(pps, config_.capacity_pps) && under(bps, config_.capacity_bps);
}

void AdaptiveGovernor::notCalm(uint64_t elapsed_ns) {
  // One short pulse a stretch: a lone burst now and then must not hold the limits down while
  // the load is low the rest of the time. A second one, or one that lasts, is a load.
  const bool pulse = calm_ && !pulsed_ && elapsed_ns <= kLateIntervals * config_.interval_ns &&
                     elapsed_ns * kPulseShare <= config_.relax_after_ns;
  if (pulse) {
    pulsed_ = true;
  } else {
    calm_ = false;
  }
}

void AdaptiveGovernor::release(const std::string& name) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) released_[i] = true;
  }
}

void AdaptiveGovernor::stillAt(const std::string& name, uint32_t level) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) running_[i] = std::min(level, max_level_);
  }
}

AdaptiveDecision AdaptiveGovernor::move(uint32_t to, double pps, double bps) {
  AdaptiveDecision decision;
  decision.action = to > level_ ? AdaptiveAction::kTighten : AdaptiveAction::kRelax;
  decision.level_from = level_;
  decision.level_to = to;
  decision.passed_pps = pps;
  decision.passed_bps = bps;
  for (size_t i = 0; i < rules_.size(); ++i) {
    // from what the rule runs, which a failed change left at an earlier level
    const LimitSpec from = limitsAt(i, running_[i]), next = limitsAt(i, to);
    if (released_[i]) continue;
    if (!(from == next)) {
      decision.changes.push_back({rules_[i].name, from, next, running_[i], to});
      // a catch-up is named by its first change (each change's own way: from_level to `to`)
      if (to == level_ && decision.changes.size() == 1) {
        decision.action = running_[i] < to ? AdaptiveAction::kTighten : AdaptiveAction::kRelax;
      }
    }
    running_[i] = to;  // until stillAt() says the write failed
  }
  level_ = to;
  return decision;
}

bool AdaptiveGovernor::behind() const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (!released_[i] && !(limitsAt(i, running_[i]) == limitsAt(i, level_))) return true;
  }
  return false;
}

std::optional<AdaptiveDecision> AdaptiveGovernor::catchUp(double pps, double bps) {
  if (!behind()) return std::nullopt;
  return move(level_, pps, bps);
}

std::optional<AdaptiveDecision> AdaptiveGovernor::observe(uint64_t now_ns,
                                                          PassedCounters counters) {
  const bool backwards = now_ns < baseline_ns_ || counters.packets < baseline_.packets ||
                         counters.bytes < baseline_.bytes;
  if (!have_baseline_ || backwards) {
    // No rate can be had from this reading: a first one, a program whose counters started
    // over (a reload that re-attached it), or a clock that stepped back. The hold times
    // start again from here rather than trust a time that moved the wrong way.
    if (have_baseline_ && backwards) calm_ = false;
    have_baseline_ = true;
    baseline_ns_ = now_ns;
    baseline_ = counters;
    return std::nullopt;
  }
  const uint64_t elapsed_ns = now_ns - baseline_ns_;
  if (elapsed_ns < config_.interval_ns / 2) return std::nullopt;  // read again later
  const double seconds = static_cast<double>(elapsed_ns) / kNsPerS;
  const double pps = static_cast<double>(counters.packets - baseline_.packets) / seconds;
  const double bps = static_cast<double>(counters.bytes - baseline_.bytes) * 8 / seconds;
  // The next reading begins here: every step is decided on a whole reading of the limits
  // the step before it set.
  baseline_ns_ = now_ns;
  baseline_ = counters;

  if (over(pps, bps)) {
    notCalm(elapsed_ns);
    if (level_ < max_level_) {
      return move(level_ + 1, pps, bps);
    }
    if (behind()) return move(level_, pps, bps);
    if (floors_reported_) return std::nullopt;
    floors_reported_ = true;
    AdaptiveDecision decision;
    decision.action = AdaptiveAction::kFloorsReached;
    decision.level_from = decision.level_to = level_;
    decision.passed_pps = pps;
    decision.passed_bps = bps;
    return decision;
  }
  if (!calm(pps, bps)) {
    // The dead band between capacity × relax_below and capacity: nothing moves, and the
    // calm needed for a relax starts over (unless this is its one pulse).
    notCalm(elapsed_ns);
    return catchUp(pps, bps);
  }
  floors_reported_ = false;
  if (!calm_) {
    calm_ = true;
    pulsed_ = false;
    calm_since_ns_ = now_ns;
  } else if (elapsed_ns > kLateIntervals * config_.interval_ns) {
    // A late reading's low average may hide a flood inside the gap: it adds one interval to
    // the calm, never the whole gap.
    calm_since_ns_ += elapsed_ns - config_.interval_ns;
  }
  // This is relax_after since the last change too, as a tighten ends the calm and a relax
  // starts it over: all but a pulse's tighten, which a relax here gives back.
  const bool held = now_ns - calm_since_ns_ >= config_.relax_after_ns;
  if (level_ == 0 || !held) return catchUp(pps, bps);
  calm_since_ns_ = now_ns;  // the next relax needs a whole calm stretch under these limits
  pulsed_ = false;
  return move(level_ - 1, pps, bps);
}

bool AdaptiveGovernor::sameAs(const config::AdaptiveConfig& config,
                              const std::vector<AdaptiveRule>& rules, bool monitor) const {
  if (!(config == config_) || monitor != monitor_ || rules.size() != rules_.size()) return false;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name != rules_[i].name || !(rules[i].configured == rules_[i].configured) ||
        !(rules[i].floor == rules_[i].floor) || rules[i].on_exceed != rules_[i].on_exceed) {
      return false;
    }
  }
  return true;
}

std::string AdaptiveGovernor::describeLoad(const AdaptiveDecision& decision) const {
  if (decision.action != AdaptiveAction::kFloorsReached &&
      decision.level_from == decision.level_to) {
    return "the level's limits could not be written before: written again";
  }
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  const bool relax = decision.action == AdaptiveAction::kRelax;
  const std::string low = " (capacity ";
  if (config_.capacity_pps) {
    const std::string passed = "passed " + rate(decision.passed_pps) + " pps";
    if (relax) {
      add(passed + " < " + rate(static_cast<double>(config_.capacity_pps) * config_.relax_below) +
          " pps" + low + std::to_string(config_.capacity_pps) + " pps × " +
          factor(config_.relax_below) + ")");
    } else if (decision.passed_pps > static_cast<double>(config_.capacity_pps)) {
      add(passed + " > capacity " + std::to_string(config_.capacity_pps) + " pps");
    }
  }
  if (config_.capacity_bps) {
    const std::string passed =
        "passed " + formatBitRate(static_cast<uint64_t>(decision.passed_bps));
    if (relax) {
      add(passed + " < " +
          formatBitRate(static_cast<uint64_t>(static_cast<double>(config_.capacity_bps) *
                                              config_.relax_below)) +
          low + formatBitRate(config_.capacity_bps) + " × " + factor(config_.relax_below) + ")");
    } else if (decision.passed_bps > static_cast<double>(config_.capacity_bps)) {
      add(passed + " > capacity " + formatBitRate(config_.capacity_bps));
    }
  }
  if (relax) out += " for " + formatDuration(config_.relax_after_ns);
  return out;
}

}  // namespace floodgate::daemon
