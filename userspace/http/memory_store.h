// SPDX-License-Identifier: MIT
// MemoryStore: sharded, thread-safe, bounded in-process state for one policy.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/algorithm.h"
#include "http/store.h"

namespace floodgate::http {

struct MemoryStoreOptions {
  int64_t max_keys = 100'000;  // bound on keys held; beyond it the least recently used go
  int shards = 64;             // rounded up to a power of two; each has its own lock
};

// Counters a service may export; read them any time.
struct MemoryStoreStats {
  int64_t keys = 0;
  int64_t evicted_idle = 0;    // forgotten keys whose state equalled an absent key: no loss
  int64_t evicted_active = 0;  // forgotten keys that still held state (memory bound reached)
};

// Keys hash to shards; each shard holds at most max_keys / shards keys under one mutex, in
// least-recently-used order. When a shard is full, a new key takes the place of an idle key
// near the cold end if there is one (its state is that of an absent key, so nothing is
// lost), else of the least recently used key. An absent key is a full bucket.
// Keys longer than kMaxKeyBytes are kept as a prefix plus a hash of the whole key.
// Thread-safe; decisions on different shards run in parallel.
class MemoryStore final : public Store {
 public:
  static constexpr size_t kMaxKeyBytes = 256;

  MemoryStore(std::shared_ptr<const Algorithm> algorithm, MemoryStoreOptions options);
  ~MemoryStore() override;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) override;
  void refund(std::string_view key, int64_t admitted_ns, int64_t cost) override;

  MemoryStoreStats stats() const;
  // Bytes one key costs here beyond the algorithm's own state: entry, index, list links.
  static size_t overheadBytesPerKey();

 private:
  struct Entry;
  struct KeyRef {
    std::string_view key;
    size_t hash;
    bool operator==(const KeyRef& other) const { return key == other.key; }
  };
  struct KeyRefHash {
    size_t operator()(const KeyRef& ref) const { return ref.hash; }
  };
  struct alignas(64) Shard {
    std::mutex mutex;
    std::unordered_map<KeyRef, Entry*, KeyRefHash> index;
    Entry* hottest = nullptr;  // most recently used
    Entry* coldest = nullptr;  // least recently used
    int64_t evicted_idle = 0;
    int64_t evicted_active = 0;
  };

  Shard& shardFor(size_t hash);
  // The entry for `ref`, created (evicting if full) when absent; moved to the hot end.
  Entry* findOrInsert(Shard& shard, const KeyRef& ref, int64_t now_ns);
  Entry* find(Shard& shard, const KeyRef& ref);
  void unlink(Shard& shard, Entry* entry);
  void pushHot(Shard& shard, Entry* entry);
  void evictOne(Shard& shard, int64_t now_ns);

  std::shared_ptr<const Algorithm> algorithm_;
  size_t keys_per_shard_;
  size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace floodgate::http
