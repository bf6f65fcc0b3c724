// SPDX-License-Identifier: MIT
// The daemon's side of `adaptive:`: building an interface's AdaptiveGovernor from the config,
// keeping it across a reload, reading the load it is fed, and applying what it decides to
// the running rules (as `floodgate set` does: buckets keep their state). Not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/adaptive_config.h"
#include "controller/xdp_limiter.h"
#include "daemon/adaptive_governor.h"
#include "daemon/event_log.h"

namespace floodgate::daemon {

// The governor `adaptive` asks for over `options`' rules, in place of `held` (the one the
// interface has, if any). `held` is kept, level and all, when the section, monitor mode and
// the limits and on_exceed of the rules it names are unchanged: `options` then carries the
// limits it has squeezed them to, so a reload does not loosen them mid-attack. Otherwise the
// governor starts over at the configured limits (a line in `lines` says so if `held` had
// moved them), so a level reached in a dry run is never enforced at once.
std::optional<AdaptiveGovernor> reconcileAdaptive(
    std::optional<AdaptiveGovernor> held, const std::optional<config::AdaptiveConfig>& adaptive,
    AttachOptions& options, std::vector<LogLine>& lines);

// What the program passed on the interface, every reason. With `monitor_mode` (the
// interface's defaults.monitor) verdict pass only: its monitor verdicts are the packets
// enforcing would drop, so a dry run measures what enforcing would pass. Otherwise monitor
// verdicts too: a rule's `on_exceed: monitor` passes what it refuses, and a packet one such
// rule refused is still counted monitor when the governed rules after it pass it.
PassedCounters passedOf(const std::vector<CounterRow>& counters, bool monitor_mode);

// Applies `decision` to `limiter`'s running rules and says what it did, one line per rule
// changed ("event=adaptive_tighten interface=eth0 rule=per-source pps=50->25 ..."). A rule
// whose running limits are no longer the ones `governor` set (`floodgate set` changed them)
// is left as it is and released from `governor` (event=adaptive_released); one whose write
// failed is marked as still running its limits before (tried again at the next reading),
// and one whose change can never be made (no rule of that name any more) is released.
// How many rules it tightened and relaxed (each change its own way).
struct AppliedChanges {
  uint64_t tightened = 0;
  uint64_t relaxed = 0;
};
AppliedChanges applyDecision(XdpLimiter& limiter, AdaptiveGovernor& governor,
                             const AdaptiveDecision& decision, std::vector<LogLine>& lines);

// The event names of the log lines and of floodgate_events_total.
const char* adaptiveEventName(AdaptiveAction action);

}  // namespace floodgate::daemon
