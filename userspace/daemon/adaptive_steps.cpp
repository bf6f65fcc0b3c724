// SPDX-License-Identifier: MIT
// The daemon's side of `adaptive:`: config → governor, counters → load, decision → rules.
#include "daemon/adaptive_steps.h"

#include "controller/rule_compiler.h"
#include "floodgate/common/units.h"

namespace floodgate::daemon {
namespace {

std::vector<AdaptiveRule> governedRules(const config::AdaptiveConfig& adaptive,
                                        const std::vector<RuleSpec>& rules,
                                        std::vector<RuleSpec>* specs = nullptr) {
  std::vector<AdaptiveRule> out;
  for (const config::AdaptiveFloor& floor : adaptive.floors) {
    for (const RuleSpec& rule : rules) {
      if (rule.name != floor.rule) continue;
      out.push_back({rule.name, rule.limit, floor.floor, rule.action});
      if (specs) specs->push_back(rule);
    }
  }
  return out;
}

// " pps=50->25 burst=5->2": the limits that moved.
std::string moved(const LimitSpec& from, const LimitSpec& to) {
  std::string out;
  auto part = [&](const char* name, uint64_t a, uint64_t b, std::string (*format)(uint64_t)) {
    if (a != b) out += std::string(" ") + name + "=" + format(a) + "->" + format(b);
  };
  auto plain = [](uint64_t v) { return std::to_string(v); };
  part("pps", from.pps, to.pps, plain);
  part("burst", from.burst, to.burst, plain);
  part("bps", from.bits_per_s, to.bits_per_s, formatBitRate);
  part("burst_bytes", from.burst_bytes, to.burst_bytes, plain);
  return out;
}

// The end of the line of a change made from another level than the decision's: the rule ran
// an earlier level's limits, as a write before could not be made.
std::string catchUp(const AdaptiveChange& change) {
  return " level=" + std::to_string(change.to_level) + " reason=\"it ran level " +
         std::to_string(change.from_level) + "'s limits: a change before could not be written\"";
}

}  // namespace

const char* adaptiveEventName(AdaptiveAction action) {
  switch (action) {
    case AdaptiveAction::kTighten:
      return "adaptive_tighten";
    case AdaptiveAction::kRelax:
      return "adaptive_relax";
    case AdaptiveAction::kFloorsReached:
      return "adaptive_floors";
  }
  return "adaptive";
}

std::optional<AdaptiveGovernor> reconcileAdaptive(
    std::optional<AdaptiveGovernor> held, const std::optional<config::AdaptiveConfig>& adaptive,
    AttachOptions& options, std::vector<LogLine>& lines) {
  const bool had_moved = held && held->level() > 0;
  if (adaptive) {
    std::vector<RuleSpec> specs;  // of `rules`, index for index
    std::vector<AdaptiveRule> rules = governedRules(*adaptive, options.rules, &specs);
    if (held && held->sameAs(*adaptive, rules, options.monitor)) {
      for (size_t i = 0; i < held->rules().size(); ++i) {
        for (RuleSpec& spec : options.rules) {
          if (spec.name == held->rules()[i].name) spec.limit = held->limitsOf(i);
        }
      }
      held->rebaseline();
      held->governAll();
      return held;
    }
    if (had_moved) {
      lines.push_back({false, "adaptive: " + options.interface +
                                  " starts over at the configured limits (its adaptive section, "
                                  "the limits or on_exceed of the rules it names, or monitor "
                                  "mode changed)"});
    }
    // each level compiled as the rule's own limits would be, before it is ever offered
    return AdaptiveGovernor(*adaptive, std::move(rules), options.monitor,
                            [&specs](size_t index, const LimitSpec& limits) {
                              RuleSpec spec = specs[index];
                              spec.limit = limits;
                              return compileRule(spec).ok();
                            });
  }
  if (had_moved) {
    lines.push_back({false, "adaptive: " + options.interface +
                                " has no adaptive section any more: its rules are back at their "
                                "configured limits"});
  }
  return std::nullopt;
}

PassedCounters passedOf(const std::vector<CounterRow>& counters, bool monitor_mode) {
  PassedCounters out;
  for (const CounterRow& row : counters) {
    const bool passed =
        row.verdict == FG_VERDICT_PASS || (row.verdict == FG_VERDICT_MONITOR && !monitor_mode);
    if (!passed) continue;
    out.packets += row.packets;
    out.bytes += row.bytes;
  }
  return out;
}

AppliedChanges applyDecision(XdpLimiter& limiter, AdaptiveGovernor& governor,
                             const AdaptiveDecision& decision, std::vector<LogLine>& lines) {
  AppliedChanges made;
  const std::string tail = " level=" + std::to_string(decision.level_to) + "/" +
                           std::to_string(governor.maxLevel()) + " reason=\"" +
                           governor.describeLoad(decision);
  if (decision.action == AdaptiveAction::kFloorsReached) {
    lines.push_back({true, std::string("event=") + adaptiveEventName(decision.action) +
                               " interface=" + limiter.interface() + tail +
                               "; every rule it names is at its floor\""});
    return made;
  }
  auto released = [&](const std::string& rule, const std::string& why) {
    governor.release(rule);
    lines.push_back({true, "event=adaptive_released interface=" + limiter.interface() +
                               " rule=" + rule + " reason=\"" + why +
                               "; adaptive leaves it as it is until the next reload\""});
  };
  for (const AdaptiveChange& change : decision.changes) {
    // each change its own way: a catch-up of a failed one may go either
    const bool tighten = change.to_level > change.from_level;
    const std::string head =
        std::string("event=") +
        adaptiveEventName(tighten ? AdaptiveAction::kTighten : AdaptiveAction::kRelax) +
        " interface=" + limiter.interface();
    // Only the rates the rule has: an unset one keeps its value (none, for a rate it lacks).
    LimitChange set;
    if (change.to.pps) set.pps = change.to.pps, set.burst = change.to.burst;
    if (change.to.bits_per_s) {
      set.bits_per_s = change.to.bits_per_s;
      set.burst_bytes = change.to.burst_bytes;
    }
    // Only over the limits this governor put there: a rule set by hand since is the
    // operator's, and an adaptive step must not undo it in the middle of an attack.
    auto applied = limiter.setLimitsIfRunning(change.rule, change.from, set);
    if (!applied && applied.error().message.rfind(kNoRuleNamed, 0) == 0) {
      // a reload with another config took the rule away: no retry would find it
      released(change.rule, "its change cannot be made: " + applied.error().message);
      continue;
    }
    if (!applied) {
      // the rule runs what it ran: the next reading makes the change again from there
      governor.stillAt(change.rule, change.from_level);
      lines.push_back({true, head + " rule=" + change.rule + " failed: " + applied.error().message +
                                 " (tried again at the next reading)"});
      continue;
    }
    if (!*applied) {
      released(change.rule, "its limits were set by hand (floodgate set)");
      continue;
    }
    ++(tighten ? made.tightened : made.relaxed);
    lines.push_back(
        {tighten, head + " rule=" + change.rule + moved(change.from, change.to) +
                      (change.from_level == decision.level_from ? tail + "\"" : catchUp(change))});
  }
  return made;
}

}  // namespace floodgate::daemon
