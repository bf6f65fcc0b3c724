// SPDX-License-Identifier: MIT
// EscalationPolicy: what one offender report leads to, decided from the report, the
// config and the time alone, so that tests step the clock by hand. It changes nothing:
// the daemon bans, counts and logs what it returns (and takes the reporter's quota when
// it returns kEscalationBanned).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/escalation_guard.h"
#include "daemon/report_listener.h"
#include "floodgate/common/cidr.h"
#include "floodgate/report/escalate_config.h"
#include "metrics/exposition.h"

namespace floodgate::daemon {

// What a config says about reports, resolved when it is applied.
struct EscalationConfig {
  report::EscalateConfig escalate;  // ban_ns, max_bans_per_minute
  EscalationRules rules;            // who is never banned, and the threshold
  ReporterAccess access;            // who may report over the socket
};

// The fleet's latest lift of each prefix (as text), by the time it was signed on its signer's
// clock: a report from the stream signed before it is of an offence the lift forgave. At most
// kMaxLifts; when full, the lift signed first goes, whatever its age (a report of its prefix
// signed before it then bans again), so that whoever floods the fleet's stream with lifts
// costs the daemon a bounded memory and O(log n) per lift. Not thread-safe.
class LiftMemory {
 public:
  static constexpr size_t kMaxLifts = 100'000;

  // Notes a lift of `prefix` signed at `signed_ms` (a later one of it stays), then forgets
  // every lift signed before `forget_before_ms`, and the one signed first while more than
  // kMaxLifts are held.
  void note(const std::string& prefix, int64_t signed_ms, int64_t forget_before_ms);
  // When the latest lift of `prefix` held was signed; nothing when none is.
  std::optional<int64_t> signedAt(const std::string& prefix) const;
  size_t size() const { return signed_ms_.size(); }

 private:
  std::map<std::string, int64_t> signed_ms_;
  std::set<std::pair<int64_t, std::string>> by_signed_;  // the same, signed first first
};

// What the daemon remembers between reports: the bans escalations started, by address
// (as text) and when each ends, and the bans each reporter caused this minute, live and in a
// start's replay of the report stream apart.
struct EscalationMemory {
  std::map<std::string, std::chrono::steady_clock::time_point> banned_until;
  // A ban of `address` lifted before its end (a fleet lift): its next report bans it again
  // rather than being taken for a repeat of a ban that no longer runs.
  void forgetBan(const Cidr& address) { banned_until.erase(address.toString()); }
  // The fleet lifted every ban of exactly `address` by a record signed at `signed_ms` (its
  // signer's clock), read when the fleet's Redis said `read_ms`: a report of it read from the
  // stream and signed before then is of an offence the lift forgave, however late it is read
  // (a start's replay). Lifts signed more than `ban_ns` (the escalation's ban time) and
  // twice the clock skew before `read_ms` are forgotten: no report signed before them bans.
  void noteLift(const Cidr& address, int64_t signed_ms, int64_t read_ms, uint64_t ban_ns);
  LiftMemory lifts;
  // Forgets the bans that are over, looking through them at most once a second: the daemon
  // asks at every turn of its loop, and they may be hundreds of thousands (a day's bans at
  // the quotas). One over and not yet forgotten is no repeat (decideEscalation).
  void forgetEnded(std::chrono::steady_clock::time_point now);
  std::chrono::steady_clock::time_point next_forget{};
  BanQuota quota;
  // The report stream's bans as a whole (key kStreamQuotaKey), apart from `quota`, whose
  // oldest reporters made-up names could push out.
  BanQuota stream_quota;
  // The bans of each network's clients (reportNetwork's prefix, as text) over every reporter
  // and the stream: one network's 65,536 /64s must not spend the two above for everyone.
  BanQuota network_quota;
  // The same three for reports a start read back from the stream's past (`replayed`): the
  // controllers running then charged them to theirs, and a restart must not take the live
  // quota of its first minute. Each allows as many as the live one over one ban time and a
  // minute (replayPerMinute), no more than the fleet could apply while they were made.
  BanQuota replay_quota;
  BanQuota replay_stream_quota;
  BanQuota replay_network_quota;
};

// What a quota of `per_minute` bans lets a start's replay of `ban_ns` of reports ban in a
// minute: the live quota over every minute those bans were made in (a window may straddle
// one more).
int64_t replayPerMinute(int64_t per_minute, uint64_t ban_ns);

inline constexpr const char* kStreamQuotaKey = "stream";

struct EscalationDecision {
  metrics::EscalationResult result = metrics::kEscalationInvalid;
  uint64_t ban_ns = 0;  // kEscalationBanned: how long the ban lasts
  // A refusal worth a warning: why it is refused. Empty: counted, not logged (a ban, a
  // repeat, an expired report, an allow-listed address: the operator's own choice).
  std::string why;
};

// Decides, in this order: a socket sender allowed to report, a report that parsed and is
// signed, one not read from the stream's past (its ban over), a client that may be banned
// (escalation_guard.h's refusals, `own` being this host's addresses), not banned by an
// escalation still running, not signed before the fleet's last lift of it (read from the
// stream), and within its reporter's quota, the stream's (read from the stream) and its
// network's (reportNetwork); a start's replay has quotas of its own. Pure but for
// ReporterAccess::allows, which reads the group database for a uid it does not list.
EscalationDecision decideEscalation(const ReceivedReport& received, const EscalationConfig& config,
                                    const std::vector<Cidr>& own, const EscalationMemory& memory,
                                    std::chrono::steady_clock::time_point now);

// Charges a ban of `received` to the quotas decideEscalation looked at.
void chargeBan(const ReceivedReport& received, const EscalationConfig& config,
               EscalationMemory& memory, std::chrono::steady_clock::time_point now);

}  // namespace floodgate::daemon
