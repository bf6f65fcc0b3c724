// SPDX-License-Identifier: MIT
// FleetBanGate: what one entry of the fleet's ban stream leads to, decided from the entry,
// the config, this host's addresses and Redis's clock alone, so that tests step the clock
// by hand. It remembers the records it let through (to refuse a copy added again) and,
// while a start reads the past back newest first, which prefixes a newer record already
// decided; it changes nothing else: the daemon bans, lifts, counts and logs what it returns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
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
  bool lift = false;         // a lift record: `record` holds its address and nonce only
  report::BanRecord record;  // when it parsed
  uint64_t ban_ns = 0;       // kFleetBanApplied: what is left of the ban on Redis's clock
  // kFleetBanLifted of a read-back: how long ago the lift was signed, on Redis's clock; a
  // ban this host started since is not the one lifted. 0: lift whatever is there.
  uint64_t lift_age_ns = 0;
  std::string publisher;  // HOST:PID of the signed entry, printable
  // A refusal worth a warning: why. Empty: counted, not logged (applied, expired, allow-listed).
  std::string why;
};

class FleetBanGate {
 public:
  // Signed records remembered at most; past it, the one that can be forgotten soonest goes,
  // and from then on every record that could be forgotten no later than it (signed no later,
  // give or take the skew) is refused as replayed, remembered or not: a copy of a record
  // never passes, whatever was forgotten (a copy of a lift would undo a newer ban).
  static constexpr size_t kMaxRemembered = 200'000;

  // Prefixes a start's read-back keeps track of at most (the stream is trimmed to about as
  // many records, so only a stream written past that trim fills it). Past it, a ban read
  // back is applied as if no lift followed it, and a lift read back lifts nothing (failed,
  // logged): both keep a ban rather than lift one a newer record may have made again.
  static constexpr size_t kMaxReadBackPrefixes = 100'000;

  // Decides, in this order: an entry with the fields of a signed record, signed with the
  // fleet's secret (else forged), not read before (else replayed), signed within max_ban
  // before `now_ms` and not ahead of it beyond the clock skew (else stale), then
  //  - a ban record of this version, not over (else expired), ending within max_ban from
  //    now (else too_long), of an address that may be banned (escalation_guard.h's
  //    addressRefusal, `own` being this host's addresses): applied;
  //  - a lift record of this version of a prefix no wider than widest_ipv4/_ipv6 (else
  //    too_wide; no fleet ban is wider): lifted (read back: of bans older than it only).
  // `now_ms` is Redis's clock. `read_back`: the entry is of a start's read-back, which
  // comes newest first; a record older in the stream than one of the same prefix read
  // before it is superseded (a ban older than a lift, a lift older than a ban), as the
  // stream's order is the order every host saw them in. The first entry not read back
  // ends the read-back.
  FleetBanVerdict check(const Result<http::StreamReport>& entry, const FleetBanRules& rules,
                        const std::vector<Cidr>& own, int64_t now_ms, bool read_back = false);
  // A new read-back starts (the stream followed again from max_ban back): what the last
  // one kept track of no longer says anything.
  void forgetReadBack() { read_back_.clear(); }

  size_t remembered() const { return seen_.size(); }
  size_t readBackPrefixes() const { return read_back_.size(); }

 private:
  // What a read-back met of one prefix so far, newest first: a ban before any lift (a lift
  // read now is older than a ban that stands), and a lift (a ban read now is older than it).
  enum ReadBackMark : uint8_t { kBanStands = 1, kLifted = 2 };

  FleetBanVerdict checkBan(FleetBanVerdict verdict, const http::StreamReport& entry,
                           const FleetBanRules& rules, const std::vector<Cidr>& own, int64_t now_ms,
                           bool read_back);
  FleetBanVerdict checkLift(FleetBanVerdict verdict, const http::StreamReport& entry,
                            const FleetBanRules& rules, int64_t now_ms, bool read_back);

  // Prefixes met by the read-back in progress (toString()), with their ReadBackMark bits.
  std::unordered_map<std::string, uint8_t> read_back_;
  // The MAC of each record let through, and when a copy of it would be stale anyway.
  std::map<std::string, int64_t> seen_;
  std::multimap<int64_t, std::string> seen_by_forget_;
  // The latest forget time of a record dropped from seen_ to make room: one at or before it
  // may be a copy of a record forgotten, so it is refused.
  int64_t evicted_through_ = INT64_MIN;
};

}  // namespace floodgate::daemon
