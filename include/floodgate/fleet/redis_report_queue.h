// SPDX-License-Identifier: MIT
// RedisReportQueue: sends offender reports to the fleet's Redis stream on a thread of its
// own, so a request that triggers a report never waits for Redis. The queue is bounded: a
// report that finds it full is dropped and counted (the IP is reported again after its
// quiet time if it keeps going).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "floodgate/redis/client.h"

namespace floodgate::http {

class RedisReportQueue {
 public:
  static constexpr size_t kCapacity = 4096;
  // Reports sent in one pipeline at most.
  static constexpr size_t kBatch = 64;

  // Signs every report with `secret` and XADDs it to `stream` on `client`'s servers.
  RedisReportQueue(redis::ClientOptions client, std::string stream, std::string secret);
  // Sends what is queued, then stops; with Redis unreachable it gives up after one failed
  // call (one timeout) and counts the rest as errors.
  ~RedisReportQueue();
  // The same, at a chosen moment: afterwards the counts are final and push() refuses.
  void close();
  RedisReportQueue(const RedisReportQueue&) = delete;
  RedisReportQueue& operator=(const RedisReportQueue&) = delete;

  // Queues the report `line`; false (and counted in dropped()) when the queue is full or
  // closed.
  bool push(std::string line);

  uint64_t sent() const { return sent_.load(); }
  uint64_t errors() const { return errors_.load(); }  // Redis could not take them
  uint64_t dropped() const { return dropped_.load(); }

 private:
  void run();

  redis::Client client_;
  std::string stream_;
  std::string secret_;
  std::string reporter_;  // HOST:PID
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> queue_;
  bool stop_ = false;
  std::atomic<uint64_t> sent_{0}, errors_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace floodgate::http
