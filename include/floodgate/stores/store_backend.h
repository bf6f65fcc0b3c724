// SPDX-License-Identifier: MIT
// Which store a policy's state lives in, by the type of `http.store`. Memory is built in;
// any other type comes from a component that registers it, so that a service using memory
// stores links no client library: floodgate::redis registers "redis" when the program calls
// useRedisStores() (store_factory.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "floodgate/common/result.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/limiter.h"
#include "floodgate/core/policy.h"

namespace floodgate::http {

// Makes the factory of every policy's store for one `http.store` section.
using StoreBackend =
    std::function<StoreFactory(const StoreConfig& store, std::shared_ptr<const Clock> clock)>;

// Makes `type` available to storeFactoryFor(); a second registration of a type replaces the
// first, and an empty backend removes it. Thread-safe.
void registerStoreBackend(const std::string& type, StoreBackend backend);

// A MemoryStore per policy, sized by `store` (max_keys, shards).
StoreFactory memoryStoreFactory(const StoreConfig& store);

// The factory for `store`'s type: memory, or a registered backend; a usage error that says
// what to link and call when the type has no backend in this program.
Result<StoreFactory> storeFactoryFor(const StoreConfig& store, std::shared_ptr<const Clock> clock);

}  // namespace floodgate::http
