// SPDX-License-Identifier: MIT
// StreamReportReader: the offender reports a fleet's services add to a Redis stream
// (http.escalate.redis_stream), read by a StreamTail (stream_tail.h) and handed to the
// daemon's poll loop. On start it reads back one ban time, so a restarted controller applies
// the bans its fleet still holds (at most the newest kReportStreamMaxLen entries), marked
// `replayed`. What each entry becomes is StreamReportGate's to say.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/report_listener.h"
#include "daemon/stream_report_gate.h"
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
  size_t remembered() const { return gate_.remembered(); }

 private:
  StreamReportReader(ReportStreamSource source, std::unique_ptr<StreamTail> tail)
      : source_(std::move(source)),
        tail_(std::move(tail)),
        gate_(source_.secret, source_.lookback_ns) {}

  ReportStreamSource source_;
  std::unique_ptr<StreamTail> tail_;
  StreamReportGate gate_;
  bool replay_over_ = false;  // the start's replay of the stream's past was read
};

}  // namespace floodgate::daemon
