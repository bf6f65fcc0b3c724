// SPDX-License-Identifier: MIT
// StreamReportReader: the offender reports a fleet's services add to a Redis stream
// (http.escalate.redis_stream), read by a StreamTail (stream_tail.h) and handed to the
// daemon's poll loop. On start it reads back one ban time, so a restarted controller applies
// the bans its fleet still holds. Entries not signed with the fleet's secret, signed too long
// ago, or seen before (a copy added again) come out as unauthorised reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/replay_memory.h"
#include "daemon/report_listener.h"
#include "daemon/stream_tail.h"
#include "floodgate/common/result.h"
#include "floodgate/redis/client.h"

namespace floodgate::daemon {

struct ReportStreamSource {
  http::redis::ClientOptions client;
  std::string stream;
  std::string secret;
  uint64_t lookback_ns = 0;  // how far back to read on start (the ban time)

  bool operator==(const ReportStreamSource& other) const;
};

class StreamReportReader {
 public:
  static constexpr size_t kCapacity = StreamTail::kCapacity;
  // Reports remembered at most, as FleetBanGate's records: a secret holder adding signed
  // reports without end no longer grows the daemon without end.
  static constexpr size_t kMaxRemembered = 200'000;

  static Result<std::unique_ptr<StreamReportReader>> start(ReportStreamSource source);
  // See StreamTail: stop() asks its thread to end, stopped() says it has.
  void stop() { tail_->stop(); }
  bool stopped() const { return tail_->stopped(); }

  const ReportStreamSource& source() const { return source_; }
  // Readable while reports wait.
  int fd() const { return tail_->fd(); }
  // The reports waiting, at most `max`; never blocks.
  std::vector<ReceivedReport> drain(size_t max);
  // The reports remembered against copies.
  size_t remembered() const { return seen_.size(); }

 private:
  StreamReportReader(ReportStreamSource source, std::unique_ptr<StreamTail> tail)
      : source_(std::move(source)), tail_(std::move(tail)) {}
  // One entry as the daemon's report: parsed, signature and time checked, not seen before.
  ReceivedReport receive(const TailEntry& entry);

  ReportStreamSource source_;
  std::unique_ptr<StreamTail> tail_;
  // MACs of the reports read, for refusing a copy added again, until a copy of one is
  // refused as too old anyway; at most kMaxRemembered (see ReplayMemory).
  ReplayMemory seen_{kMaxRemembered};
};

}  // namespace floodgate::daemon
