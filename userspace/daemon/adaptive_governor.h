// SPDX-License-Identifier: MIT
// AdaptiveGovernor: decides, from the load an interface's program passes and the time, when
// the rules an `adaptive:` section names are tightened one step toward their floors and when
// they are relaxed one step back toward their configured limits. Pure: no clock, no kernel;
// the daemon reads the counters, passes the time and applies what it decides. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/adaptive_config.h"
#include "controller/rule_spec.h"

namespace floodgate::daemon {

// The program's pass counters as read at one time (packets and frame bytes, since the
// program was loaded). Verdict pass only: a monitor verdict is a packet enforcing would
// drop, so a dry run measures the load enforcing would let through and moves as it would.
struct PassedCounters {
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

// One named rule: its limits as configured, its floor, and what it does over its limits.
struct AdaptiveRule {
  std::string name;
  LimitSpec configured;
  LimitSpec floor;  // a rate of 0: that rate is not squeezed
  ExceedAction on_exceed = ExceedAction::kDrop;
};

struct AdaptiveChange {
  std::string rule;
  LimitSpec from, to;
  uint32_t from_level = 0;  // the level whose limits `from` are
  uint32_t to_level = 0;    // and `to`: a tighten when deeper than from_level
};

enum class AdaptiveAction { kTighten, kRelax, kFloorsReached };

// What the governor decided on one reading.
struct AdaptiveDecision {
  AdaptiveAction action = AdaptiveAction::kTighten;
  uint32_t level_from = 0, level_to = 0;
  double passed_pps = 0, passed_bps = 0;  // over the reading's interval
  std::vector<AdaptiveChange> changes;    // empty with kFloorsReached
};

class AdaptiveGovernor {
 public:
  // Whether rule `index` can run `limits` (they compile as its own would).
  using Runnable = std::function<bool(size_t index, const LimitSpec& limits)>;

  // `rules` in the order of `config.floors`; each rule's floor at most its configured limits.
  // `monitor`: the interface only counts what it would drop (defaults.monitor). A level a
  // rule could not run (`runnable`: a burst that a lower rate would take over an hour to
  // refill) stops that rule's way down where it is, so no step is one it cannot take.
  AdaptiveGovernor(const config::AdaptiveConfig& config, std::vector<AdaptiveRule> rules,
                   bool monitor = false, const Runnable& runnable = {});

  // One reading of the counters at `now_ns` (any monotonic clock). A decision when limits
  // change (or, once per attack, when every floor is reached and the load is still over).
  // The first reading, one after the time or a counter went backwards, and one less than
  // half an interval after the last only set the baseline. A relax waits for relax_after of
  // calm readings; one short reading that is not calm (a pulse) does not start that over.
  std::optional<AdaptiveDecision> observe(uint64_t now_ns, PassedCounters counters);

  // Level 0 is the configured limits; each level multiplies them by `step` once more
  // (rounded up, by at least one unit, never below a floor), down to maxLevel(): the floors.
  uint32_t level() const { return level_; }
  uint32_t maxLevel() const { return max_level_; }
  // The limits of rule `index` at the current level.
  LimitSpec limitsOf(size_t index) const { return limitsAt(index, level_); }
  const std::vector<AdaptiveRule>& rules() const { return rules_; }
  const config::AdaptiveConfig& config() const { return config_; }

  // Rule `name` was changed by another writer (`floodgate set`): its limits are the
  // operator's now, and no later decision changes them. Levels move on for the other rules.
  void release(const std::string& name);
  bool released(size_t index) const { return released_[index]; }
  // A reload wrote every rule's limits again from the config, at the current level: each
  // is governed again.
  void governAll() {
    released_.assign(rules_.size(), false);
    running_.assign(rules_.size(), level_);
  }
  // A change of rule `name` could not be written (the writer lock held, a map write
  // refused): it still runs the limits of `level`. The next reading makes the change again,
  // from those limits, whatever else it decides.
  void stillAt(const std::string& name, uint32_t level);

  // Whether a governor for `config`, `rules` and `monitor` would decide exactly as this one
  // does, so a reload may keep this one (and its level) in its place. A level reached in a
  // dry run (monitor mode, or a rule's on_exceed: monitor) is not the same as one enforced:
  // the reload that starts or ends enforcing starts over at the configured limits.
  bool sameAs(const config::AdaptiveConfig& config, const std::vector<AdaptiveRule>& rules,
              bool monitor) const;
  // Whether the interface it governs only counts what it would drop (defaults.monitor).
  bool monitor() const { return monitor_; }
  // After a reload or a restart of the program: the counters start over, so the next reading
  // only sets a baseline. The level and the timers are kept.
  void rebaseline() { have_baseline_ = false; }

  // "passed 61234 pps > capacity 50000 pps": the measure that decided, for the log.
  std::string describeLoad(const AdaptiveDecision& decision) const;

 private:
  LimitSpec limitsAt(size_t index, uint32_t level) const;
  AdaptiveDecision move(uint32_t to, double pps, double bps);
  // A rule governed whose running limits are not its level's (a change that failed).
  bool behind() const;
  // The changes behind() finds, made again; none when there are none.
  std::optional<AdaptiveDecision> catchUp(double pps, double bps);
  bool over(double pps, double bps) const;
  bool calm(double pps, double bps) const;
  // A reading over `elapsed_ns` that was not calm: the calm stretch ends, unless this is its
  // one pulse (short, and a small share of relax_after).
  void notCalm(uint64_t elapsed_ns);

  config::AdaptiveConfig config_;
  std::vector<AdaptiveRule> rules_;
  bool monitor_ = false;
  std::vector<std::vector<LimitSpec>> levels_;  // [level][rule]
  std::vector<bool> released_;                  // [rule]: set by hand, left alone
  std::vector<uint32_t> running_;               // [rule]: the level whose limits it runs
  uint32_t level_ = 0;
  uint32_t max_level_ = 0;

  bool have_baseline_ = false;
  uint64_t baseline_ns_ = 0;
  PassedCounters baseline_;
  bool calm_ = false;    // the readings since calm_since_ns_ were calm, but for one pulse
  bool pulsed_ = false;  // and that pulse was forgiven already
  uint64_t calm_since_ns_ = 0;
  bool floors_reported_ = false;  // kFloorsReached said for this stretch over capacity
};

}  // namespace floodgate::daemon
