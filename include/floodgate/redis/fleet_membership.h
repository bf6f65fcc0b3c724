// SPDX-License-Identifier: MIT
// FleetMembership: how many instances share the limits now, kept by heartbeats in Redis.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "floodgate/common/result.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/periodic_task.h"
#include "floodgate/redis/client.h"

namespace floodgate::http {

struct FleetMembershipOptions {
  std::string prefix = "fg";    // the Redis key prefix (http.store.prefix)
  std::string instance_id;      // empty: this process's id (host name, pid and a random part)
  int64_t floor = 1;            // http.store.instances: never divide by fewer
  int64_t heartbeat_ms = 1000;  // 0: no thread; the owner calls beat() (tests)
  int64_t expire_ms = 3000;     // an instance silent this long is dropped from the count
  // Tests only: beats are scored by `clock` (µs) instead of Redis TIME, so expiry can be
  // stepped by hand. The key's own expiry still runs on Redis's real clock.
  bool virtual_time = false;
};

// Every instance adds itself to one sorted set, "<prefix>:{<prefix>:fleet}:instances"
// (one hash tag: one cluster slot), scored by Redis's TIME at each beat, in one script that
// also drops the members whose last beat is expire_ms old or older and counts the rest. So
// the count is on Redis's clock alone: skewed instance clocks change nothing.
// An instance that stops beating (crashed, partitioned, frozen) leaves every other
// instance's count within expire_ms + heartbeat_ms (dropped by the first beat after
// expire_ms, seen by each instance at its next beat); one that shuts down cleanly leaves at
// once (ZREM). While Redis cannot be reached the last count read is kept.
// Thread-safe; instances() is one atomic load.
class FleetMembership {
 public:
  FleetMembership(std::shared_ptr<redis::Client> client, FleetMembershipOptions options,
                  std::shared_ptr<const Clock> clock);
  ~FleetMembership();  // stops beating and leaves the set (best effort)
  FleetMembership(const FleetMembership&) = delete;
  FleetMembership& operator=(const FleetMembership&) = delete;

  // The one membership of this process for `options` on the servers `client_options` name,
  // made (and beating) on first use and shared while anyone holds it: a policy set swapped
  // in while the old one still runs must not count this process twice.
  static std::shared_ptr<FleetMembership> shared(const redis::ClientOptions& client_options,
                                                 const FleetMembershipOptions& options,
                                                 std::shared_ptr<const Clock> clock);

  // One heartbeat: registers, drops the silent, reads the live count. An Error when Redis
  // could not answer (the last count is kept).
  Status beat();

  // What a local share divides by: the live count, but at least the floor (the floor until
  // the first beat is answered).
  int64_t instances() const { return std::max(options_.floor, live_.load()); }
  // The live count at the last answered beat; 0 before any.
  int64_t liveCount() const { return live_.load(); }
  int64_t failedBeats() const { return failed_beats_.load(); }
  const std::string& instanceId() const { return options_.instance_id; }
  // The sorted set's Redis key.
  std::string key() const;

 private:
  std::shared_ptr<redis::Client> client_;
  FleetMembershipOptions options_;
  std::shared_ptr<const Clock> clock_;
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> failed_beats_{0};
  // last: stopped first, while everything it uses is still there
  std::unique_ptr<PeriodicTask> heartbeat_;
};

// This process's instance id: "<host>:<pid>:<random hex>", the same for its whole life.
const std::string& processInstanceId();

}  // namespace floodgate::http
