// SPDX-License-Identifier: MIT
// FleetBanGate: what one entry of the fleet's ban stream leads to, decided from the entry,
// the config, this host's addresses and Redis's clock alone, so that tests step the clock
// by hand. It remembers the records that could ban or lift (to refuse a copy added again);
// it changes nothing else: the daemon bans, lifts, counts and logs what it returns. Entries
// come in the stream's order, a start's replay of the past included, so a copy is refused
// where a running host refused it; FleetBanReplay then keeps of the replay only what a host
// running all along ends with.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/replay_memory.h"
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
  std::vector<Cidr> services;         // the config's Redis servers (storeServerAddresses)
};

struct FleetBanVerdict {
  metrics::FleetBanResult result = metrics::kFleetBanMalformed;
  bool lift = false;         // a lift record: `record` holds its address and nonce only
  report::BanRecord record;  // when it parsed
  uint64_t ban_ns = 0;       // kFleetBanApplied: what is left of the ban on Redis's clock
  // kFleetBanLifted: how long ago it was signed, on Redis's clock; a ban this host started
  // on its own since is newer than the lift (not shared, so not in the stream) and stays.
  uint64_t lift_age_ns = 0;
  int64_t signed_ms = 0;  // when it was signed, on its signer's clock (once the MAC holds)
  int64_t read_ms = 0;    // Redis's clock when the gate read it
  std::string publisher;  // HOST:PID of the signed entry, printable
  // A refusal worth a warning: why. Empty: counted, not logged (applied, expired, allow-listed).
  std::string why;
};

// Why a host whose config says `rules` (and whose addresses are `own`) refuses a fleet ban
// of `address` for the address itself (escalation_guard.h's addressRefusal): the result it
// is counted under; kFleetBanApplied when the address may be banned.
metrics::FleetBanResult fleetBanAddressResult(const Cidr& address, const FleetBanRules& rules,
                                              const std::vector<Cidr>& own);

class FleetBanGate {
 public:
  // Records remembered at most (mayApplyLater); past it, the one that can be forgotten
  // soonest goes, and from then on every record that could be forgotten no later than it
  // (ReplayMemory::forgetAt: signed no later, give or take the skew) is refused as replayed,
  // remembered or not: a copy of a record never passes, whatever was forgotten (a copy of a
  // lift would undo a newer ban).
  static constexpr size_t kMaxRemembered = 200'000;

  // Decides, in this order: an entry with the fields of a signed record, signed with the
  // fleet's secret (else forged), not read before (else replayed), signed within max_ban
  // before `now_ms` and not ahead of it beyond the clock skew (else stale), then
  //  - a ban record of this version, not over (else expired), ending within max_ban from
  //    now (else too_long), of an address that may be banned (escalation_guard.h's
  //    addressRefusal, `own` being this host's addresses): applied;
  //  - a lift record of this version of a prefix no wider than widest_ipv4/_ipv6 (else
  //    too_wide; no fleet ban is wider): lifted.
  // `now_ms` is Redis's clock; entries are checked in the stream's order.
  FleetBanVerdict check(const Result<http::StreamReport>& entry, const FleetBanRules& rules,
                        const std::vector<Cidr>& own, int64_t now_ms);

  size_t remembered() const { return seen_.size(); }

  // Whether a copy of a record checked as `result`, read later, could ban or lift: every
  // record that passed the signature and time checks but those malformed or over, which no
  // later read can change. A ban refused for its address or width passes once the config
  // says otherwise (an allow list edited), and what is left of one too long shrinks, so
  // those are remembered against copies as the ones applied and lifted are.
  static bool mayApplyLater(metrics::FleetBanResult result);

 private:
  FleetBanVerdict checkBan(FleetBanVerdict verdict, const http::StreamReport& entry,
                           const FleetBanRules& rules, const std::vector<Cidr>& own,
                           int64_t now_ms);
  FleetBanVerdict checkLift(FleetBanVerdict verdict, const http::StreamReport& entry,
                            const FleetBanRules& rules, int64_t now_ms);

  // The MAC of each record that may apply later (mayApplyLater), until a copy of it would be
  // stale anyway.
  ReplayMemory seen_{kMaxRemembered};
  // fleet.bans.max_ban of the last check (ms; -1 before the first): a raise lengthens seen_
  int64_t max_ban_ms_ = -1;
};

// What a start's replay of the stream's past leads to, once all of it is read. Its records
// come through the gate oldest first; of each prefix it keeps what a host running all along
// ends with: the last lift, and the longest ban made after it. So a ban lifted within the
// replay is never applied, and an older fleet ban never replaces (extending it, as `fleet`)
// a ban this host made on its own after the lift. "After" is the stream's order, but for
// records signed further apart than the clock skew, which are taken in the order signed:
// anyone who can write to the stream can add a copy of an old record after a newer one (a
// copy whose original has left the replay's window passes the gate), and a copy of a lift
// must not lift a ban signed after it, nor a copy of a ban come back after its lift.
// Not thread-safe.
class FleetBanReplay {
 public:
  // Prefixes kept at most: a replay of more records than that (max_replay above it) may
  // fill it; the caller then takes what it holds and goes on.
  static constexpr size_t kMaxPrefixes = 100'000;

  // Whether add(verdict) needs a prefix more than it may hold.
  bool full(const FleetBanVerdict& verdict) const;
  // Keeps `verdict` (kFleetBanApplied or kFleetBanLifted, read at `now_ms` on Redis's
  // clock). Returns how many records kept before it no longer matter (superseded).
  size_t add(FleetBanVerdict verdict, int64_t now_ms);
  // What it holds, of each prefix its lift before its ban, aged to `now_ms`: a ban over by
  // then has ban_ns 0. Empties it.
  std::vector<FleetBanVerdict> take(int64_t now_ms);
  size_t prefixes() const { return kept_.size(); }

 private:
  struct Read {
    FleetBanVerdict verdict;
    int64_t now_ms = 0;
  };
  struct Kept {
    uint64_t order = 0;  // of the last record kept, so that take() keeps the stream's order
    std::optional<Read> lift;
    std::optional<Read> ban;
  };
  std::unordered_map<std::string, Kept> kept_;
  uint64_t next_ = 0;
};

}  // namespace floodgate::daemon
