// SPDX-License-Identifier: MIT
// Putting the store layers together for one policy.
#include "floodgate/redis/store_factory.h"

#include <algorithm>

#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/prefetch_store.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/sync_store.h"
#include "floodgate/stores/circuit_breaker.h"
#include "floodgate/stores/local_share_store.h"
#include "floodgate/stores/memory_store.h"
#include "floodgate/stores/store_backend.h"

namespace floodgate::http {

redis::ClientOptions redisClientOptions(const StoreConfig& store) {
  redis::ClientOptions options;
  options.cluster = !store.cluster.empty();
  options.seeds.clear();
  for (const std::string& text :
       options.cluster ? store.cluster : std::vector<std::string>{store.address}) {
    if (auto address = redis::Address::parse(text)) options.seeds.push_back(*address);
  }
  options.timeout_ms = store.timeout_ms;
  options.pool_size = static_cast<int>(store.pool_size);
  options.credentials = {store.username, store.password};
  return options;
}

redis::ClientOptions occasionalCallOptions(redis::ClientOptions options, int64_t min_timeout_ms) {
  options.timeout_ms = std::max(options.timeout_ms, min_timeout_ms);
  options.pool_size = 1;
  return options;
}

std::shared_ptr<FleetMembership> fleetMembership(const StoreConfig& store,
                                                 std::shared_ptr<const Clock> clock) {
  FleetMembershipOptions options;
  options.prefix = store.prefix;
  options.instance_id = store.instance_id;
  options.floor = store.instances;
  options.heartbeat_ms = store.heartbeat_ms;
  options.expire_ms = store.heartbeat_expire_ms;
  return FleetMembership::shared(occasionalCallOptions(redisClientOptions(store), 500), options,
                                 std::move(clock));
}

StoreFactory makeStoreFactory(const StoreConfig& store, std::shared_ptr<const Clock> clock,
                              std::shared_ptr<FleetMembership> fleet) {
  if (store.type != "redis") return memoryStoreFactory(store);
  MemoryStoreOptions memory{store.max_keys, store.shards};
  if (!fleet) fleet = fleetMembership(store, clock);
  auto client = std::make_shared<redis::Client>(redisClientOptions(store));
  auto breaker = std::make_shared<CircuitBreaker>(
      CircuitBreakerOptions{static_cast<int>(store.breaker_failures), store.breaker_open_ms},
      clock);
  RedisStoreOptions redis_options;
  redis_options.prefix = store.prefix;

  return [=](const PolicyConfig& policy,
             std::shared_ptr<const Algorithm> /*algorithm*/) -> std::unique_ptr<Store> {
    RedisStoreOptions options = redis_options;
    options.keeps_debt = policy.sync.enabled;
    // an address is no secret and an operator looks for it; an API key or user id is one
    options.hide_keys = policy.key.kind != KeyKind::kIp;
    auto redis_store = std::make_unique<RedisStore>(client, policy.name, policy.algorithm, options);
    std::unique_ptr<Store> remote;
    if (policy.sync.enabled) {
      remote = std::make_unique<SyncStore>(
          std::move(redis_store), [fleet] { return fleet->instances(); }, breaker, clock,
          SyncOptions{policy.sync.interval_ms, store.max_keys});
    } else if (policy.prefetch.enabled) {
      PrefetchOptions prefetch{policy.prefetch.batch, policy.prefetch.hot_keys,
                               policy.prefetch.detect_per_s, policy.prefetch.lease_ms, clock};
      remote = std::make_unique<PrefetchStore>(std::move(redis_store), policy.algorithm.kind,
                                               std::move(prefetch));
    } else {
      remote = std::move(redis_store);
    }
    std::unique_ptr<Store> fallback;
    if (policy.failure_mode == FailureMode::kOpen) {
      fallback = std::make_unique<LocalShareStore>(
          policy.algorithm, [fleet] { return fleet->instances(); }, memory);
    }
    auto failover = std::make_unique<FailoverStore>(std::move(remote), std::move(fallback),
                                                    policy.failure_mode, breaker);
    failover->setFleet(fleet);
    return failover;
  };
}

void useRedisStores() {
  registerStoreBackend("redis", [](const StoreConfig& store, std::shared_ptr<const Clock> clock) {
    return makeStoreFactory(store, std::move(clock));
  });
}

}  // namespace floodgate::http
