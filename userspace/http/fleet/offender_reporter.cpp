// SPDX-License-Identifier: MIT
// Rejection counting per client IP in fixed windows, and the reports to the controller.
#include "floodgate/fleet/offender_reporter.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "floodgate/fleet/report_stream.h"
#include "floodgate/report/offender_report.h"

namespace floodgate::http {

Result<std::unique_ptr<OffenderReporter>> OffenderReporter::create(
    const HttpConfig& http, std::shared_ptr<const Clock> clock) {
  const EscalateConfig& config = http.escalate;
  if (!config.enabled) return Error::usage("http.escalate is not configured");
  if (!config.redis_stream.empty()) {
    auto stream = std::make_unique<RedisReportQueue>(reportClientOptions(http.store),
                                                     config.redis_stream, config.secret);
    return std::unique_ptr<OffenderReporter>(
        new OffenderReporter(config, std::move(clock), -1, std::move(stream)));
  }
  if (config.socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Error::usage("http.escalate.socket is too long for a Unix socket: " + config.socket);
  }
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return Error::failure(std::string("cannot make a Unix socket: ") + std::strerror(errno));
  return std::unique_ptr<OffenderReporter>(
      new OffenderReporter(config, std::move(clock), fd, nullptr));
}

OffenderReporter::OffenderReporter(const EscalateConfig& config, std::shared_ptr<const Clock> clock,
                                   int fd, std::unique_ptr<RedisReportQueue> stream)
    : config_(config), clock_(std::move(clock)), fd_(fd), stream_(std::move(stream)) {}

void OffenderReporter::close() {
  if (stream_) stream_->close();
}

uint64_t OffenderReporter::reportsSent() const {
  return sent_.load() + (stream_ ? stream_->sent() : 0);
}
uint64_t OffenderReporter::reportErrors() const {
  return errors_.load() + (stream_ ? stream_->errors() : 0);
}
uint64_t OffenderReporter::dropped() const {
  return dropped_.load() + (stream_ ? stream_->dropped() : 0);
}

OffenderReporter::~OffenderReporter() {
  if (fd_ >= 0) ::close(fd_);
}

int64_t OffenderReporter::expiry(const Client& client) const {
  return std::max(client.window_start_ns + config_.within_ms * 1'000'000, client.quiet_until_ns);
}

void OffenderReporter::queue(Client& client, const std::string& key) {
  client.queued_at_ns = expiry(client);
  expiries_.push({client.queued_at_ns, key});
}

int64_t OffenderReporter::quietAfterReport(Client& client) const {
  const auto ban_ns = static_cast<int64_t>(config_.ban_ns);
  // past 2^20 minutes any ban time (at most days) is reached: no shift overflows
  const int shift = std::min(client.reports++, 20);
  return std::min(ban_ns, kReportAgainNs << shift);
}

void OffenderReporter::evictOld(int64_t now_ns) {
  while (!expiries_.empty() && expiries_.top().at_ns <= now_ns) {
    const Queued queued = expiries_.top();
    expiries_.pop();
    auto it = clients_.find(queued.key);
    // gone, or queued again since under an earlier time (resendLater)
    if (it == clients_.end() || it->second.queued_at_ns != queued.at_ns) continue;
    if (expiry(it->second) <= now_ns) {
      clients_.erase(it);
    } else {
      queue(it->second, it->first);  // a rejection since moved it on
    }
  }
}

bool OffenderReporter::evictFewest() {
  auto victim = clients_.end();
  const size_t buckets = clients_.bucket_count();
  for (int d = 0; d < kEvictionDraws; ++d) {
    // the first entry at or after a random bucket: the table is full, so few are empty
    size_t bucket = std::uniform_int_distribution<size_t>(0, buckets - 1)(draw_);
    for (size_t looked = 0; looked < buckets && clients_.bucket_size(bucket) == 0; ++looked) {
      bucket = (bucket + 1) % buckets;
    }
    // any entry of the bucket, not only its first: one behind another is drawn too
    auto in_bucket = clients_.begin(bucket);
    std::advance(in_bucket,
                 std::uniform_int_distribution<size_t>(0, clients_.bucket_size(bucket) - 1)(draw_));
    auto it = clients_.find(in_bucket->first);
    const Client& c = it->second;
    // one reported (or waiting to be) keeps its quiet time: evicted, it would be reported
    // again at once, and its quiet times would start over from a minute
    if (c.reports > 0 || c.unsent || c.quiet_until_ns > 0) continue;
    if (victim == clients_.end() || c.rejections < victim->second.rejections) victim = it;
  }
  if (victim == clients_.end()) return false;
  clients_.erase(victim);
  // its entry of expiries_ is stale now; past twice the table, the stale ones are cleared
  if (expiries_.size() > 2 * kMaxTracked) {
    expiries_ = {};
    for (auto& [key, client] : clients_) expiries_.push({client.queued_at_ns, key});
  }
  return true;
}

void OffenderReporter::noteRejection(std::string_view client_key) {
  if (client_key.empty()) return;
  const int64_t now = clock_->nowNs();
  const int64_t window_ns = config_.within_ms * 1'000'000;
  bool report = false;
  {
    std::lock_guard lock(mutex_);
    auto it = clients_.find(std::string(client_key));
    if (it == clients_.end()) {
      if (clients_.size() >= kMaxTracked) evictOld(now);
      if (clients_.size() >= kMaxTracked && !evictFewest()) {
        dropped_.fetch_add(1);
        return;
      }
      it = clients_.emplace(std::string(client_key), Client{now, 0, 0}).first;
      queue(it->second, it->first);
    }
    Client& c = it->second;
    if (now < c.quiet_until_ns) return;  // reported: the ban will catch up, or it is reported again
    if (c.unsent) {
      report = true;
      c.unsent = false;
      c.quiet_until_ns = now + quietAfterReport(c);
    } else if (now - c.window_start_ns >= window_ns) {
      c.window_start_ns = now;
      c.rejections = 0;
    }
    if (!report && ++c.rejections >= config_.rejections) {
      report = true;
      c.quiet_until_ns = now + quietAfterReport(c);
      c.rejections = 0;
    }
  }
  if (report && !send(std::string(client_key))) resendLater(std::string(client_key));
}

void OffenderReporter::resendLater(const std::string& client_key) {
  std::lock_guard lock(mutex_);
  auto it = clients_.find(client_key);
  if (it == clients_.end()) return;  // evicted meanwhile: it counts from nothing again
  it->second.unsent = true;
  it->second.quiet_until_ns = clock_->nowNs() + kResendNs;
  // not sent: the quiet time doubles only for reports that were
  if (it->second.reports > 0) --it->second.reports;
  if (expiry(it->second) < it->second.queued_at_ns) queue(it->second, it->first);
}

bool OffenderReporter::send(const std::string& client_key) {
  const std::string line = report::formatReport(client_key, config_.rejections, config_.within_ms);
  if (stream_) return stream_->push(line);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, config_.socket.c_str(), config_.socket.size());
  const std::string datagram = line + "\n";
  ssize_t n = sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                     reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  if (n == static_cast<ssize_t>(datagram.size())) {
    sent_.fetch_add(1);
    return true;
  }
  errors_.fetch_add(1);
  return false;
}

}  // namespace floodgate::http
