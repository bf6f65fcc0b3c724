// SPDX-License-Identifier: MIT
// FleetBanGate: what one entry of the fleet's ban stream leads to, decided from the entry,
// the config, this host's addresses and Redis's clock alone, so that tests step the clock
// by hand. It remembers the records it let through (to refuse a copy added again) and
// changes nothing else: the daemon bans, counts and logs what it returns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate/fleet/report_stream.h"
#include "floodgate/report/ban_record.h"
#include "metrics/exposition.h"

namespace floodgate::daemon {

// What a config says a ban record must respect.
struct FleetBanRules {
  std::string secret;
  uint64_t max_ban_ns = 0;
  int widest_ipv4 = 24;
  int widest_ipv6 = 48;
  std::vector<Cidr> allow;
  std::vector<Cidr> trusted_proxies;  // http.trusted_proxies, when there is an http: section
};

struct FleetBanVerdict {
  metrics::FleetBanResult result = metrics::kFleetBanMalformed;
  report::BanRecord record;  // when it parsed
  uint64_t ban_ns = 0;       // kFleetBanApplied: what is left of the ban on Redis's clock
  std::string publisher;     // HOST:PID of the signed entry, printable
  // A refusal worth a warning: why. Empty: counted, not logged (applied, expired, allow-listed).
  std::string why;
};

class FleetBanGate {
 public:
  // Signed records remembered at most; past it, the one that can be forgotten soonest goes
  // (a copy of it re-applies a ban with its own, unchanged, end).
  static constexpr size_t kMaxRemembered = 200'000;

  // Decides, in this order: an entry with the fields of a signed record, signed with the
  // fleet's secret (else forged), not read before (else replayed), signed within max_ban
  // before `now_ms` and not ahead of it beyond the clock skew (else stale), a ban record of
  // this version, not over (else expired), ending within max_ban from now (else too_long),
  // and an address that may be banned (escalation_guard.h's addressRefusal, `own` being this
  // host's addresses). `now_ms` is Redis's clock.
  FleetBanVerdict check(const Result<http::StreamReport>& entry, const FleetBanRules& rules,
                        const std::vector<Cidr>& own, int64_t now_ms);

  size_t remembered() const { return seen_.size(); }

 private:
  // The MAC of each record let through, and when a copy of it would be stale anyway.
  std::map<std::string, int64_t> seen_;
  std::multimap<int64_t, std::string> seen_by_forget_;
};

}  // namespace floodgate::daemon
