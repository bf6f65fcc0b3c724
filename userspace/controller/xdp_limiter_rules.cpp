// SPDX-License-Identifier: MIT
// Rule sets of a running limiter: double-buffered publication, reload with stable ids, and
// live threshold changes.
#include <sys/random.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "controller/rule_compiler.h"
#include "controller/source_sets.h"
#include "controller/syn_cookie_host.h"
#include "controller/xdp_limiter.h"
#include "fg_gcra.h"
#include "kernel/pins.h"
#include "kernel/system.h"
#include "kernel/write_generation.h"

namespace floodgate {
namespace {

uint32_t freshEpoch() {
  uint32_t epoch = 0;
  while (epoch == 0) {
    if (getrandom(&epoch, sizeof(epoch), 0) != sizeof(epoch)) epoch = 1;
  }
  return epoch;
}

// Whether the new rule keys its state the way the old one did; if not, the old state
// means nothing for it and it starts afresh.
bool sameKeying(const fg_rule& a, const fg_rule& b) {
  return a.key_kind == b.key_kind && a.ipv4_prefix == b.ipv4_prefix &&
         a.ipv6_prefix == b.ipv6_prefix && a.algorithm == b.algorithm && a.window_ms == b.window_ms;
}

}  // namespace

Status XdpLimiter::publish(const std::vector<fg_rule>& rules,
                           const std::vector<std::pair<Cidr, uint64_t>>& sources) {
  std::atomic_ref<uint64_t> active_word(*reinterpret_cast<uint64_t*>(active_value_.get()));
  uint64_t word = active_word.load(std::memory_order_acquire);
  fg_active current;
  std::memcpy(&current, &word, sizeof(current));
  uint32_t next_set = (current.set & 1) ^ 1;

  // The inactive set was last read by packets in flight at the previous flip, which are done
  // with it microseconds later (an XDP run is not preempted, and a drop reads its earlier
  // rules there again to hand their charges back). A publish right after another from this
  // limiter waits a margin out before rewriting it; another process takes milliseconds to
  // start and open the pins, far longer than a packet's run.
  constexpr auto kSetQuiet = std::chrono::milliseconds(10);
  if (auto since = std::chrono::steady_clock::now() - last_flip_; since < kSetQuiet) {
    std::this_thread::sleep_for(kSetQuiet - since);
  }
  LpmPair<uint64_t>& next_sources = maps_.sources[next_set];
  if (Status s = next_sources.clear(); !s) return s;
  for (const auto& [cidr, bits] : sources) {
    if (Status s = next_sources.update(cidr, bits); !s) return s;
  }
  bool has_sources = false;
  for (uint32_t i = 0; i < rules.size(); ++i) {
    if (Status s = maps_.rules.update(next_set * FG_MAX_RULES + i, rules[i]); !s) return s;
    has_sources = has_sources || rules[i].has_sources;
  }
  if (Status s = maps_.rule_index.update(next_set, indexRules(rules)); !s) return s;
  // the flip: one aligned 8-byte store, so the program sees the old set or the new one
  fg_active next{next_set, static_cast<uint16_t>(rules.size()), static_cast<uint16_t>(has_sources)};
  std::memcpy(&word, &next, sizeof(word));
  active_word.store(word, std::memory_order_release);
  last_flip_ = std::chrono::steady_clock::now();
  return okStatus();
}

Result<std::vector<std::pair<Cidr, uint64_t>>> XdpLimiter::activeSources() const {
  const LpmPair<uint64_t>& active_sources = maps_.sources[active_value_.get()->set & 1];
  auto cidrs = active_sources.keys();
  if (!cidrs) return cidrs.error();
  std::vector<std::pair<Cidr, uint64_t>> out;
  for (const Cidr& cidr : *cidrs) out.emplace_back(cidr, active_sources.find(cidr).value_or(0));
  return out;
}

Status XdpLimiter::resetRuleState(uint32_t rule_id) {
  return maps_.rule_state.update(rule_id, fg_rule_state{});
}

Status XdpLimiter::reload(const AttachOptions& options) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  next_change_.reset();
  // Opened before a detach (and another attach) by hand, this object's maps are no longer
  // the pinned ones: a write would reach maps no program runs with, and be counted on the
  // count found at the path, another limiter's. A detach of the limiter it does hold waits
  // for the writer lock held here from now on, so the two cannot cross.
  if (!holdsPinned()) {
    return Error::failure("floodgate was detached from '" + interface_ +
                          "' (or detached and attached again) since this command opened its "
                          "limiter: nothing was written; run it again");
  }
  // Everything is checked before anything is written: a bad config changes nothing.
  if (Status s = validate(options); !s) return s;
  std::optional<PreparedNextProgram> next;
  std::optional<ProgArray> next_array;
  if (options.next) {
    auto prepared = prepareNextProgram(*options.next);
    if (!prepared) return prepared.error();
    next = std::move(*prepared);
    auto array = openNextProgramPin(interface_);
    if (!array) return array.error();
    next_array = std::move(*array);
  }
  // Counted on the way out, under the lock, once the checks that write nothing passed,
  // whether all of it was written or it failed part way: a daemon holding the limiter tells
  // this write from its own by the count. A count that cannot be written fails nothing.
  struct CountOnExit {
    XdpLimiter& limiter;
    bool armed = false;
    ~CountOnExit() {
      if (!armed) return;
      if (auto generation = bumpWriteGeneration(limiter.interface_); generation) {
        limiter.written_generation_ = *generation;
      }
    }
  } count{*this};
  if (Status s = reloadRules(options, count.armed); !s) return s;
  if (next) {
    auto change = placeNextProgram(*next_array, std::move(*next), true);
    if (!change) return change.error();
    next_change_ = std::move(*change);
  }
  return okStatus();
}

Status XdpLimiter::checkReload(const AttachOptions& options) const {
  if (Status s = validate(options); !s) return s;
  if (options.next) {
    if (auto prepared = prepareNextProgram(*options.next); !prepared) return prepared.error();
    if (auto array = openNextProgramPin(interface_); !array) return array.error();
  }
  if (options.keep_rules) return checkReloadFits(options, nullptr);
  // with the running clock step, as reloadRules compiles them
  for (const RuleSpec& spec : options.rules) {
    if (auto rule = compileRule(spec, tick_units_); !rule) return rule.error();
  }
  const std::vector<std::pair<Cidr, uint64_t>> sources = compileSourceSets(options.rules);
  return checkReloadFits(options, &sources);
}

namespace {

// The distinct prefixes of `cidrs` by family ([0] IPv4, [1] IPv6): the entries they take.
std::array<size_t, 2> distinctByFamily(const std::vector<Cidr>& cidrs) {
  std::set<std::string> seen[2];
  for (const Cidr& cidr : cidrs) seen[static_cast<int>(cidr.family)].insert(cidr.toString());
  return {seen[0].size(), seen[1].size()};
}

const char* familyName(int family) { return family == 0 ? "IPv4" : "IPv6"; }

}  // namespace

Status XdpLimiter::checkReloadFits(const AttachOptions& options,
                                   const std::vector<std::pair<Cidr, uint64_t>>* sources) const {
  if (sources) {
    const std::array<size_t, 2> count = sourceSetEntries(*sources);
    for (int family = 0; family < 2; ++family) {
      if (count[family] > FG_LIST_MAX_ENTRIES) {
        return Error::usage("the rules' match.src sets hold " + std::to_string(count[family]) +
                            " " + familyName(family) + " prefixes, more than the " +
                            std::to_string(FG_LIST_MAX_ENTRIES) +
                            " a rule set holds: merge them into shorter prefixes");
      }
    }
  }
  // the list size is the running one (a reload keeps it: fitToRunning)
  auto max_entries = listMaxEntries();
  if (!max_entries) return max_entries.error();
  for (auto [kind, wanted] :
       {std::pair{ListKind::kAllow, &options.allow}, std::pair{ListKind::kDeny, &options.deny}}) {
    if (!*wanted) continue;
    const std::array<size_t, 2> count = distinctByFamily(**wanted);
    for (int family = 0; family < 2; ++family) {
      if (count[family] > *max_entries) {
        return Error::usage(
            std::string("the ") + listKindName(kind) + " list holds " +
            std::to_string(count[family]) + " " + familyName(family) + " prefixes, more than the " +
            std::to_string(*max_entries) + " a list of the running limiter on '" + interface_ +
            "' holds: shorten it, or 'floodgate detach " + interface_ +
            "' and attach with a larger defaults.list_size (bucket state starts over)");
      }
    }
  }
  return okStatus();
}

Status XdpLimiter::reloadRules(const AttachOptions& options, bool& writing) {
  if (options.keep_rules) {
    if (Status s = checkReloadFits(options, nullptr); !s) return s;
    writing = true;
    return applyPoliciesAndLists(options);
  }
  auto current = activeRules();
  if (!current) return current.error();
  std::map<std::string, fg_rule> by_name;
  std::set<uint32_t> used_ids;
  for (const fg_rule& rule : *current) {
    by_name[rule.name] = rule;
  }
  for (const RuleSpec& spec : options.rules) {
    if (auto it = by_name.find(spec.name); it != by_name.end()) used_ids.insert(it->second.id);
  }

  std::vector<RuleSpec> specs = options.rules;
  std::vector<fg_rule> compiled;
  std::vector<uint32_t> fresh_ids, rekeyed_ids;
  std::set<uint32_t> current_ids;
  for (const fg_rule& rule : *current) current_ids.insert(rule.id);
  // a new rule takes an id no current rule has, so the slots of a rule that just went away
  // are not reused while they still hold state; any free id only when none is left
  auto takeId = [&]() -> uint32_t {
    for (bool any : {false, true}) {
      for (uint32_t id = 0; id < FG_MAX_RULE_IDS; ++id) {
        if (!used_ids.count(id) && (any || !current_ids.count(id))) {
          used_ids.insert(id);
          return id;
        }
      }
    }
    return 0;  // unreachable: FG_MAX_RULE_IDS is twice FG_MAX_RULES
  };
  for (RuleSpec& spec : specs) {
    auto old = by_name.find(spec.name);
    if (old != by_name.end()) {
      spec.id = old->second.id;
      spec.epoch = old->second.epoch;
    } else {
      uint32_t id = takeId();
      spec.id = id;
      spec.epoch = freshEpoch();
      fresh_ids.push_back(id);
    }
    auto rule = compileRule(spec, tick_units_);
    if (!rule) return rule.error();
    if (old != by_name.end() && !sameKeying(old->second, *rule)) {
      spec.epoch = rule->epoch = freshEpoch();
      rekeyed_ids.push_back(spec.id);
    }
    compiled.push_back(*rule);
  }
  const std::vector<std::pair<Cidr, uint64_t>> sources = compileSourceSets(specs);
  if (Status s = checkReloadFits(options, &sources); !s) return s;
  writing = true;

  // state of new and re-keyed rules starts empty before any packet can reach it
  for (uint32_t id : fresh_ids) {
    if (Status s = resetRuleState(id); !s) return s;
    for (uint32_t verdict = 0; verdict < FG_VERDICT_COUNT; ++verdict) {
      if (Status s = maps_.rule_counters.clear(FG_RULE_COUNTER_INDEX(id, verdict)); !s) return s;
    }
    for (uint32_t stat = 0; stat < FG_TABLE_STAT_COUNT; ++stat) {
      if (Status s = maps_.table_stats.clear(FG_TABLE_STAT_INDEX(id, stat)); !s) return s;
    }
  }
  for (uint32_t id : rekeyed_ids) {
    if (Status s = resetRuleState(id); !s) return s;
  }
  // The host takes cookie connections before the first cookie goes out, and lets go of
  // them after the last cookie rule is gone. Not attached yet, attach does it.
  const bool cookies = usesSynCookies(compiled);
  const bool attached = pinnedAsAttached(interface_);
  if (cookies && attached) {
    if (Status s = syncSynCookieHost(interface_, true); !s) return s;
  }
  // Monitor mode goes on before the rules it is to dry-run can drop or ban anything (and off
  // only after them, in writePolicies): one reload that adds a ban rule and turns monitor on
  // must not ban in between. Should a step below fail, the limiter is left only counting.
  if (options.monitor) std::atomic_ref<uint32_t>(settings_value_.get()->monitor).store(1);
  if (Status s = publish(compiled, sources); !s) return s;
  if (!cookies && attached) {
    if (Status s = syncSynCookieHost(interface_, false); !s) return s;
  }
  return applyPoliciesAndLists(options);
}

Status XdpLimiter::applyPoliciesAndLists(const AttachOptions& options) {
  if (Status s = writePolicies(options); !s) return s;
  if (options.allow) {
    if (Status s = syncList(ListKind::kAllow, *options.allow); !s) return s;
  }
  if (options.deny) {
    if (Status s = syncList(ListKind::kDeny, *options.deny); !s) return s;
  }
  return okStatus();
}

Status XdpLimiter::setLimits(const std::string& rule_name, const LimitChange& change) {
  auto changed = changeLimits(rule_name, RunningCheck::kNone, nullptr, change);
  return changed ? okStatus() : Status(changed.error());
}

Result<bool> XdpLimiter::setLimitsIfRunning(const std::string& rule_name, const LimitSpec& running,
                                            const LimitChange& change) {
  return changeLimits(rule_name, RunningCheck::kCompiled, &running, change);
}

Result<bool> XdpLimiter::setLimitsIfDescribed(const std::string& rule_name,
                                              const LimitSpec& described,
                                              const LimitChange& change) {
  return changeLimits(rule_name, RunningCheck::kDescribed, &described, change);
}

Result<bool> XdpLimiter::changeLimits(const std::string& rule_name, RunningCheck check,
                                      const LimitSpec* running, const LimitChange& change) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  auto rules = activeRules();
  if (!rules) return rules.error();
  std::string names;
  for (fg_rule& rule : *rules) {
    if (rule_name != rule.name) {
      names += (names.empty() ? "" : ", ") + std::string(rule.name);
      continue;
    }
    RuleSpec spec;
    spec.name = rule.name;
    spec.id = rule.id;
    spec.algorithm = static_cast<Algorithm>(rule.algorithm);
    spec.window_ns = static_cast<uint64_t>(rule.window_ms) * 1000000ULL;
    if (check == RunningCheck::kCompiled && running) {
      // compared compiled, as the program holds them: no rounding of a description between
      spec.limit = *running;
      auto expected = compileRule(spec, tick_units_);
      if (!expected) return expected.error();
      if (std::memcmp(rule.limits, expected->limits, sizeof(rule.limits)) != 0) return false;
    }
    if (check == RunningCheck::kDescribed && running && !(describeLimits(rule) == *running)) {
      return false;
    }
    spec.limit = describeLimits(rule);
    // A burst at one tick's worth of the old rate (the least the program needs, which the
    // compiler raises a smaller one to) is not kept as a number for a new rate without a
    // burst: kept, the burst of a rate set by mistake (10G for 10k) would outlive it and
    // refuse the rate set back.
    const fg_limit& old_pps = rule.limits[FG_LIMIT_PPS];
    const fg_limit& old_bps = rule.limits[FG_LIMIT_BPS];
    // The least burst is asked for, which the compiler raises to a tick's worth of the new
    // rate: a burst chosen at or below the old tick's worth stays as tight as it can be.
    if (change.pps && !change.burst && old_pps.interval &&
        old_pps.capacity <= tick_units_ + old_pps.interval) {
      spec.limit.burst = 1;
    }
    if (change.bits_per_s && !change.burst_bytes && old_bps.interval &&
        old_bps.capacity <= tick_units_ + old_bps.interval * kMinBurstBytes) {
      spec.limit.burst_bytes = kMinBurstBytes;
    }
    if (change.pps) {
      spec.limit.pps = *change.pps;
      if (!change.burst && spec.limit.burst == 0) spec.limit.burst = defaultBurst(*change.pps);
    }
    if (change.burst) spec.limit.burst = *change.burst;
    if (change.bits_per_s) {
      spec.limit.bits_per_s = *change.bits_per_s;
      if (!change.burst_bytes && spec.limit.burst_bytes == 0) {
        spec.limit.burst_bytes = defaultBurstBytes(*change.bits_per_s);
      }
    }
    if (change.burst_bytes) spec.limit.burst_bytes = *change.burst_bytes;
    auto compiled = compileRule(spec, tick_units_);
    if (!compiled) return compiled.error();
    // An untracked rate that follows the rule's own follows the change too: one not its own
    // and equal to the rule's. Equal as well, since a rule an older floodgate wrote has 1 for
    // both rates its own, and a bps of its own must not be taken for one that follows.
    for (auto [kind, own] : {std::pair{FG_LIMIT_PPS, FG_UNTRACKED_OWN_PPS},
                             std::pair{FG_LIMIT_BPS, FG_UNTRACKED_OWN_BPS}}) {
      if (!(rule.untracked_own & own) &&
          std::memcmp(&rule.untracked[kind], &rule.limits[kind], sizeof(fg_limit)) == 0) {
        rule.untracked[kind] = compiled->limits[kind];
      }
    }
    std::memcpy(rule.limits, compiled->limits, sizeof(rule.limits));
    auto sources = activeSources();
    if (!sources) return sources.error();
    if (Status s = publish(*rules, *sources); !s) return s.error();
    return true;
  }
  return Error::usage(kNoRuleNamed + rule_name + "' (rules: " + (names.empty() ? "none" : names) +
                      ")");
}

Result<uint64_t> XdpLimiter::nowUnits() const {
  auto jiffies = currentJiffies();
  if (!jiffies) return jiffies.error();
  return *jiffies * tick_units_;
}

}  // namespace floodgate
