// SPDX-License-Identifier: MIT
// The registry of store backends, and the built-in memory one.
#include "floodgate/stores/store_backend.h"

#include <map>
#include <mutex>

#include "floodgate/stores/memory_store.h"

namespace floodgate::http {
namespace {

struct Backends {
  std::mutex mutex;
  std::map<std::string, StoreBackend> by_type;
};

Backends& backends() {
  static Backends instance;
  return instance;
}

}  // namespace

void registerStoreBackend(const std::string& type, StoreBackend backend) {
  Backends& all = backends();
  std::lock_guard lock(all.mutex);
  if (backend) {
    all.by_type[type] = std::move(backend);
  } else {
    all.by_type.erase(type);
  }
}

StoreFactory memoryStoreFactory(const StoreConfig& store) {
  MemoryStoreOptions memory{store.max_keys, store.shards};
  return [memory](const PolicyConfig&, std::shared_ptr<const Algorithm> algorithm) {
    return std::make_unique<MemoryStore>(std::move(algorithm), memory);
  };
}

Result<StoreFactory> storeFactoryFor(const StoreConfig& store, std::shared_ptr<const Clock> clock) {
  if (store.type == "memory") return memoryStoreFactory(store);
  StoreBackend backend;
  {
    Backends& all = backends();
    std::lock_guard lock(all.mutex);
    auto found = all.by_type.find(store.type);
    if (found != all.by_type.end()) backend = found->second;
  }
  if (!backend) {
    return Error::usage("http.store is of type " + store.type +
                        ", which this program cannot use: link floodgate::redis and call "
                        "floodgate::http::useRedisStores() before creating the limiter, or "
                        "use type: memory");
  }
  return backend(store, std::move(clock));
}

}  // namespace floodgate::http
