// SPDX-License-Identifier: MIT
// FleetBans: publishing this host's bans and checking the fleet's.
#include "daemon/fleet_bans.h"

#include <chrono>

#include "daemon/log.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/text.h"
#include "floodgate/common/units.h"
#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {
namespace {

int64_t wallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<http::RedisReportQueue> queueFor(const config::FleetBansConfig& config) {
  return std::make_unique<http::RedisReportQueue>(http::reportClientOptions(config.redis),
                                                  config.stream, config.secret);
}

bool sameStream(const config::FleetBansConfig& a, const config::FleetBansConfig& b) {
  return a.enabled == b.enabled && a.redis == b.redis && a.stream == b.stream &&
         a.secret == b.secret && a.max_ban_ns == b.max_ban_ns && a.max_replay == b.max_replay;
}

// Sends `lines` to the stream and waits until Redis took them (two tries); an error of how
// many did not, then `what_failed`.
Status publishLines(const config::FleetBansConfig& config, const std::vector<std::string>& lines,
                    const std::string& what_failed) {
  auto queue = queueFor(config);
  for (const std::string& line : lines) queue->push(line);
  queue->close();  // sends what is queued, then the counts are final
  if (queue->sent() == lines.size()) return okStatus();
  return Error::failure(std::to_string(lines.size() - queue->sent()) + " of " +
                        std::to_string(lines.size()) + what_failed);
}

}  // namespace

report::BanRecord fleetBanRecord(const Cidr& address, uint64_t ban_ns, report::BanKind kind) {
  return {address, wallClockMs() + static_cast<int64_t>(ban_ns / 1'000'000), kind,
          report::banNonce()};
}

Status fleetShares(const config::FleetBansConfig& config, report::BanKind kind, uint64_t ban_ns) {
  const bool listed = (kind == report::BanKind::kManual && config.share_manual) ||
                      (kind == report::BanKind::kEscalation && config.share_escalation) ||
                      (kind == report::BanKind::kRule && config.share_rule);
  if (!config.enabled || !listed) {
    return Error::usage(std::string("fleet.bans.share does not list ") + report::banKindName(kind));
  }
  if (ban_ns == 0) {
    return Error::usage("a ban until removed is not shared: give it an end (--for)");
  }
  if (ban_ns > config.max_ban_ns) {
    return Error::usage("a ban longer than fleet.bans.max_ban (" +
                        formatDuration(config.max_ban_ns) +
                        ") is not shared: every host would "
                        "refuse it");
  }
  return okStatus();
}

Status publishFleetBans(const config::FleetBansConfig& config,
                        const std::vector<report::BanRecord>& records) {
  std::vector<std::string> lines;
  for (const report::BanRecord& record : records) lines.push_back(report::formatBanRecord(record));
  return publishLines(config, lines,
                      " bans did not reach redis stream " + config.stream +
                          " (the bans on this host stand; add them again once Redis is back to "
                          "share them)");
}

report::LiftRecord fleetLiftRecord(const Cidr& address) { return {address, report::banNonce()}; }

Status fleetLifts(const config::FleetBansConfig& config, const Cidr& address) {
  if (!config.enabled) return Error::usage("there is no fleet.bans to share the lift through");
  const bool v4 = address.family == Family::kV4;
  const int widest = v4 ? config.widest_ipv4 : config.widest_ipv6;
  if (address.prefix < widest) {
    return Error::usage("a lift of " + address.toString() +
                        " is not shared: no fleet ban is wider than fleet.bans." +
                        (v4 ? "widest_ipv4" : "widest_ipv6") + " (/" + std::to_string(widest) +
                        "), so every host would refuse it; lift the prefixes as they were banned");
  }
  return okStatus();
}

Status publishFleetLifts(const config::FleetBansConfig& config,
                         const std::vector<report::LiftRecord>& records) {
  std::vector<std::string> lines;
  for (const report::LiftRecord& record : records) {
    lines.push_back(report::formatLiftRecord(record));
  }
  return publishLines(config, lines,
                      " lifts did not reach redis stream " + config.stream +
                          " (the lifts on this host stand; lift them again once Redis is back "
                          "to share them)");
}

Status liftBans(const config::FleetBansConfig* config, const std::vector<Cidr>& cidrs,
                const std::function<Result<bool>(const Cidr&)>& lift_here, std::ostream& out) {
  std::vector<report::LiftRecord> shared;
  std::string failures;
  for (const Cidr& cidr : cidrs) {
    Result<bool> lifted = lift_here(cidr);
    if (!lifted) {
      failures += (failures.empty() ? "" : "\n") + std::string("could not lift ") +
                  cidr.toString() + ": " + lifted.error().message;
      continue;  // not shared: lift it again once this host can
    }
    out << (*lifted ? "unbanned " : "was not banned: ") << cidr.toString() << "\n";
    if (config) shared.push_back(fleetLiftRecord(cidr));
  }
  if (config && !shared.empty()) {
    Status published = publishFleetLifts(*config, shared);
    if (!published) {
      failures += (failures.empty() ? "" : "\n") + published.error().message;
    } else {
      out << "lift shared with the fleet through redis stream " << config->stream << "\n";
    }
  }
  if (failures.empty()) return okStatus();
  return Error::failure(failures);
}

void FleetBans::sync(const config::FleetBansConfig& config, const std::vector<Cidr>& allow,
                     const std::vector<Cidr>& trusted_proxies, const std::vector<Cidr>& services) {
  rules_ = {config.secret,   config.max_ban_ns, config.widest_ipv4, config.widest_ipv6, allow,
            trusted_proxies, services};
  const bool same = sameStream(config, config_);
  config_ = config;
  if (same && (tail_ || !config.enabled)) return;
  if (tail_) logInfo("no longer following fleet bans on redis stream " + tail_->source().stream);
  retireTail();
  closeQueue();
  if (!config.enabled) return;
  auto tail =
      StreamTail::start({http::reportClientOptions(config.redis), config.stream, config.max_ban_ns,
                         "fleet bans", static_cast<size_t>(config.max_replay)});
  if (!tail) {
    logError("fleet bans are off: " + tail.error().message);
    return;
  }
  tail_ = std::move(*tail);
  tail_started_ = Clock::now();
  replay_handed_ = false;
  replay_ = FleetBanReplay();  // of the stream followed before
  queue_ = queueFor(config);
}

std::optional<report::BanRecord> FleetBans::publish(report::BanKind kind, const Cidr& address,
                                                    uint64_t ban_ns) {
  if (!queue_ || !fleetShares(config_, kind, ban_ns)) return std::nullopt;
  // A rule's ban of an IPv4-mapped IPv6 source (::ffff:a.b.c.d) is of frames anyone can
  // send and the kernel drops; every host reads such a record as a.b.c.d's own ban (a
  // dual-stack socket's way of writing an IPv4 client), so a spoofed flood would ban it.
  if (kind == report::BanKind::kRule && mappedIpv4(address)) return std::nullopt;
  report::BanRecord record = fleetBanRecord(address, ban_ns, kind);
  if (!queue_->push(report::formatBanRecord(record))) return std::nullopt;
  return record;
}

std::vector<int> FleetBans::fds() const {
  if (!tail_) return {};
  return {tail_->fd()};
}

std::vector<FleetBanVerdict> FleetBans::drain(size_t max, Clock::time_point now) {
  std::erase_if(retired_tails_, [](const auto& tail) { return tail->stopped(); });
  std::vector<FleetBanVerdict> apply;
  if (!tail_) return apply;
  for (const TailEntry& entry : tail_->drain(max)) {
    if (entry.replay_end) {
      takeReplay(apply, entry.now_ms);
      replay_handed_ = true;
      continue;
    }
    FleetBanVerdict verdict = gate_.check(http::streamReportFromFields(entry.fields), rules_,
                                          own_addresses_.get(now), entry.now_ms);
    if (verdict.result == metrics::kFleetBanApplied || verdict.result == metrics::kFleetBanLifted) {
      if (entry.read_back) {
        if (replay_.full(verdict)) takeReplay(apply, entry.now_ms);
        received_[metrics::kFleetBanSuperseded] += replay_.add(std::move(verdict), entry.now_ms);
        continue;
      }
      apply.push_back(std::move(verdict));
      continue;  // counted once it is applied (or failed)
    }
    ++received_[verdict.result];
    if (verdict.why.empty()) continue;
    // a flood of one kind is one line per 10 s; the counter has every one
    auto held_back = refusal_logs_[verdict.result].admit(now);
    if (!held_back) continue;
    logWarning(std::string("event=fleet_ban_refused result=") +
               metrics::kFleetBanResultNames[verdict.result] + " entry=\"" +
               printable(entry.id, 40) + "\" publisher=\"" + verdict.publisher + "\" why=\"" +
               printable(verdict.why) + "\"" + heldBackNote(*held_back));
  }
  return apply;
}

void FleetBans::takeReplay(std::vector<FleetBanVerdict>& apply, int64_t now_ms) {
  for (FleetBanVerdict& verdict : replay_.take(now_ms)) {
    if (!verdict.lift && verdict.ban_ns == 0) {
      ++received_[metrics::kFleetBanExpired];  // over while the replay was read
      continue;
    }
    apply.push_back(std::move(verdict));
  }
}

void FleetBans::close() {
  retireTail();
  retired_tails_.clear();  // joins: the daemon is stopping
  closeQueue();
}

void FleetBans::closeQueue() {
  if (!queue_) return;
  queue_->close();
  published_before_ = published();
  queue_.reset();
}

void FleetBans::retireTail() {
  if (!tail_) return;
  tail_->stop();
  retired_tails_.push_back(std::move(tail_));
}

metrics::FleetBansPublished FleetBans::published() const {
  metrics::FleetBansPublished out = published_before_;
  if (queue_) {
    out.sent += queue_->sent();
    out.failed += queue_->errors();
    out.dropped += queue_->dropped();
  }
  return out;
}

}  // namespace floodgate::daemon
