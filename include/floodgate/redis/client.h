// SPDX-License-Identifier: MIT
// Client: pooled connections to one Redis server or a Redis Cluster, routed by key slot.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/redis/connection.h"

namespace floodgate::http::redis {

struct ClientOptions {
  // The server, or for a cluster any of its masters (the rest are learnt by CLUSTER SLOTS).
  std::vector<Address> seeds = {Address{}};
  bool cluster = false;
  int64_t timeout_ms = 50;  // per call: connecting, sending and reading all of its replies
  int pool_size = 16;       // idle connections kept per server; more open while busy
  Credentials credentials;  // every connection logs in with them
};

// A command and the key that decides which cluster node runs it.
struct RoutedCommand {
  std::string key;
  Command command;
};

// The cluster slot of `key`: CRC16 of its hash tag (the text between the first '{' and
// the next '}', if not empty) or of the whole key, modulo 16384.
uint16_t keySlot(std::string_view key);

// Thread-safe. Calls of several threads to one server at once share round trips: up to
// kBatchesInFlight calls go out at once, each on a connection borrowed from the pool; those
// that come meanwhile queue, and when one is answered the next of them sends every queued
// call's commands in one write and hands each caller its own replies (one write and one read for a
// batch, in the service and in redis-server, where each call would take its own). A batch is
// sent by its call with the most time left, with that call's deadline (the latest), so that
// each call keeps its whole time: a call waits, queued or in a batch, no longer than its own
// deadline and then times out (its replies, when they come, are read and dropped). A call
// whose deadline has passed when its batch is written is not sent. A failure (a dead server,
// the batch's deadline) is every waiting call's of the batch. A connection that failed is
// closed, and so are the idle ones to the same server when it was lost (after a restart they
// are all dead); after a timeout only the one that timed out.
class Client {
 public:
  // Round trips in flight to one server at once: two, so that the server has the next
  // batch to read while the service takes in the replies of one (with one, it would wait).
  static constexpr int kBatchesInFlight = 2;

  explicit Client(ClientOptions options);
  ~Client();

  // Runs `commands`, one pipeline (one round trip) per server, and returns their replies
  // in order. Cluster redirections (MOVED, ASK) are followed. Ends by now + timeout_ms.
  Result<std::vector<Reply>> run(const std::vector<RoutedCommand>& commands);
  Result<std::vector<Reply>> run(const std::vector<RoutedCommand>& commands, Deadline deadline);

  Deadline deadline() const;
  const ClientOptions& options() const { return options_; }
  // Pipelines sent so far (for benchmarks: round trips saved by batching, leases and calls
  // of several threads sharing one).
  int64_t roundTrips() const { return round_trips_.load(std::memory_order_relaxed); }
  // Calls (run()) this thread has made of any client: whether a decision asked Redis at all
  // or was answered without it (a lease, a share), which says nothing of Redis's health.
  static int64_t callsOnThisThread();
  // Calls queued for the next shared round trip, over every server.
  size_t waitingCalls();
  // Whether scripts run by EVALSHA rather than as Redis functions (FCALL): set once a server
  // refused functions (one older than Redis 7, or a user not allowed FUNCTION LOAD).
  bool scriptsOnly() const { return scripts_only_.load(std::memory_order_relaxed); }
  void useScriptsOnly() { scripts_only_.store(true, std::memory_order_relaxed); }

 private:
  class Node;
  static constexpr size_t kSlots = 16384;

  Node& nodeFor(const Address& address);  // finds or adds; holds topology_ exclusively
  Result<void> refreshSlots(Deadline deadline);
  Result<std::vector<Reply>> pipelineOn(Node& node, const std::vector<Command>& commands,
                                        Deadline deadline);
  // Follows a MOVED or ASK reply for one command, at most a few times.
  Result<Reply> redirect(const RoutedCommand& command, Reply reply, Deadline deadline);

  ClientOptions options_;
  std::atomic<int64_t> round_trips_{0};
  std::atomic<bool> scripts_only_{false};
  std::shared_mutex topology_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::array<int16_t, kSlots> slots_{};  // index into nodes_, -1 unknown
  bool slots_known_ = false;
};

}  // namespace floodgate::http::redis
