// SPDX-License-Identifier: MIT
// Escalator: acts on offender reports as escalation_policy.h decides: bans the reported
// client on every held interface, counts every result (floodgate_http_escalations_total)
// and logs refusals, at most one line per 10 s of each kind. Not thread-safe: DaemonState
// calls it under its mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/escalation_policy.h"
#include "daemon/held_interfaces.h"
#include "daemon/log_throttle.h"
#include "daemon/report_listener.h"
#include "floodgate/common/cidr.h"
#include "metrics/exposition.h"

namespace floodgate::daemon {

class Escalator {
 public:
  using Clock = std::chrono::steady_clock;

  // What a config says about reports (what is remembered of earlier ones stays).
  EscalationConfig& config() { return config_; }
  // Bans the reported client on every one of `interfaces`, or counts (and maybe logs) why not.
  // How long the ban it started lasts; 0 when it started none.
  uint64_t handle(const ReceivedReport& received, HeldInterfaces& interfaces,
                  Clock::time_point now);
  // Forgets the bans escalations started that are over.
  void forgetEnded(Clock::time_point now);
  // Forgets the ban of `address`, lifted before its end: its next report bans it again.
  void forgetBan(const Cidr& address) { memory_.forgetBan(address); }
  // The fleet lifted `address` by a record signed at `signed_ms`, read when the fleet's Redis
  // said `read_ms`: reports signed before then no longer ban it (EscalationMemory::noteLift,
  // held for the ban time of the config applied).
  void noteLift(const Cidr& address, int64_t signed_ms, int64_t read_ms) {
    memory_.noteLift(address, signed_ms, read_ms, config_.escalate.ban_ns);
  }
  // How many reports led to each EscalationResult.
  const std::array<uint64_t, metrics::kEscalationResults>& counts() const { return counts_; }

 private:
  // Counts a report that is not acted on, and logs it (at most once per 10 s per kind).
  void refuse(metrics::EscalationResult result, const ReceivedReport& received,
              const std::string& why, Clock::time_point now);

  EscalationConfig config_;
  EscalationMemory memory_;
  HostAddresses own_addresses_;
  std::array<LogThrottle, metrics::kEscalationResults> refusal_logs_;
  std::array<uint64_t, metrics::kEscalationResults> counts_{};
};

}  // namespace floodgate::daemon
