// SPDX-License-Identifier: MIT
// PrefetchStore: hot keys lease a batch of units from Redis in one step and spend it locally.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "floodgate/core/clock.h"
#include "floodgate/core/keyed_hash.h"
#include "floodgate/redis/redis_store.h"

namespace floodgate::http {

struct PrefetchOptions {
  int64_t batch = 8;                  // units leased per round trip (at most what remains)
  std::vector<std::string> hot_keys;  // keys that always lease
  int64_t detect_per_s = 0;           // a key decided this often per second turns hot; 0: off
  int64_t lease_ms = 1000;            // bucket algorithms: unspent units lapse after this
  // The limiter's clock, which returnLeases() reads to tell a lease that expired from one that
  // did not; without one, the time of the last decision is taken for now.
  std::shared_ptr<const Clock> clock;
};

struct PrefetchStats {
  int64_t hot_keys = 0;
  int64_t leases = 0;          // round trips that leased
  int64_t units_leased = 0;    // beyond the cost of the request that leased them
  int64_t units_returned = 0;  // given back to Redis (a younger lease, shutdown)
  int64_t units_lapsed = 0;    // leases that ended (their window, lease_ms) before spent
  int64_t stranded = 0;        // units held here now, unusable by the rest of the fleet
};

// For a hot key, the first request goes to Redis and takes its own cost plus up to
// `batch - cost` more (min(batch, remaining), one atomic script); the next requests spend
// those units here with no round trip. The fleet never admits more than the limit: every
// unit admitted anywhere was taken from the one count in Redis, and a window lease ends
// with its window (a unit leased in one window is never spent in the next). A bucket's
// unit may be spent up to lease_ms after it was taken: over a span W the fleet admits at
// most capacity + rate x (W + lease_ms).
// The cost: while units sit leased on one instance, another may be rejected although the
// fleet is under the limit (at most batch - 1 units per instance per hot key). They are
// exported as `stranded`; unspent units go back to Redis on shutdown.
// Only fixed_window, token_bucket and gcra can lease (a sliding window's units cannot be
// moved in time, a queue's delay is per request). Thread-safe.
class PrefetchStore final : public Store {
 public:
  PrefetchStore(std::unique_ptr<RedisStore> remote, AlgorithmKind kind, PrefetchOptions options);
  ~PrefetchStore() override;  // gives back unspent leases

  Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) override;
  void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) override;

  // Gives every unspent unit back to Redis (shutdown; also safe to call any time).
  void returnLeases();
  PrefetchStats stats() const;
  RedisStore& remote() { return *remote_; }

 private:
  struct Lease {
    std::mutex mutex;
    int64_t units = 0;  // leased, not yet spent
    // our clock: when the units held began to be leased (a window's first lease, a
    // bucket's last); a request admitted before is not one of theirs, and its refund is
    // Redis's to make
    int64_t since_ns = 0;
    int64_t expires_ns = 0;   // our clock
    int64_t redis_at_ns = 0;  // Redis's clock when leased (names the window to refund)
    int64_t remote_remaining = 0;
    int64_t reset_at_ns = 0;  // our clock
    bool refilling = false;   // a thread is asking Redis for more units
  };

  // The key's lease if it is hot (marking it hot if it is decided often enough).
  Lease* hotLease(std::string_view key, int64_t now_ns);
  // Units taken out of a lease (lease->mutex held) to give back after (without it).
  struct Taken {
    int64_t units = 0;
    int64_t redis_at_ns = 0;
  };
  static Taken takeUnits(Lease& lease);
  // Writes off a lease's units, which can no longer be spent or given back (lease->mutex held).
  void lapse(Lease& lease);
  // fixed_window: the index of the window a time of Redis's clock falls in.
  int64_t windowOf(int64_t redis_ns) const;
  // Gives back or writes off `taken` at `now_ns` (a bucket takes back only what it has not
  // refilled since the lease); no lease's mutex held (it calls Redis).
  void giveBack(std::string_view key, Taken taken, int64_t now_ns);

  std::unique_ptr<RedisStore> remote_;
  AlgorithmKind kind_;
  PrefetchOptions options_;

  mutable std::shared_mutex leases_mutex_;
  // keyed hashes: clients choose the keys, and must not pile them on one chain
  std::unordered_map<std::string, std::unique_ptr<Lease>, KeyedHasher> leases_;

  // Hot-key detection: decisions per key in the current second, bounded.
  std::mutex counts_mutex_;
  int64_t counts_second_ = 0;
  std::atomic<int64_t> latest_now_ns_{0};  // of the decisions so far, without options_.clock
  std::unordered_map<std::string, int64_t, KeyedHasher> counts_;

  mutable std::mutex stats_mutex_;
  PrefetchStats stats_;
};

}  // namespace floodgate::http
