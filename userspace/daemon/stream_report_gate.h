// SPDX-License-Identifier: MIT
// StreamReportGate: what one entry of the offender report stream (http.escalate.redis_stream)
// becomes as the daemon's report, decided from the entry and Redis's clock alone, so that
// tests step the clock by hand: an entry not signed with the fleet's secret, signed too long
// ago, or read before (a copy added again) comes out as an unauthorised report. It remembers
// every signed, timely report that parses, to refuse its copies; it changes nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/replay_memory.h"
#include "daemon/report_listener.h"
#include "floodgate/common/result.h"
#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {

class StreamReportGate {
 public:
  // Reports remembered at most, as FleetBanGate's records: a secret holder adding signed
  // reports without end no longer grows the daemon without end.
  static constexpr size_t kMaxRemembered = 200'000;
  // `lookback_ns`: how old a report may be (the ban time), plus the clock skew.
  StreamReportGate(std::string secret, uint64_t lookback_ns)
      : secret_(std::move(secret)), lookback_ns_(lookback_ns) {}

  // The entry `id` (its fields as streamReportFromFields read them), read when Redis's clock
  // said `now_ms`, as the daemon's report: parsed, signature and time checked, not read
  // before. Entries come in the stream's order.
  ReceivedReport check(const std::string& id, const Result<http::StreamReport>& entry,
                       int64_t now_ms);

  // The reports remembered against copies.
  size_t remembered() const { return seen_.size(); }

 private:
  std::string secret_;
  uint64_t lookback_ns_;
  // MACs of the reports let through, for refusing a copy added again, until a copy of one is
  // refused as too old anyway; at most kMaxRemembered (see ReplayMemory). Also those the
  // guard refused when read: the guard is the config's (its allow list, trusted proxies), so
  // a copy re-added after the config changed must not ban what the original could not.
  ReplayMemory seen_{kMaxRemembered};
};

}  // namespace floodgate::daemon
