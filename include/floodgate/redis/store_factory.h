// SPDX-License-Identifier: MIT
// Builds each policy's store from the `http.store` section: memory, or Redis with failover.
#pragma once

#include <memory>

#include "floodgate/core/clock.h"
#include "floodgate/core/limiter.h"
#include "floodgate/core/policy.h"
#include "floodgate/redis/client.h"
#include "floodgate/redis/fleet_membership.h"

namespace floodgate::http {

// memory: a MemoryStore per policy.
// redis: per policy a RedisStore (inside a PrefetchStore when the policy has `prefetch`),
// behind a FailoverStore with the policy's failure mode; an open policy's fallback is a
// LocalShareStore holding limit ÷ instances, the live count of instances (heartbeats, see
// fleet_membership.h) but at least http.store.instances. All policies share one client (its
// connection pools) and one circuit breaker, since they share the server. The client options
// `store` (of type redis) names: its address or cluster, timeout, pool.
redis::ClientOptions redisClientOptions(const StoreConfig& store);

// `options` for the odd call off the request path (a publish, a policy fetch, a report): one
// connection, and at least `min_timeout_ms` per call (the store's timeout is tuned for
// decisions, tens of milliseconds).
redis::ClientOptions occasionalCallOptions(redis::ClientOptions options, int64_t min_timeout_ms);

// The fleet membership `store` (of type redis) asks for: this process's shared one.
std::shared_ptr<FleetMembership> fleetMembership(const StoreConfig& store,
                                                 std::shared_ptr<const Clock> clock);

// Lets Limiter::create (and so LiveLimiter and the policy watchers) build the stores of a
// config whose http.store is of type redis, when no store factory is given. Call it once at
// startup; calling it again does no harm.
void useRedisStores();

// `fleet` (redis only) counts the live instances local shares divide by; null: the
// process's shared membership for `store` (fleetMembership()).
StoreFactory makeStoreFactory(const StoreConfig& store, std::shared_ptr<const Clock> clock,
                              std::shared_ptr<FleetMembership> fleet = nullptr);

}  // namespace floodgate::http
