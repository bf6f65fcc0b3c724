// SPDX-License-Identifier: MIT
// SyncStore: every decision local, from this instance's share; Redis reconciled every interval.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "floodgate/core/clock.h"
#include "floodgate/core/keyed_hash.h"
#include "floodgate/core/periodic_task.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/stores/circuit_breaker.h"

namespace floodgate::http {

struct SyncOptions {
  int64_t interval_ms = 200;   // reconciliation period (a share is fresh for two of them)
  int64_t max_keys = 100'000;  // keys with local state; beyond, decisions go to Redis exactly
  bool background = true;      // false: no thread, the owner calls syncNow() (tests, bench)
};

struct SyncStats {
  int64_t keys = 0;             // keys with local state now
  int64_t key_bytes = 0;        // the text of those keys (a long one is held by its hash)
  int64_t syncs = 0;            // reconciliations that reached Redis (background rounds)
  int64_t grants = 0;           // round trips for a key with no fresh share (first use, stale)
  int64_t exact = 0;            // decisions sent to Redis as the exact store would (table full)
  int64_t failed_syncs = 0;     // rounds or grants that could not reach Redis
  int64_t decided_locally = 0;  // decisions answered from a fresh share, no round trip
};

// Local buckets with global reconciliation. Each key holds a share: units this instance may
// admit on its own. A decision spends from it under a lock, with no round trip. Every
// interval a background task sends each active key's spent units to Redis (syncScript: one
// script per batch of keys, on Redis's clock, adding them to the same state the exact store
// keeps) and reads back R, what the fleet has left; the key's new share is ceil(R / N),
// N the live instance count (at least http.store.instances), less what was spent here while
// the sync was under way. A key with no fresh share (first use here, or not synced for 2
// intervals; a window's share also ends with its window) gets one by a sync of its own, a
// round trip, on the request's path.
//
// Bound. Every unit admitted anywhere is reported to Redis at the next sync; a share is
// granted only while R > 0; and what an instance holds unreported plus unspent never
// exceeds its last share, ceil(R / N) <= ceil(quota / N). So when the last share of a
// window (or of a span) was granted, Redis had counted less than the quota, and at most
// N x ceil(quota / N) <= quota + N - 1 more can follow. The fleet admits at most
//   fixed_window:        2 x limit + N - 1 in any window (the exact store: limit);
//   token_bucket, gcra:  2 x capacity + rate x W + N - 1 over any span W (the exact store:
//                        capacity + rate x W): a bucket goes into debt by what was admitted
//                        beyond it, and its refill pays that back before anything more is
//                        granted;
// with N the fewest instances any instance divides by. Over-admission is at most one quota
// plus N - 1, however long Redis takes or the instances' clocks differ; under an even load
// it is about what the fleet admits in one interval past the point the quota ran out.
// The trade: a key whose traffic reaches fewer than N instances gets less than its limit
// within a short window (each sync grants 1/N of what is left), and a rejected client
// learns to retry after the next sync, not exactly when the quota returns.
// A sync that fails keeps the spent units for the next one (a sync that timed out after
// Redis ran it reports them twice: fewer admitted, never more). Memory: at most max_keys
// keys (plus the key text); past that, a key whose share is spent and reported, and not
// used since the last sync, is forgotten; when none is, the decision goes to Redis exactly.
// fixed_window, token_bucket and gcra only. Thread-safe.
class SyncStore final : public Store {
 public:
  // `instances` is read at every sync (the live count); `breaker` is the store's, fed by
  // the background syncs and skipped while open.
  SyncStore(std::unique_ptr<RedisStore> remote, std::function<int64_t()> instances,
            std::shared_ptr<CircuitBreaker> breaker, std::shared_ptr<const Clock> clock,
            SyncOptions options);
  ~SyncStore() override;  // stops the task; reports what was spent since the last sync
  SyncStore(const SyncStore&) = delete;
  SyncStore& operator=(const SyncStore&) = delete;

  // From the share when the key has a fresh one; else a sync of the key (a round trip)
  // first. An Error when Redis could not be asked.
  Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) override;
  void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) override;

  // The decision from the key's fresh share, or nullopt when it has none (no call made).
  std::optional<Decision> decideLocally(std::string_view key, int64_t now_ns, int64_t cost);

  // One reconciliation of every active key, now (the background task's round).
  Status syncNow();

  SyncStats stats() const;
  RedisStore& remote() { return *remote_; }

 private:
  struct Entry {
    int64_t share = 0;      // units this instance may still admit on its own
    int64_t spent = 0;      // admitted here, not yet reported
    int64_t reporting = 0;  // spent units in a sync under way
    // our clock: what was admitted before this is not in `spent` (reported, or reporting),
    // so its refund is Redis's to make; and the same for `reporting`, should its sync fail
    int64_t spent_since_ns = 0;
    int64_t reporting_since_ns = 0;
    int64_t window_index = 0;    // fixed_window: Redis's window of the share
    int64_t fresh_until_ns = 0;  // our clock: the share is not spent after this
    int64_t reset_at_ns = 0;     // our clock: Redis's reset at the last sync
    int64_t fleet_remaining = 0;
    bool used = false;  // decided since the last sync
    bool syncing = false;
  };
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, Entry, KeyedHasher, std::equal_to<>> entries;
  };

  Shard& shardFor(std::string_view key);
  // The key's entry, made if there is room (forgetting one that loses nothing); null if not.
  Entry* findOrInsert(Shard& shard, std::string_view key, int64_t now_ns);
  Decision spend(Entry& entry, int64_t now_ns, int64_t cost);
  // The decision from the key's fresh share, or nullopt (uncounted: decideLocally counts).
  std::optional<Decision> fromShare(std::string_view key, int64_t now_ns, int64_t cost);
  // Reports `keys`' spent units and grants each a fresh share. `now_ns` read before. Keys
  // syncing already (on another thread) are left to that sync; *asked (if given) is set
  // when Redis was called, so not when every key was.
  Status syncKeys(const std::vector<std::string>& keys, int64_t now_ns, bool* asked = nullptr);

  std::unique_ptr<RedisStore> remote_;
  AlgorithmParams params_;
  int64_t quota_;
  std::function<int64_t()> instances_;
  std::shared_ptr<CircuitBreaker> breaker_;
  std::shared_ptr<const Clock> clock_;
  SyncOptions options_;
  size_t keys_per_shard_;
  std::vector<Shard> shards_;
  KeyedHasher hasher_;

  std::atomic<int64_t> syncs_{0};
  std::atomic<int64_t> grants_{0};
  std::atomic<int64_t> exact_{0};
  std::atomic<int64_t> failed_syncs_{0};
  std::atomic<int64_t> decided_locally_{0};

  // last: stopped first, while everything it uses is still there
  std::unique_ptr<PeriodicTask> syncs_task_;
};

}  // namespace floodgate::http
