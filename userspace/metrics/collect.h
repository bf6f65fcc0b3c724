// SPDX-License-Identifier: MIT
// collect: one interface's metrics read from its limiter, at a cost that does not grow with
// the number of tracked sources (a bounded sample of the source table, never a walk).
#pragma once

#include <cstdint>

#include "controller/xdp_limiter.h"
#include "floodgate/common/result.h"
#include "metrics/exposition.h"

namespace floodgate::metrics {

// Slots read per scrape for the tracked-sources estimate: one batch syscall of ~0.5 MiB.
constexpr uint32_t kSampleSlots = 4096;

// Reads counters, rule counters, ban counts and a sample of `sample_slots` slots starting at
// `*sample_cursor`, which moves on so successive scrapes see the whole table in turn.
Result<InterfaceMetrics> collect(const XdpLimiter& limiter, uint32_t* sample_cursor,
                                 uint32_t sample_slots = kSampleSlots);

}  // namespace floodgate::metrics
