// SPDX-License-Identifier: MIT
// Ranking the sources with the most drops between two samples of the table.
#include "controller/top.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "controller/kernel_cidr.h"
#include "kernel/system.h"

namespace floodgate {
namespace {

void markBan(TopRow& row, const Cidr& source, const std::vector<BanEntry>& bans) {
  for (const BanEntry& ban : bans) {
    if (!covers(ban.cidr, source)) continue;
    row.banned = true;
    row.ban_forever = ban.forever;
    row.ban_remaining_ns = ban.remaining_ns;
    return;
  }
}

}  // namespace

bool refusedWithin(uint32_t last_refusal, uint64_t now_jiffies, uint32_t ticks) {
  if (last_refusal == 0) return false;
  // The program stamps a refusal as its jiffies | 1 (0 means never), so a refusal in the
  // very tick of the sample, when that tick is even, reads one tick ahead: a signed
  // difference takes that as "now" instead of four billion ticks ago.
  const auto age = static_cast<int32_t>(static_cast<uint32_t>(now_jiffies) - last_refusal);
  return age <= static_cast<int64_t>(ticks);
}

Result<TopSample> takeTopSample(const XdpLimiter& limiter) {
  TopSample sample;
  auto slots = limiter.slots();
  if (!slots) return slots.error();
  sample.slots = std::move(*slots);
  auto rules = limiter.ruleCounters();
  if (!rules) return rules.error();
  sample.rules = std::move(*rules);
  auto jiffies = currentJiffies();
  if (!jiffies) return jiffies.error();
  sample.jiffies = *jiffies;
  return sample;
}

std::vector<TopRow> rankTop(const TopSample& before, const TopSample& after, double seconds,
                            uint32_t hz, const std::vector<BanEntry>& bans, size_t limit) {
  std::map<uint32_t, std::string> names;
  for (const RuleCounters& rule : after.rules) names[rule.id] = rule.name;
  const double span = seconds > 0 ? seconds : 1;
  std::vector<TopRow> rows;
  const size_t count = std::min(before.slots.size(), after.slots.size());
  for (size_t i = 0; i < count; ++i) {
    const fg_slot& old_slot = before.slots[i];
    const fg_slot& slot = after.slots[i];
    if (!slot.fingerprint || slot.fingerprint != old_slot.fingerprint) continue;
    // the counters wrap at 2^32: the difference is right for fewer per interval
    const uint32_t packets = slot.packets - old_slot.packets;
    if (packets == 0) continue;
    auto name = names.find(slot.rule_id);
    if (name == names.end()) continue;  // a rule that is gone
    TopRow row;
    Cidr source = kernelCidr(slot.family, slot.addr, slot.prefix);
    row.source = source.toString();
    row.rule = name->second;
    row.packets_per_s = packets / span;
    row.drops_per_s = static_cast<uint32_t>(slot.drops - old_slot.drops) / span;
    row.limited = refusedWithin(slot.last_drop, after.jiffies, hz);
    markBan(row, source, bans);
    rows.push_back(row);
  }
  for (const RuleCounters& rule : after.rules) {
    auto old_rule = std::find_if(before.rules.begin(), before.rules.end(),
                                 [&](const RuleCounters& r) { return r.id == rule.id; });
    if (old_rule == before.rules.end()) continue;
    const uint64_t passed =
        rule.table[FG_TABLE_UNTRACKED_PASS] - old_rule->table[FG_TABLE_UNTRACKED_PASS];
    const uint64_t dropped =
        rule.table[FG_TABLE_UNTRACKED_DROP] - old_rule->table[FG_TABLE_UNTRACKED_DROP];
    if (passed + dropped == 0) continue;
    TopRow row;
    row.source = "untracked";
    row.rule = rule.name;
    row.packets_per_s = (passed + dropped) / span;
    row.drops_per_s = dropped / span;
    row.limited = dropped > 0;
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const TopRow& a, const TopRow& b) {
    if (a.drops_per_s != b.drops_per_s) return a.drops_per_s > b.drops_per_s;
    if (a.packets_per_s != b.packets_per_s) return a.packets_per_s > b.packets_per_s;
    return a.source < b.source;
  });
  if (rows.size() > limit) rows.resize(limit);
  return rows;
}

}  // namespace floodgate
