// SPDX-License-Identifier: MIT
// FleetBanGate: from an entry of the fleet's ban stream to what to do about it.
#include "daemon/fleet_ban_gate.h"

#include <algorithm>

#include "daemon/escalation_guard.h"
#include "floodgate/common/text.h"
#include "floodgate/common/units.h"

namespace floodgate::daemon {
namespace {

FleetBanVerdict refused(FleetBanVerdict verdict, metrics::FleetBanResult result, std::string why) {
  verdict.result = result;
  verdict.why = std::move(why);
  return verdict;
}

metrics::FleetBanResult resultOf(Refusal refusal) {
  switch (refusal) {
    case Refusal::kLoopback:
      return metrics::kFleetBanLoopback;
    case Refusal::kUnspecified:
      return metrics::kFleetBanUnspecified;
    case Refusal::kLinkLocal:
      return metrics::kFleetBanLinkLocal;
    case Refusal::kMulticast:
      return metrics::kFleetBanMulticast;
    case Refusal::kOwnAddress:
      return metrics::kFleetBanOwnAddress;
    case Refusal::kTrustedProxy:
      return metrics::kFleetBanTrustedProxy;
    case Refusal::kAllowListed:
      return metrics::kFleetBanAllowListed;
    case Refusal::kTooWide:
    case Refusal::kBelowThreshold:
    case Refusal::kNone:
      break;
  }
  return metrics::kFleetBanTooWide;
}

}  // namespace

FleetBanVerdict FleetBanGate::check(const Result<http::StreamReport>& entry,
                                    const FleetBanRules& rules, const std::vector<Cidr>& own,
                                    int64_t now_ms, bool read_back) {
  if (!read_back) read_back_.clear();  // the read-back is over: live records come in order
  FleetBanVerdict verdict;
  if (!entry) return refused(verdict, metrics::kFleetBanMalformed, entry.error().message);
  const http::StreamReport& signed_entry = *entry;
  // not trusted until the signature is checked: kept printable
  verdict.publisher = printable(signed_entry.reporter, 80);
  if (!http::streamReportSigned(rules.secret, signed_entry)) {
    return refused(verdict, metrics::kFleetBanForged,
                   "its signature does not match: not signed with this fleet's secret (give "
                   "every host the same fleet.bans.secret_file)");
  }
  if (seen_.contains(signed_entry.mac)) {
    return refused(verdict, metrics::kFleetBanReplayed,
                   "the same record was read before (a copy added again)");
  }
  const int64_t max_ban_ms = static_cast<int64_t>(rules.max_ban_ns / 1'000'000);
  const int64_t skew_ms = http::kReportClockSkewMs;
  if (signed_entry.time_ms > now_ms + skew_ms) {
    return refused(verdict, metrics::kFleetBanStale,
                   "it was signed " + std::to_string(signed_entry.time_ms - now_ms) +
                       " ms ahead of Redis's clock (synchronise the hosts' clocks, e.g. NTP)");
  }
  if (signed_entry.time_ms < now_ms - max_ban_ms - skew_ms) {
    return refused(verdict, metrics::kFleetBanStale,
                   "it was signed " + std::to_string(now_ms - signed_entry.time_ms) +
                       " ms ago, longer than fleet.bans.max_ban (a replayed record, or clocks "
                       "out of step)");
  }
  // Remembered from here on, for as long as a copy could pass the time checks above.
  const int64_t forget_at = signed_entry.time_ms + max_ban_ms + 2 * skew_ms;
  if (forget_at <= evicted_through_) {
    return refused(verdict, metrics::kFleetBanReplayed,
                   "signed no later than a record forgotten to keep the " +
                       std::to_string(kMaxRemembered) +
                       " most recent ones: it may be a copy added again (re-sign it: floodgate "
                       "ban add or ban del --config)");
  }
  if (seen_.size() >= kMaxRemembered) {
    evicted_through_ = std::max(evicted_through_, seen_by_forget_.begin()->first);
    seen_.erase(seen_by_forget_.begin()->second);
    seen_by_forget_.erase(seen_by_forget_.begin());
  }
  seen_.emplace(signed_entry.mac, forget_at);
  seen_by_forget_.emplace(forget_at, signed_entry.mac);
  while (!seen_by_forget_.empty() && seen_by_forget_.begin()->first < now_ms) {
    seen_.erase(seen_by_forget_.begin()->second);
    seen_by_forget_.erase(seen_by_forget_.begin());
  }

  if (report::isLiftRecord(signed_entry.line)) {
    return checkLift(std::move(verdict), signed_entry, rules, now_ms, read_back);
  }
  return checkBan(std::move(verdict), signed_entry, rules, own, now_ms, read_back);
}

FleetBanVerdict FleetBanGate::checkBan(FleetBanVerdict verdict, const http::StreamReport& entry,
                                       const FleetBanRules& rules, const std::vector<Cidr>& own,
                                       int64_t now_ms, bool read_back) {
  const int64_t max_ban_ms = static_cast<int64_t>(rules.max_ban_ns / 1'000'000);
  const int64_t skew_ms = http::kReportClockSkewMs;
  auto record = report::parseBanRecord(entry.line);
  if (!record) return refused(verdict, metrics::kFleetBanMalformed, record.error().message);
  verdict.record = *record;
  const std::string address = record->address.toString();
  if (record->expires_ms <= now_ms) {
    verdict.result = metrics::kFleetBanExpired;  // read back after its end: nothing to do
    return verdict;
  }
  const int64_t left_ms = record->expires_ms - now_ms;
  if (left_ms > max_ban_ms + skew_ms) {
    return refused(verdict, metrics::kFleetBanTooLong,
                   "the ban of " + address + " ends in " +
                       formatDuration(static_cast<uint64_t>(left_ms) * 1'000'000) +
                       ", beyond fleet.bans.max_ban (" + formatDuration(rules.max_ban_ns) + ")");
  }
  const Refusal refusal = addressRefusal(
      record->address,
      {rules.widest_ipv4, rules.widest_ipv6, rules.allow, rules.trusted_proxies, own});
  if (refusal != Refusal::kNone) {
    const metrics::FleetBanResult result = resultOf(refusal);
    // the operator's own choice: counted, not worth a warning
    if (result == metrics::kFleetBanAllowListed) {
      verdict.result = result;
      return verdict;
    }
    return refused(verdict, result,
                   address + " is never banned from the fleet (" +
                       metrics::kFleetBanResultNames[result] + ")");
  }
  if (read_back) {
    auto mark = read_back_.find(address);
    if (mark != read_back_.end() && (mark->second & kLifted)) {
      verdict.result = metrics::kFleetBanSuperseded;  // lifted later in the stream
      return verdict;
    }
    if (mark != read_back_.end()) {
      mark->second |= kBanStands;
    } else if (read_back_.size() < kMaxReadBackPrefixes) {
      read_back_.emplace(address, kBanStands);
    }  // else applied unremembered: an older lift of it then lifts nothing (see checkLift)
  }
  verdict.result = metrics::kFleetBanApplied;
  verdict.ban_ns = static_cast<uint64_t>(std::min(left_ms, max_ban_ms)) * 1'000'000;
  return verdict;
}

FleetBanVerdict FleetBanGate::checkLift(FleetBanVerdict verdict, const http::StreamReport& entry,
                                        const FleetBanRules& rules, int64_t now_ms,
                                        bool read_back) {
  auto record = report::parseLiftRecord(entry.line);
  if (!record) return refused(verdict, metrics::kFleetBanMalformed, record.error().message);
  verdict.lift = true;
  verdict.record.address = record->address;
  verdict.record.nonce = record->nonce;
  const std::string address = record->address.toString();
  // Exactly the prefix named, as `ban del` lifts: never a ban inside or around it, so one
  // record cannot clear a host's table. A prefix no fleet ban can have is refused the same
  // way a ban of it is.
  const int widest = record->address.family == Family::kV4 ? rules.widest_ipv4 : rules.widest_ipv6;
  if (record->address.prefix < widest) {
    return refused(verdict, metrics::kFleetBanTooWide,
                   "a lift of " + address + ", wider than the widest prefix the fleet bans (/" +
                       std::to_string(widest) + ")");
  }
  if (read_back) {
    auto mark = read_back_.find(address);
    if (mark == read_back_.end()) {
      if (read_back_.size() >= kMaxReadBackPrefixes) {
        // a newer ban of it may have gone unremembered: lifting could undo that ban
        return refused(verdict, metrics::kFleetBanFailed,
                       "read back past the " + std::to_string(kMaxReadBackPrefixes) +
                           " prefixes a start keeps track of, the lift of " + address +
                           " is not applied here (lift it again: floodgate ban del --config)");
      }
      read_back_.emplace(address, kLifted);
    } else {
      const bool newer_lift = mark->second & kLifted;
      const bool ban_stands = mark->second & kBanStands;
      mark->second |= kLifted;  // bans older than this lift are superseded too
      if (newer_lift || ban_stands) {
        verdict.result = metrics::kFleetBanSuperseded;
        return verdict;
      }
    }
  }
  verdict.result = metrics::kFleetBanLifted;
  // Read back, the lift is the newest record of its prefix in the stream, but a ban this
  // host started on its own since (not shared, so not in the stream) is newer still.
  if (read_back && entry.time_ms < now_ms) {
    verdict.lift_age_ns = static_cast<uint64_t>(now_ms - entry.time_ms) * 1'000'000;
  }
  return verdict;
}

}  // namespace floodgate::daemon
