// SPDX-License-Identifier: MIT
// The stream reader's thread: XREAD BLOCK in a loop, with Redis's TIME read in the same
// round trip to age what it got; a lost Redis is logged once and retried every second.
#include "daemon/stream_report_reader.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>

#include "daemon/log.h"
#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {
namespace {

namespace redis = http::redis;

constexpr int64_t kBlockMs = 500;
constexpr int64_t kRetryMs = 1000;
constexpr int64_t kSliceMs = 100;
constexpr size_t kReadCount = 256;

// Redis's clock from a TIME reply ([seconds, microseconds]).
Result<int64_t> timeReplyMs(const redis::Reply& reply) {
  int64_t seconds = 0, micros = 0;
  if (reply.type != redis::Reply::Type::kArray || reply.elements.size() != 2 ||
      std::from_chars(reply.elements[0].str.data(),
                      reply.elements[0].str.data() + reply.elements[0].str.size(), seconds)
              .ec != std::errc() ||
      std::from_chars(reply.elements[1].str.data(),
                      reply.elements[1].str.data() + reply.elements[1].str.size(), micros)
              .ec != std::errc()) {
    return Error::failure("TIME did not answer with the time");
  }
  return seconds * 1000 + micros / 1000;
}

}  // namespace

ReceivedReport StreamReportReader::receive(const std::string& id, const redis::Reply& fields,
                                           int64_t now_ms) {
  ReceivedReport received;
  auto report = http::streamReportFromFields(fields);
  // the reporter field is not trusted until the signature is checked: keep it printable
  received.sender = "redis entry " + printable(id, 40) +
                    (report ? " from " + printable(report->reporter, 80) : "");
  if (!report) {
    received.report = report.error();
    return received;
  }
  const auto lookback_ms = static_cast<int64_t>(source_.lookback_ns / 1'000'000);
  Status checked = http::checkStreamReport(source_.secret, *report, now_ms, lookback_ms);
  if (checked && seen_.count(report->mac) != 0) {
    checked = Error::usage("the same report was read before (a copy added again)");
  }
  if (!checked) {
    received.unauthorised = true;
    received.report = checked.error();
    return received;
  }
  // remember it for as long as a copy could pass the time check
  seen_.emplace(report->mac, report->time_ms);
  seen_by_time_.emplace(report->time_ms, report->mac);
  const int64_t forget_before = now_ms - lookback_ms - 2 * http::kReportClockSkewMs;
  while (!seen_by_time_.empty() && seen_by_time_.begin()->first < forget_before) {
    seen_.erase(seen_by_time_.begin()->second);
    seen_by_time_.erase(seen_by_time_.begin());
  }
  received.report = parseReport(report->line);
  // the quota counts a host, not each of its processes (a restart or a new worker is a new PID)
  const std::string& reporter = report->reporter;
  received.reporter = printable(reporter.substr(0, reporter.rfind(':')), 80);
  // Under a second it is a report just made: hosts' clocks agree no better than that, and
  // the ban is the configured one. Older, it was read from the stream's past.
  if (now_ms - report->time_ms >= 1000) {
    received.age_ns = static_cast<uint64_t>(now_ms - report->time_ms) * 1'000'000;
  }
  return received;
}

bool ReportStreamSource::operator==(const ReportStreamSource& other) const {
  return client.seeds == other.client.seeds && client.cluster == other.client.cluster &&
         stream == other.stream && secret == other.secret && lookback_ns == other.lookback_ns;
}

Result<std::unique_ptr<StreamReportReader>> StreamReportReader::start(ReportStreamSource source) {
  UniqueFd event(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event.valid()) {
    return Error::failure(std::string("cannot make an eventfd: ") + std::strerror(errno));
  }
  std::unique_ptr<StreamReportReader> reader(
      new StreamReportReader(std::move(source), std::move(event)));
  reader->thread_ = std::thread([r = reader.get()] { r->run(); });
  return reader;
}

StreamReportReader::StreamReportReader(ReportStreamSource source, UniqueFd event)
    : source_(std::move(source)), event_(std::move(event)), client_(source_.client) {}

StreamReportReader::~StreamReportReader() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<ReceivedReport> StreamReportReader::drain(size_t max) {
  std::vector<ReceivedReport> out;
  std::lock_guard lock(mutex_);
  uint64_t ignored = 0;
  if (read(event_.get(), &ignored, sizeof(ignored)) < 0) {
    // EAGAIN: nothing was signalled; the queue may still hold what the last drain left
  }
  while (!queue_.empty() && out.size() < max) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (!queue_.empty()) {
    const uint64_t one = 1;  // more wait: stay readable for the next poll
    if (write(event_.get(), &one, sizeof(one)) < 0) {
    }
  }
  return out;
}

void StreamReportReader::sleepUnlessStopped(int64_t ms) {
  for (int64_t slept = 0; slept < ms && !stop_; slept += kSliceMs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));
  }
}

void StreamReportReader::run() {
  bool failing = false;
  struct Finished {
    std::atomic<bool>& flag;
    ~Finished() { flag = true; }
  } finished{finished_};
  while (!stop_) {
    bool full = false;
    {
      std::lock_guard lock(mutex_);
      full = queue_.size() >= kCapacity;
    }
    if (full) {  // the poll loop is behind: leave the rest in Redis for now
      sleepUnlessStopped(kSliceMs);
      continue;
    }
    Status read = readOnce();
    if (read && failing) {
      logInfo("reading offender reports from redis stream " + source_.stream + " again");
    } else if (!read && !failing) {
      logWarning("cannot read offender reports from redis stream " + source_.stream +
                 " (bans from the fleet wait; retrying every second): " + read.error().message);
    }
    failing = !read;
    if (failing) sleepUnlessStopped(kRetryMs);
  }
}

Status StreamReportReader::readOnce() {
  const std::string& stream = source_.stream;
  auto deadline = [this](int64_t extra_ms) {
    return std::chrono::steady_clock::now() +
           std::chrono::milliseconds(source_.client.timeout_ms + extra_ms);
  };
  if (last_id_.empty()) {
    auto time = client_.run({{stream, {"TIME"}}}, deadline(0));
    if (!time) return time.error();
    auto now_ms = timeReplyMs((*time)[0]);
    if (!now_ms) return now_ms.error();
    const int64_t lookback_ms = static_cast<int64_t>(source_.lookback_ns / 1'000'000);
    last_id_ = std::to_string(std::max<int64_t>(0, *now_ms - lookback_ms)) + "-0";
    logInfo("taking offender reports from redis stream " + stream + " (signed by the fleet)");
  }
  auto replies = client_.run({{stream,
                               {"XREAD", "COUNT", std::to_string(kReadCount), "BLOCK",
                                std::to_string(kBlockMs), "STREAMS", stream, last_id_}},
                              {stream, {"TIME"}}},
                             deadline(kBlockMs));
  if (!replies) return replies.error();
  if ((*replies)[0].isError()) return Error::failure((*replies)[0].str);
  const redis::Reply& result = (*replies)[0];
  auto now_ms = timeReplyMs((*replies)[1]);
  if (!now_ms) return now_ms.error();
  if (result.type != redis::Reply::Type::kArray || result.elements.empty()) return okStatus();
  // [[stream, [[id, [field, value, ...]], ...]]]
  const redis::Reply& entries =
      result.elements[0].elements.size() == 2 ? result.elements[0].elements[1] : redis::Reply{};
  std::vector<ReceivedReport> batch;
  for (const redis::Reply& entry : entries.elements) {
    if (entry.elements.size() != 2) continue;
    const std::string& id = entry.elements[0].str;
    last_id_ = id;
    batch.push_back(receive(id, entry.elements[1], *now_ms));
  }
  if (batch.empty()) return okStatus();
  {
    std::lock_guard lock(mutex_);
    for (ReceivedReport& received : batch) queue_.push_back(std::move(received));
  }
  const uint64_t one = 1;
  if (write(event_.get(), &one, sizeof(one)) < 0) {
    // the counter cannot overflow at these rates; the poll loop wakes on what is there
  }
  return okStatus();
}

}  // namespace floodgate::daemon
