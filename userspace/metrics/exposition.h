// SPDX-License-Identifier: MIT
// The metrics a scrape shows, as plain data, and their Prometheus text exposition (0.0.4).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate::metrics {

// What one attached interface reports.
struct InterfaceMetrics {
  std::string interface;
  std::vector<CounterRow> counters;  // any subset of (verdict, reason); missing ones are 0
  std::vector<RuleCounters> rules;
  double tracked_v4 = 0;  // estimates from a bounded sample of the source table
  double tracked_v6 = 0;
  uint64_t bans_active = 0;
  EventStats event_stats;                         // what the program did with its events
  std::array<uint64_t, FG_EVENT_TYPES> events{};  // events the daemon read, by enum fg_event_type
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
  kEscalationTooWide,
  kEscalationBelowThreshold,
  kEscalationRateLimited,  // the reporter's max_bans_per_minute was reached
  kEscalationResults
};
inline constexpr const char* kEscalationResultNames[kEscalationResults] = {
    "banned",      "allowlisted",   "repeat",      "invalid",         "unauthorised",
    "expired",     "loopback",      "unspecified", "link_local",      "multicast",
    "own_address", "trusted_proxy", "too_wide",    "below_threshold", "rate_limited"};

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
  std::string version;
};

// Escapes a label value: backslash, double quote and newline.
std::string escapeLabelValue(std::string_view value);

// The text exposition: each family once with its HELP and TYPE, every (verdict, reason)
// series of every interface present (zeros too) so dashboards see stable series.
std::string render(const Snapshot& snapshot);

}  // namespace floodgate::metrics
