// SPDX-License-Identifier: MIT
// Who is flooding: ranks the sources of the table (and each rule's untracked bucket) by how
// much they were refused between two samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/xdp_limiter.h"
#include "floodgate_shared.h"

namespace floodgate {

// One look at a limiter: its source table, its rule counters and the clock.
struct TopSample {
  std::vector<fg_slot> slots;
  std::vector<RuleCounters> rules;
  uint64_t jiffies = 0;
};

Result<TopSample> takeTopSample(const XdpLimiter& limiter);

struct TopRow {
  std::string
      source;  // a masked source "198.51.100.0/24", or "untracked" for a rule's shared bucket
  std::string rule;
  double drops_per_s = 0;
  double packets_per_s = 0;
  bool limited = false;  // refused within the last second
  bool banned = false;
  bool ban_forever = false;
  uint64_t ban_remaining_ns = 0;
};

// Whether a slot's refusal stamp (jiffies | 1 of its latest refusal, 0 never) lies within
// `ticks` of `now_jiffies`.
bool refusedWithin(uint32_t last_refusal, uint64_t now_jiffies, uint32_t ticks);

// The `limit` rows with the most drops per second between `before` and `after` (then the
// most packets), taken `seconds` apart on a clock of `hz` ticks a second; rules are named
// as in `after`. A slot that changed owner in between is left out: its counters started
// again.
std::vector<TopRow> rankTop(const TopSample& before, const TopSample& after, double seconds,
                            uint32_t hz, const std::vector<BanEntry>& bans, size_t limit);

}  // namespace floodgate
