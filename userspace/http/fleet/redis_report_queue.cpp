// SPDX-License-Identifier: MIT
// The sending thread: takes up to a batch of queued reports, signs and XADDs them in one
// round trip.
#include "floodgate/fleet/redis_report_queue.h"

#include <unistd.h>

#include <chrono>
#include <vector>

#include "floodgate/fleet/report_stream.h"

namespace floodgate::http {
namespace {

std::string hostAndPid() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "unknown") + ":" + std::to_string(getpid());
}

int64_t wallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

RedisReportQueue::RedisReportQueue(redis::ClientOptions client, std::string stream,
                                   std::string secret)
    : client_(std::move(client)),
      stream_(std::move(stream)),
      secret_(std::move(secret)),
      reporter_(hostAndPid()),
      thread_([this] { run(); }) {}

RedisReportQueue::~RedisReportQueue() { close(); }

void RedisReportQueue::close() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool RedisReportQueue::push(std::string line) {
  {
    std::lock_guard lock(mutex_);
    if (stop_ || queue_.size() >= kCapacity) {
      dropped_.fetch_add(1);
      return false;
    }
    queue_.push_back(std::move(line));
  }
  wake_.notify_one();
  return true;
}

void RedisReportQueue::run() {
  std::unique_lock lock(mutex_);
  bool redis_failed = false;
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is sent
    if (stop_ && redis_failed) {
      // stopping with Redis gone: one failed try is enough, do not hold up the exit
      errors_.fetch_add(queue_.size());
      queue_.clear();
      return;
    }
    std::vector<std::string> lines;
    while (!queue_.empty() && lines.size() < kBatch) {
      lines.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    const bool stopping = stop_;
    lock.unlock();
    std::vector<redis::RoutedCommand> commands;
    const int64_t now_ms = wallClockMs();
    for (std::string& line : lines) {
      commands.push_back(
          {stream_, streamAddCommand(
                        stream_, signStreamReport(secret_, std::move(line), reporter_, now_ms))});
    }
    auto replies = client_.run(commands);
    // A pooled connection from before a Redis restart fails once, and is dropped with it.
    if (!replies && !stopping) replies = client_.run(commands);
    redis_failed = !replies;
    uint64_t ok = 0;
    if (replies) {
      for (const redis::Reply& reply : *replies) ok += reply.isError() ? 0 : 1;
    }
    sent_.fetch_add(ok);
    errors_.fetch_add(commands.size() - ok);
    lock.lock();
  }
}

}  // namespace floodgate::http
