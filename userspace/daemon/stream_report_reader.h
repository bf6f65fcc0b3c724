// SPDX-License-Identifier: MIT
// StreamReportReader: reads the offender reports a fleet's services add to a Redis stream
// (http.escalate.redis_stream) on a thread of its own, and hands them to the daemon's poll
// loop through an eventfd. Every controller reads the whole stream (no consumer group):
// each bans on its own interfaces. On start it reads back one ban time, so a restarted
// controller applies the bans its fleet still holds. Entries not signed with the fleet's
// secret, signed too long ago, or seen before (a copy added again) come out as unauthorised
// reports. Nothing it does blocks the poll loop: stop() only asks the thread to end.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/report_listener.h"
#include "floodgate/common/result.h"
#include "floodgate/redis/client.h"
#include "kernel/unique_fd.h"

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
  // Reports read but not yet drained at most; past it, reading waits (Redis keeps them).
  static constexpr size_t kCapacity = 4096;

  static Result<std::unique_ptr<StreamReportReader>> start(ReportStreamSource source);
  // Joins the thread: waits for the Redis call in progress (up to the client's timeout
  // plus half a second). Call stop() first and destroy it once stopped() to never wait.
  ~StreamReportReader();
  void stop() { stop_ = true; }
  bool stopped() const { return finished_; }
  StreamReportReader(const StreamReportReader&) = delete;
  StreamReportReader& operator=(const StreamReportReader&) = delete;

  const ReportStreamSource& source() const { return source_; }
  // Readable while reports wait.
  int fd() const { return event_.get(); }
  // The reports waiting, at most `max`; never blocks.
  std::vector<ReceivedReport> drain(size_t max);

 private:
  StreamReportReader(ReportStreamSource source, UniqueFd event);
  void run();
  // Reads one batch after last_id_ (blocking up to half a second for one to come).
  Status readOnce();
  void sleepUnlessStopped(int64_t ms);
  // One entry as the daemon's report: parsed, signature and time checked, not seen before.
  ReceivedReport receive(const std::string& id, const http::redis::Reply& fields, int64_t now_ms);

  ReportStreamSource source_;
  UniqueFd event_;
  http::redis::Client client_;
  std::string last_id_;  // empty until the start point is known
  // MACs of the entries read, by signed time, for refusing a copy added again; entries
  // older than the look-back are forgotten (a copy of one is refused as too old).
  std::map<std::string, int64_t> seen_;
  std::multimap<int64_t, std::string> seen_by_time_;
  std::mutex mutex_;
  std::deque<ReceivedReport> queue_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace floodgate::daemon
