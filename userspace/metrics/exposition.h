// SPDX-License-Identifier: MIT
// The metrics a scrape shows, as plain data, and their Prometheus text exposition (0.0.4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate::metrics {

// The limits a rule runs with now (after floodgate set, or adaptive: steps).
struct RuleLimit {
  std::string rule;
  LimitSpec limit;
};

// What one attached interface reports.
struct InterfaceMetrics {
  std::string interface;
  std::vector<CounterRow> counters;  // any subset of (verdict, reason); missing ones are 0
  std::vector<RuleCounters> rules;
  double tracked_v4 = 0;  // estimates from a bounded sample of the source table
  double tracked_v6 = 0;
  uint64_t bans_active = 0;
  // NDP and MLD frames past the link's budget (met the rules); none: the program does not
  // count them (attached by an older floodgate)
  std::optional<uint64_t> link_control_over;
  // generic mode meets a flow's segments merged (XdpLimiter::mergedPackets), as the
  // daemon last read it
  bool merged_packets = false;
  EventStats event_stats;                         // what the program did with its events
  std::array<uint64_t, FG_EVENT_TYPES> events{};  // events the daemon read, by enum fg_event_type
  std::vector<RuleLimit> limits;                  // every active rule, in rule order
  // Rule limits the daemon's adaptive: governor tightened and relaxed (one per rule moved).
  uint64_t adaptive_tightened = 0;
  uint64_t adaptive_relaxed = 0;
  // floodgate_bans_failed_total as the daemon keeps it (a RunningTotal, never lower than
  // before); none: the sum of the running rules' counts, as a one-off reading has it.
  std::optional<uint64_t> bans_failed;
};

// Everything a scrape renders.
// What became of an offender report from a service (http.escalate); the `result` label of
// floodgate_http_escalations_total, in the order of kEscalationResultNames.
enum EscalationResult {
  kEscalationBanned,
  kEscalationAllowListed,
  kEscalationRepeat,
  kEscalationInvalid,
  kEscalationUnauthorised,
  kEscalationExpired,
  // refused: never banned whatever a reporter says (escalation_guard.h)
  kEscalationLoopback,
  kEscalationUnspecified,
  kEscalationLinkLocal,
  kEscalationMulticast,
  kEscalationOwnAddress,
  kEscalationTrustedProxy,
  kEscalationService,
  kEscalationTooWide,
  kEscalationBelowThreshold,
  kEscalationRateLimited,  // a quota of bans a minute was reached (reporter, stream, network)
  kEscalationLifted,       // signed before the fleet's last lift of its prefix
  // passed every guard, but no held interface took the ban (its table full up to the
  // entries kept, another command holding its writer lock past the wait)
  kEscalationFailed,
  kEscalationResults
};
inline constexpr const char* kEscalationResultNames[kEscalationResults] = {
    "banned",   "allowlisted", "repeat",          "invalid",      "unauthorised", "expired",
    "loopback", "unspecified", "link_local",      "multicast",    "own_address",  "trusted_proxy",
    "service",  "too_wide",    "below_threshold", "rate_limited", "lifted",       "failed"};

// What became of a ban or lift record read from the fleet's stream (fleet.bans); the
// `result` label of floodgate_fleet_bans_received_total, in the order of kFleetBanResultNames.
enum FleetBanResult {
  kFleetBanApplied,
  kFleetBanExpired,  // over before it was read (a starting host reading back)
  // no held interface took it (a table full, a writer holding the lock)
  kFleetBanFailed,
  kFleetBanForged,     // not signed with the fleet's secret
  kFleetBanReplayed,   // the same signed record read before
  kFleetBanStale,      // signed too long ago, or ahead of Redis's clock
  kFleetBanTooLong,    // ends later than fleet.bans.max_ban from now
  kFleetBanMalformed,  // not a ban record this floodgate reads (garbled, another version)
  kFleetBanTooWide,    // a prefix wider than fleet.bans.widest_ipv4 / widest_ipv6
  kFleetBanLoopback,
  kFleetBanUnspecified,
  kFleetBanLinkLocal,
  kFleetBanMulticast,
  kFleetBanOwnAddress,
  kFleetBanTrustedProxy,
  kFleetBanService,
  kFleetBanAllowListed,
  kFleetBanLifted,  // a lift record: the bans of its prefix removed on every held interface
  // read back at a start, older in the stream than a record of the same prefix that decides
  // instead: a ban older than a lift (not applied), a lift older than a ban (nothing lifted)
  kFleetBanSuperseded,
  // no held interface took it, as their ban tables hold as many fleet bans as they may
  // (fleet.bans.max_entries: half by default, the rest kept for the host's own bans)
  kFleetBanNoRoom,
  kFleetBanResults
};
inline constexpr const char* kFleetBanResultNames[kFleetBanResults] = {
    "applied",     "expired",     "failed",    "forged",      "replayed",
    "stale",       "too_long",    "malformed", "too_wide",    "loopback",
    "unspecified", "link_local",  "multicast", "own_address", "trusted_proxy",
    "service",     "allowlisted", "lifted",    "superseded",  "no_room"};

// What became of the bans this host published to the fleet (fleet.bans.share).
struct FleetBansPublished {
  uint64_t sent = 0;     // added to the stream
  uint64_t failed = 0;   // Redis did not take them (tried twice)
  uint64_t dropped = 0;  // the send queue was full
};

// A configured interface, and whether it is up: it exists and has its limiter attached.
struct InterfaceUp {
  std::string interface;
  bool up = false;
};

struct Snapshot {
  std::vector<InterfaceMetrics> interfaces;
  // Every interface the config lists, attached or not (a missing one is waited for).
  std::vector<InterfaceUp> configured;
  uint64_t reloads_success = 0;
  uint64_t reloads_failure = 0;
  uint64_t config_generation = 0;
  // Offender reports from services (http.escalate), by what they led to.
  std::array<uint64_t, kEscalationResults> escalations{};
  // Ban records read from the fleet's stream, and the bans published to it (fleet.bans).
  std::array<uint64_t, kFleetBanResults> fleet_bans_received{};
  FleetBansPublished fleet_bans_published;
  std::string version;
};

// The failed bans of `rules` (FG_TABLE_BAN_FAILED), summed.
uint64_t bansFailed(const std::vector<RuleCounters>& rules);

// Escapes a label value: backslash, double quote and newline; a byte that is not part of
// well-formed UTF-8 becomes U+FFFD.
std::string escapeLabelValue(std::string_view value);

// The text exposition: each family once with its HELP and TYPE, every (verdict, reason)
// series of every interface present (zeros too) so dashboards see stable series.
std::string render(const Snapshot& snapshot);

}  // namespace floodgate::metrics
