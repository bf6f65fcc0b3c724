// SPDX-License-Identifier: MIT
// EscalationPolicy: from a received report to what to do about it.
#include "daemon/escalation_policy.h"

#include <iterator>
#include <optional>
#include <utility>

#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {
namespace {

EscalationDecision counted(metrics::EscalationResult result) { return {result, 0, ""}; }

EscalationDecision refused(metrics::EscalationResult result, std::string why) {
  return {result, 0, std::move(why)};
}

// How many bans a minute the quotas of `received` allow: its reporter's, the stream's and its
// network's.
struct QuotaLimits {
  int64_t reporter;
  int64_t stream;
  int64_t network;
};

QuotaLimits quotaLimits(const ReceivedReport& received, const report::EscalateConfig& escalate) {
  const QuotaLimits live{escalate.max_bans_per_minute, escalate.max_stream_bans_per_minute,
                         escalate.max_bans_per_network_per_minute};
  if (!received.replayed) return live;
  return {replayPerMinute(live.reporter, escalate.ban_ns),
          replayPerMinute(live.stream, escalate.ban_ns),
          replayPerMinute(live.network, escalate.ban_ns)};
}

// The quotas of `received`, its reporter's, the stream's and its network's: a start's replay
// has its own.
template <class Memory>  // EscalationMemory, const or not
auto quotasOf(const ReceivedReport& received, Memory& memory) {
  struct Quotas {
    decltype(&memory.quota) reporter, stream, network;
  };
  return received.replayed ? Quotas{&memory.replay_quota, &memory.replay_stream_quota,
                                    &memory.replay_network_quota}
                           : Quotas{&memory.quota, &memory.stream_quota, &memory.network_quota};
}

// The key of `received`'s network in the network quotas.
std::string networkKey(const ReceivedReport& received) {
  return reportNetwork(received.report->address).toString();
}

}  // namespace

int64_t replayPerMinute(int64_t per_minute, uint64_t ban_ns) {
  constexpr uint64_t kMinuteNs = 60'000'000'000ULL;
  return per_minute * static_cast<int64_t>((ban_ns + kMinuteNs - 1) / kMinuteNs + 1);
}

void EscalationMemory::forgetEnded(std::chrono::steady_clock::time_point now) {
  if (now < next_forget) return;
  next_forget = now + std::chrono::seconds(1);
  for (auto it = banned_until.begin(); it != banned_until.end();) {
    it = now >= it->second ? banned_until.erase(it) : std::next(it);
  }
}

void LiftMemory::note(const std::string& prefix, int64_t signed_ms, int64_t forget_before_ms) {
  auto [it, added] = signed_ms_.emplace(prefix, signed_ms);
  if (!added && it->second < signed_ms) {
    by_signed_.erase({it->second, prefix});
    it->second = signed_ms;
    added = true;
  }
  if (added) by_signed_.emplace(signed_ms, prefix);
  while (!by_signed_.empty() &&
         (by_signed_.begin()->first < forget_before_ms || by_signed_.size() > kMaxLifts)) {
    signed_ms_.erase(by_signed_.begin()->second);
    by_signed_.erase(by_signed_.begin());
  }
}

std::optional<int64_t> LiftMemory::signedAt(const std::string& prefix) const {
  auto it = signed_ms_.find(prefix);
  if (it == signed_ms_.end()) return std::nullopt;
  return it->second;
}

void EscalationMemory::noteLift(const Cidr& address, int64_t signed_ms, int64_t read_ms,
                                uint64_t ban_ns) {
  // A report bans only while younger than the ban time on its Redis's clock (its age,
  // decideEscalation); one signed before a lift signed more than that before `read_ms` is over
  // by the time it is read, if the report stream's Redis clock is not behind the fleet's by
  // more than twice the skew: each is trusted within the skew of the hosts' clocks, so the
  // two are within twice of it. Such a lift refuses nothing a ban would not.
  const int64_t keep_ms = static_cast<int64_t>(ban_ns / 1'000'000) + 2 * http::kReportClockSkewMs;
  lifts.note(address.toString(), signed_ms, read_ms - keep_ms);
}

EscalationDecision decideEscalation(const ReceivedReport& received, const EscalationConfig& config,
                                    const std::vector<Cidr>& own, const EscalationMemory& memory,
                                    std::chrono::steady_clock::time_point now) {
  if (received.over_socket && !config.access.allows(received.uid, received.gid)) {
    return refused(metrics::kEscalationUnauthorised,
                   "uid " + std::to_string(received.uid) +
                       " is not root and not in http.escalate.reporter_users or reporter_groups");
  }
  if (!received.report) {
    return refused(
        received.unauthorised ? metrics::kEscalationUnauthorised : metrics::kEscalationInvalid,
        received.report.error().message);
  }
  const uint64_t ban_time_ns = config.escalate.ban_ns;
  if (received.age_ns >= ban_time_ns) {  // read from the stream's past: its ban is over
    return counted(metrics::kEscalationExpired);
  }
  const std::string text = received.report->address.toString();
  static constexpr struct {
    Refusal refusal;
    metrics::EscalationResult result;
    const char* why;
  } kRefusals[] = {
      {Refusal::kLoopback, metrics::kEscalationLoopback, "a loopback address"},
      {Refusal::kUnspecified, metrics::kEscalationUnspecified, "an unspecified address"},
      {Refusal::kLinkLocal, metrics::kEscalationLinkLocal, "a link-local address"},
      {Refusal::kMulticast, metrics::kEscalationMulticast, "a multicast or broadcast address"},
      {Refusal::kOwnAddress, metrics::kEscalationOwnAddress, "an address of this host"},
      {Refusal::kTrustedProxy, metrics::kEscalationTrustedProxy, "inside http.trusted_proxies"},
      {Refusal::kService, metrics::kEscalationService,
       "a Redis server of this config (http.store, fleet.bans)"},
      {Refusal::kAllowListed, metrics::kEscalationAllowListed, "inside the allow list"},
      {Refusal::kTooWide, metrics::kEscalationTooWide,
       "a prefix wider than a client is keyed by (IPv4 /32, IPv6 http.ipv6_prefix, NAT64 "
       "64:ff9b::/96 /128)"},
      {Refusal::kBelowThreshold, metrics::kEscalationBelowThreshold,
       "fewer rejections or a longer window than http.escalate asks for"},
  };
  const Refusal refusal = refusalFor(*received.report, config.rules, own);
  for (const auto& r : kRefusals) {
    if (r.refusal != refusal) continue;
    // the operator's own choice: counted, not worth a warning
    if (r.result == metrics::kEscalationAllowListed) return counted(r.result);
    return refused(r.result, text + " is " + r.why);
  }
  auto banned = memory.banned_until.find(text);
  if (banned != memory.banned_until.end() && now < banned->second) {
    return counted(metrics::kEscalationRepeat);
  }
  // A socket's report is made now, after every lift read. One from the stream signed before
  // the fleet's last lift of its prefix (a start replays them) would ban again what the
  // operator lifted: counted, not logged, as a restart meets them every time.
  const std::optional<int64_t> lifted = memory.lifts.signedAt(text);
  if (!received.over_socket && lifted && received.signed_ms < *lifted) {
    return counted(metrics::kEscalationLifted);
  }
  const QuotaLimits limits = quotaLimits(received, config.escalate);
  const auto quotas = quotasOf(received, memory);
  const std::string replay = received.replayed ? " of a start's replay" : "";
  const std::string over = received.replayed ? " over one ban time and a minute" : "";
  if (!quotas.reporter->allows(received.reporter, limits.reporter, now)) {
    return refused(metrics::kEscalationRateLimited,
                   "more than " + std::to_string(limits.reporter) + " bans in a minute" + replay +
                       " (http.escalate.max_bans_per_minute" + over + ")");
  }
  if (!received.over_socket && !quotas.stream->allows(kStreamQuotaKey, limits.stream, now)) {
    return refused(metrics::kEscalationRateLimited,
                   "more than " + std::to_string(limits.stream) + " bans in a minute" + replay +
                       " from the report stream as a whole "
                       "(http.escalate.max_stream_bans_per_minute" +
                       over + ")");
  }
  const std::string network = networkKey(received);
  if (!quotas.network->allows(network, limits.network, now)) {
    return refused(metrics::kEscalationRateLimited,
                   "more than " + std::to_string(limits.network) + " bans in a minute" + replay +
                       " of clients in " + network +
                       " (http.escalate.max_bans_per_network_per_minute" + over + ")");
  }
  // what is left of the ban time: all of it, unless read from the stream's past
  return {metrics::kEscalationBanned, ban_time_ns - received.age_ns, ""};
}

void chargeBan(const ReceivedReport& received, const EscalationConfig& config,
               EscalationMemory& memory, std::chrono::steady_clock::time_point now) {
  const QuotaLimits limits = quotaLimits(received, config.escalate);
  const auto quotas = quotasOf(received, memory);
  quotas.reporter->take(received.reporter, limits.reporter, now);
  if (!received.over_socket) quotas.stream->take(kStreamQuotaKey, limits.stream, now);
  quotas.network->take(networkKey(received), limits.network, now);
}

}  // namespace floodgate::daemon
