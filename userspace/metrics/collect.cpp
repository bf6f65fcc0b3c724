// SPDX-License-Identifier: MIT
// collect: counters, rule counters and the settings' ban counts, plus a rotating sample.
#include "metrics/collect.h"

#include "controller/rule_compiler.h"

namespace floodgate::metrics {

Result<InterfaceMetrics> collect(const XdpLimiter& limiter, uint32_t* sample_cursor,
                                 uint32_t sample_slots) {
  InterfaceMetrics out;
  out.interface = limiter.interface();
  auto counters = limiter.counters();
  if (!counters) return counters.error();
  out.counters = std::move(*counters);
  auto rules = limiter.ruleCounters();
  if (!rules) return rules.error();
  out.rules = std::move(*rules);
  auto active = limiter.activeRules();
  if (!active) return active.error();
  for (const fg_rule& rule : *active) out.limits.push_back({rule.name, describeLimits(rule)});
  auto settings = limiter.settings();
  if (!settings) return settings.error();
  out.bans_active = uint64_t{settings->ban_entries[0]} + settings->ban_entries[1];
  // a count that cannot be read (a pin of another version's layout) has no series: the
  // interface's other series stay (`floodgate stats` says what is wrong with it)
  auto link_control_over = limiter.linkControlOverBudget();
  if (link_control_over && *link_control_over) {
    out.link_control_over = (*link_control_over)->packets;
  }
  auto events = limiter.eventStats();
  if (!events) return events.error();
  out.event_stats = *events;
  auto sample = limiter.sampleTrackedSources(*sample_cursor, sample_slots);
  if (!sample) return sample.error();
  out.tracked_v4 = sample->estimate_v4;
  out.tracked_v6 = sample->estimate_v6;
  uint64_t next = uint64_t{sample->first_slot} + sample->sampled;
  *sample_cursor = sample->table_slots ? static_cast<uint32_t>(next % sample->table_slots) : 0;
  return out;
}

}  // namespace floodgate::metrics
