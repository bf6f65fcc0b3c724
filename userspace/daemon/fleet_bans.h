// SPDX-License-Identifier: MIT
// FleetBans: the daemon's side of `fleet.bans`: it publishes the bans this host makes (the
// kinds fleet.bans.share lists) to the fleet's signed Redis stream, and reads every record
// of that stream (bans, and the lifts `floodgate ban del --config` publishes) through a
// StreamTail, each checked by a FleetBanGate. Publishing is on a thread of its own
// (RedisReportQueue, bounded); the bans and lifts read are handed back for the daemon to
// apply, so this part needs no interface and tests run it against Redis alone.
// A ban applied from the fleet is never published again: only bans this host started are.
// Not thread-safe: DaemonState calls it under its mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/fleet_bans_config.h"
#include "daemon/escalation_guard.h"
#include "daemon/fleet_ban_gate.h"
#include "daemon/log_throttle.h"
#include "daemon/stream_tail.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate/fleet/redis_report_queue.h"
#include "floodgate/report/ban_record.h"
#include "metrics/exposition.h"

namespace floodgate::daemon {

// The record of a ban of `address` for `ban_ns` from now on this host's clock, with a
// fresh nonce.
report::BanRecord fleetBanRecord(const Cidr& address, uint64_t ban_ns, report::BanKind kind);

// Whether `config` shares bans of `kind` lasting `ban_ns`, or why not (a ban until removed
// has no end to share; one longer than max_ban would be refused by every host).
Status fleetShares(const config::FleetBansConfig& config, report::BanKind kind, uint64_t ban_ns);

// For `floodgate ban add`: publishes `records` to the stream and waits until Redis took
// them (two tries). An error saying how many did not make it.
Status publishFleetBans(const config::FleetBansConfig& config,
                        const std::vector<report::BanRecord>& records);

// The record lifting every ban of exactly `address` across the fleet, with a fresh nonce.
report::LiftRecord fleetLiftRecord(const Cidr& address);

// Whether `config` shares a lift of `address`, or why not (fleet.bans off, or a prefix wider
// than any fleet ban, which every host would refuse).
Status fleetLifts(const config::FleetBansConfig& config, const Cidr& address);

// For `floodgate ban del --config`: publishes `records` as publishFleetBans does.
Status publishFleetLifts(const config::FleetBansConfig& config,
                         const std::vector<report::LiftRecord>& records);

// For `floodgate ban del`: lifts each of `cidrs` on this host with `lift_here` (whether it
// was banned here, or why it could not be lifted), saying which on `out`, and with a
// `config`, publishes the lift of every one lifted here or not banned here (the hosts that
// hold a ban need not include this one), even when another could not be lifted. An error
// of one line per CIDR not lifted here, and one when Redis did not take the lifts.
Status liftBans(const config::FleetBansConfig* config, const std::vector<Cidr>& cidrs,
                const std::function<Result<bool>(const Cidr&)>& lift_here, std::ostream& out);

class FleetBans {
 public:
  using Clock = std::chrono::steady_clock;
  // How long replayPending() holds at most: a Redis of fleet.bans out of reach at the start
  // must not hold the offender reports for as long as it is.
  static constexpr Clock::duration kReplayWait = std::chrono::seconds(60);

  // Matches `config` (disabled: neither publishes nor reads). `allow`, `trusted_proxies`
  // and `services` (the config's Redis servers) are never banned from the fleet. A changed stream,
  // server or secret starts reading again from max_ban back (a record read before is applied again
  // with its own end).
  void sync(const config::FleetBansConfig& config, const std::vector<Cidr>& allow,
            const std::vector<Cidr>& trusted_proxies, const std::vector<Cidr>& services);
  // Publishes a ban this host started, if fleet.bans.share lists its kind; never blocks.
  // The record sent, or nothing (not shared, or the send queue full: counted).
  std::optional<report::BanRecord> publish(report::BanKind kind, const Cidr& address,
                                           uint64_t ban_ns);
  // Readable while records wait.
  std::vector<int> fds() const;
  // Checks the records waiting, at most `max` (the rest wait); counts and logs the
  // refusals, and returns what to apply, in stream order as read: kFleetBanApplied (ban)
  // and kFleetBanLifted (lift every ban of the prefix) verdicts. Those of a start's replay
  // of the past come all at once when it is read (FleetBanReplay). Never blocks.
  std::vector<FleetBanVerdict> drain(size_t max, Clock::time_point now);
  // Whether the start's replay of the stream (since the stream followed last changed) is not
  // yet handed over by drain(), for at most kReplayWait: until then the lifts it holds are
  // not known, and the offender reports' own replay waits, lest it ban again what they lift.
  bool replayPending(Clock::time_point now) const {
    return tail_ && !replay_handed_ && now - tail_started_ < kReplayWait;
  }
  // What became of a verdict drain() returned: kFleetBanApplied or kFleetBanLifted, or
  // kFleetBanFailed when no interface took it.
  void count(metrics::FleetBanResult result) { ++received_[result]; }
  // The most fleet bans a ban table of one family holds (fleet.bans.max_entries).
  uint32_t maxEntries() const { return static_cast<uint32_t>(config_.max_entries); }
  // Stops publishing (what is queued is sent first, for at most one Redis timeout) and
  // reading.
  void close();

  const std::array<uint64_t, metrics::kFleetBanResults>& received() const { return received_; }
  metrics::FleetBansPublished published() const;

 private:
  void retireTail();
  // Hands what the replay of the past kept to `apply`, aged to `now_ms` (Redis's clock).
  void takeReplay(std::vector<FleetBanVerdict>& apply, int64_t now_ms);
  // Sends what is queued (for at most one Redis timeout), keeps its counts, and drops it.
  void closeQueue();

  config::FleetBansConfig config_;
  FleetBanRules rules_;
  FleetBanGate gate_;
  FleetBanReplay replay_;
  HostAddresses own_addresses_;
  std::unique_ptr<StreamTail> tail_;
  Clock::time_point tail_started_{};
  bool replay_handed_ = false;  // the replay of tail_'s start, by drain()
  // tails asked to stop, destroyed once their thread has ended, so the poll loop never
  // waits for a Redis call in progress
  std::vector<std::unique_ptr<StreamTail>> retired_tails_;
  std::unique_ptr<http::RedisReportQueue> queue_;
  metrics::FleetBansPublished published_before_;  // by queues closed since the start
  std::array<uint64_t, metrics::kFleetBanResults> received_{};
  std::array<LogThrottle, metrics::kFleetBanResults> refusal_logs_;
};

}  // namespace floodgate::daemon
