// SPDX-License-Identifier: MIT
// FailoverStore: a shared store behind a circuit breaker, with the policy's failure mode.
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "floodgate/core/policy.h"
#include "floodgate/redis/fleet_membership.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/sync_store.h"
#include "floodgate/stores/circuit_breaker.h"
#include "floodgate/stores/rejection_cache.h"
#include "floodgate/stores/store.h"

namespace floodgate::http {

struct FailoverStats {
  int64_t store_errors = 0;       // calls to the shared store that failed (timeout, down, ...)
  int64_t fallback_allowed = 0;   // open mode: decided by the local fallback bucket, admitted
  int64_t fallback_rejected = 0;  // open mode: decided by the local fallback bucket, rejected
  int64_t failed_closed = 0;      // closed mode: rejected because the store could not answer
  int64_t rejected_locally = 0;   // rejected again before the remote's retry-after, no call
};

// Asks `remote` while the breaker lets it; when the call fails or the breaker is open:
//   open mode: decides with `fallback`, a local store whose limit is the policy's share
//     (limit ÷ instances, a LocalShareStore), so an outage admits about the fleet's limit,
//     not everything;
//   closed mode: returns the error (the limiter answers 503 "store unavailable").
// Decision latency is bounded by the remote's timeout while it is down or slow, and by
// nothing at all once the breaker is open.
// A key the remote rejected is rejected again here, with no call, until the remote's
// retry-after (at most `rejections.max_hold_ms`) has passed (see RejectionCache): a client
// hammering a rejected key costs the remote one call per retry-after, not one per request.
// A refund of the key forgets it.
// A remote that is a SyncStore decides from its local shares while the breaker is closed,
// with no call (and no rejection remembered here: its own are local already); a key with no
// fresh share is a call like any other. While the breaker is open the failure mode decides.
// Thread-safe.
class FailoverStore final : public SharedStore {
 public:
  FailoverStore(std::unique_ptr<Store> remote, std::unique_ptr<Store> fallback, FailureMode mode,
                std::shared_ptr<CircuitBreaker> breaker, RejectionCacheOptions rejections = {});

  Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) override;
  // A refund without its decision goes to Redis (or nowhere while the breaker is open):
  // refundDecision() sends one the fallback admitted back to the fallback.
  void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) override;
  void refundDecision(std::string_view key, const Decision& decision, int64_t admitted_ns,
                      int64_t now_ns, int64_t cost) override;

  // The remote's rejection of this request if it is known to hold still (it decides nothing
  // and takes nothing); nullopt if the remote must be asked.
  std::optional<Decision> knownRejection(std::string_view key, int64_t now_ns,
                                         int64_t cost) override;

  // The plain RedisStore behind this store when its decisions can share a round trip with
  // other policies' (no prefetch layer between); null otherwise.
  RedisStore* batchable() const { return batchable_; }
  // The Redis client when batchable(): stores on one client (and so one breaker) decide
  // together. Every store of that group is a FailoverStore.
  const void* batchGroup() const override;
  // Decides one request in each of `items`' stores, all batchable() on one client and one
  // breaker, in one script run in Redis, all or nothing (RedisStore::decideAtomically; in a
  // cluster whose slots the keys do not share, one script each in one round trip, each
  // charged on its own); each answer then follows its own store's failure mode, and a
  // fallback's admission is charged in the fallback. Known rejections are answered without
  // the call, and the rest then decided uncharged (a caller that rejects the request as a
  // whole on one, as Limiter does, asks knownRejection() first and calls nothing).
  std::vector<Answer> decideTogether(const std::vector<Item>& items, int64_t now_ns,
                                     bool charge) override;

  // The fleet membership whose live count this store's local shares divide by (for
  // metrics); null when none was given.
  void setFleet(std::shared_ptr<const FleetMembership> fleet) { fleet_ = std::move(fleet); }
  const FleetMembership* fleet() const { return fleet_.get(); }

  FailoverStats stats() const;
  Store& remote() { return *remote_; }
  const CircuitBreaker& breaker() const { return *breaker_; }
  FailureMode mode() const { return mode_; }

 private:
  // The answer when the remote could not give one: the fallback's, or `error` (closed).
  Result<Decision> failed(std::string_view key, int64_t now_ns, int64_t cost, Error error);

  std::unique_ptr<Store> remote_;
  RedisStore* batchable_ = nullptr;
  SyncStore* sync_ = nullptr;        // the remote when it decides from local shares
  std::unique_ptr<Store> fallback_;  // null in closed mode
  FailureMode mode_;
  std::shared_ptr<CircuitBreaker> breaker_;
  RejectionCache rejections_;  // the remote's rejections only, never the fallback's
  std::shared_ptr<const FleetMembership> fleet_;
  std::atomic<int64_t> store_errors_{0};
  std::atomic<int64_t> fallback_allowed_{0};
  std::atomic<int64_t> fallback_rejected_{0};
  std::atomic<int64_t> failed_closed_{0};
};

}  // namespace floodgate::http
