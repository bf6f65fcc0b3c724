// SPDX-License-Identifier: MIT
// Samples of a running limiter: its rule counters and the owned slots of its source table.
#include "learn/limiter_sampler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "controller/rule_compiler.h"

namespace floodgate::learn {

Status LimiterSampler::read(std::vector<RuleReading>& rules, std::vector<SlotReading>& slots) {
  // A packet the program counts in its slot it counts in its rule just after. So every
  // reading but the first takes the table first: the rule counters read next hold every
  // packet the slots showed, and each interval's mean frame size covers the packets it
  // prices. The first reading, the baseline, takes the rules first: the totals then cover
  // (table_0, table_N] within (rules_0, rules_N], and no source is seen to send a packet
  // its rule did not count, however long a copy of a large table takes.
  if (!baseline_taken_) {
    if (Status s = readRules(rules); !s) return s;
    if (Status s = readTable(slots); !s) return s;
    baseline_taken_ = true;
    return okStatus();
  }
  if (Status s = readTable(slots); !s) return s;
  return readRules(rules);
}

Status LimiterSampler::readTable(std::vector<SlotReading>& slots) {
  auto table = limiter_.slots();
  if (!table) return table.error();
  for (uint32_t i = 0; i < table->size(); ++i) {
    const fg_slot& slot = (*table)[i];
    if (slot.fingerprint == 0) continue;
    SlotReading reading;
    reading.slot = i;
    reading.fingerprint = slot.fingerprint;
    reading.key.rule_id = slot.rule_id;
    reading.key.family = slot.family;
    reading.key.prefix = slot.prefix;
    std::memcpy(reading.key.addr.data(), slot.addr, sizeof(slot.addr));
    reading.packets = slot.packets;
    slots.push_back(reading);
  }
  return okStatus();
}

Status LimiterSampler::readRules(std::vector<RuleReading>& rules) {
  auto counters = limiter_.ruleCounters();
  if (!counters) return counters.error();
  for (const RuleCounters& rule : *counters) {
    RuleReading reading;
    reading.id = rule.id;
    for (const CounterRow& row : rule.by_verdict) {
      reading.packets += row.packets;
      reading.bytes += row.bytes;
    }
    reading.untracked_packets =
        rule.table[FG_TABLE_UNTRACKED_PASS] + rule.table[FG_TABLE_UNTRACKED_DROP];
    rules.push_back(reading);
  }
  return okStatus();
}

uint64_t SteadyLearnClock::nowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool SteadyLearnClock::sleepUntil(uint64_t deadline_ns) {
  // in steps, so Ctrl-C is seen within 50 ms
  for (;;) {
    if (stop_ && stop_->load()) return false;
    const uint64_t now = nowNs();
    if (now >= deadline_ns) return true;
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::min<uint64_t>(deadline_ns - now, 50000000ULL)));
  }
}

Result<std::vector<LearnRule>> learnRules(const XdpLimiter& limiter) {
  auto active = limiter.activeRules();
  if (!active) return active.error();
  std::vector<LearnRule> rules;
  for (const fg_rule& rule : *active) {
    LearnRule out;
    out.id = rule.id;
    out.name = rule.name;
    out.per_source = rule.key_kind == FG_KEY_SOURCE;
    out.algorithm = static_cast<Algorithm>(rule.algorithm);
    out.window_ns = static_cast<uint64_t>(rule.window_ms) * 1000000ULL;
    out.current = describeLimits(rule);
    rules.push_back(out);
  }
  return rules;
}

}  // namespace floodgate::learn
