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
    case Refusal::kService:
      return metrics::kFleetBanService;
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

metrics::FleetBanResult fleetBanAddressResult(const Cidr& address, const FleetBanRules& rules,
                                              const std::vector<Cidr>& own) {
  const Refusal refusal =
      addressRefusal(address, {rules.widest_ipv4, rules.widest_ipv6, rules.allow,
                               rules.trusted_proxies, own, rules.services});
  return refusal == Refusal::kNone ? metrics::kFleetBanApplied : resultOf(refusal);
}

FleetBanVerdict FleetBanGate::check(const Result<http::StreamReport>& entry,
                                    const FleetBanRules& rules, const std::vector<Cidr>& own,
                                    int64_t now_ms) {
  FleetBanVerdict verdict;
  verdict.read_ms = now_ms;
  if (!entry) return refused(verdict, metrics::kFleetBanMalformed, entry.error().message);
  const http::StreamReport& signed_entry = *entry;
  // not trusted until the signature is checked: kept printable
  verdict.publisher = printable(signed_entry.reporter, 80);
  if (!http::streamReportSigned(rules.secret, signed_entry)) {
    return refused(verdict, metrics::kFleetBanForged,
                   "its signature does not match: not signed with this fleet's secret (give "
                   "every host the same fleet.bans.secret_file)");
  }
  if (seen_.remembers(signed_entry.mac)) {
    return refused(verdict, metrics::kFleetBanReplayed,
                   "the same record was read before (a copy added again)");
  }
  const int64_t max_ban_ms = static_cast<int64_t>(rules.max_ban_ns / 1'000'000);
  const int64_t skew_ms = http::kReportClockSkewMs;
  // A raised max_ban lets older records through the time check below, among them ones read
  // and forgotten under the old one: a lift read again as new would free a prefix the fleet
  // banned after it. The memory is lengthened and refuses what it may have forgotten; a
  // lowered one shortens it again, so the raise undone refuses nothing new.
  if (max_ban_ms_ >= 0) seen_.shift(max_ban_ms - max_ban_ms_, now_ms);
  max_ban_ms_ = max_ban_ms;
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
  // For as long as a copy could pass the time checks above, a record dated ahead counted from
  // a moment after it was read (ReplayMemory::forgetAt).
  const int64_t forget_at = ReplayMemory::forgetAt(signed_entry.time_ms, now_ms, max_ban_ms);
  if (seen_.pastDropped(forget_at)) {
    return refused(verdict, metrics::kFleetBanReplayed,
                   "signed no later than a record this host may have read and forgotten (to "
                   "keep the " +
                       std::to_string(kMaxRemembered) +
                       " most recent ones, or under a shorter fleet.bans.max_ban): it may be a "
                       "copy added again (re-sign it: floodgate ban add or ban del --config)");
  }
  verdict.signed_ms = signed_entry.time_ms;
  verdict = report::isLiftRecord(signed_entry.line)
                ? checkLift(std::move(verdict), signed_entry, rules, now_ms)
                : checkBan(std::move(verdict), signed_entry, rules, own, now_ms);
  if (mayApplyLater(verdict.result)) seen_.remember(signed_entry.mac, forget_at, now_ms);
  return verdict;
}

bool FleetBanGate::mayApplyLater(metrics::FleetBanResult result) {
  return result != metrics::kFleetBanMalformed && result != metrics::kFleetBanExpired;
}

FleetBanVerdict FleetBanGate::checkBan(FleetBanVerdict verdict, const http::StreamReport& entry,
                                       const FleetBanRules& rules, const std::vector<Cidr>& own,
                                       int64_t now_ms) {
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
  if (const metrics::FleetBanResult result = fleetBanAddressResult(record->address, rules, own);
      result != metrics::kFleetBanApplied) {
    // the operator's own choice: counted, not worth a warning
    if (result == metrics::kFleetBanAllowListed) {
      verdict.result = result;
      return verdict;
    }
    return refused(verdict, result,
                   address + " is never banned from the fleet (" +
                       metrics::kFleetBanResultNames[result] + ")");
  }
  verdict.result = metrics::kFleetBanApplied;
  verdict.ban_ns = static_cast<uint64_t>(std::min(left_ms, max_ban_ms)) * 1'000'000;
  return verdict;
}

FleetBanVerdict FleetBanGate::checkLift(FleetBanVerdict verdict, const http::StreamReport& entry,
                                        const FleetBanRules& rules, int64_t now_ms) {
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
  verdict.result = metrics::kFleetBanLifted;
  // A ban this host started on its own since the lift was signed (not shared, so not in the
  // stream) is newer than it: read back at a start, or late after Redis was out of reach.
  if (entry.time_ms < now_ms) {
    verdict.lift_age_ns = static_cast<uint64_t>(now_ms - entry.time_ms) * 1'000'000;
  }
  return verdict;
}

bool FleetBanReplay::full(const FleetBanVerdict& verdict) const {
  return kept_.size() >= kMaxPrefixes && !kept_.contains(verdict.record.address.toString());
}

size_t FleetBanReplay::add(FleetBanVerdict verdict, int64_t now_ms) {
  Kept& kept = kept_[verdict.record.address.toString()];
  // `a` signed before `b` whatever the signers' clocks say
  auto signedBefore = [](const FleetBanVerdict& a, const FleetBanVerdict& b) {
    return a.signed_ms + http::kReportClockSkewMs < b.signed_ms;
  };
  if (verdict.lift) {
    if (kept.lift && signedBefore(verdict, kept.lift->verdict)) {
      return 1;  // an older lift than the one kept, which lifts all it would
    }
    kept.order = next_++;
    size_t superseded = kept.lift.has_value();
    // lifts the ban before it, but not one signed after it, read first
    if (kept.ban && !signedBefore(verdict, kept.ban->verdict)) {
      ++superseded;
      kept.ban.reset();
    }
    kept.lift = Read{std::move(verdict), now_ms};
    return superseded;
  }
  if (kept.lift && signedBefore(verdict, kept.lift->verdict)) {
    return 1;  // a ban the kept lift lifted, read after it
  }
  kept.order = next_++;
  size_t superseded = 0;
  if (kept.ban && kept.ban->verdict.record.expires_ms >= verdict.record.expires_ms) {
    return 1;  // a ban is only ever extended: the longer one stands
  }
  superseded += kept.ban.has_value();
  kept.ban = Read{std::move(verdict), now_ms};
  return superseded;
}

std::vector<FleetBanVerdict> FleetBanReplay::take(int64_t now_ms) {
  std::vector<std::pair<uint64_t, Kept*>> ordered;
  for (auto& [prefix, kept] : kept_) ordered.emplace_back(kept.order, &kept);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<FleetBanVerdict> out;
  for (auto& [order, kept] : ordered) {
    if (kept->lift) {
      FleetBanVerdict& lift = kept->lift->verdict;
      if (now_ms > kept->lift->now_ms) {
        lift.lift_age_ns += static_cast<uint64_t>(now_ms - kept->lift->now_ms) * 1'000'000;
      }
      out.push_back(std::move(lift));
    }
    if (kept->ban) {
      FleetBanVerdict& ban = kept->ban->verdict;
      const uint64_t since_ns = now_ms > kept->ban->now_ms
                                    ? static_cast<uint64_t>(now_ms - kept->ban->now_ms) * 1'000'000
                                    : 0;
      ban.ban_ns = ban.ban_ns > since_ns ? ban.ban_ns - since_ns : 0;
      out.push_back(std::move(ban));
    }
  }
  kept_.clear();
  return out;
}

}  // namespace floodgate::daemon
