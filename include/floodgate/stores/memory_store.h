// SPDX-License-Identifier: MIT
// MemoryStore: sharded, thread-safe, bounded in-process state for one policy.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "floodgate/core/algorithm.h"
#include "floodgate/core/compact_key.h"
#include "floodgate/stores/store.h"

namespace floodgate::http {

struct MemoryStoreOptions {
  int64_t max_keys = 100'000;  // bound on keys held; beyond it, keys not used lately go
  int shards = 64;             // rounded up to a power of two; each has its own lock
};

// Counters a service may export; read them any time.
struct MemoryStoreStats {
  int64_t keys = 0;
  int64_t evicted_idle = 0;    // forgotten keys whose state equalled an absent key: no loss
  int64_t evicted_active = 0;  // forgotten keys that still held state (memory bound reached)
};

// Keys hash to shards; each shard holds at most max_keys / shards keys under one mutex, in
// an open-addressing table (linear probing, at most 3/4 full; it grows up to the bound)
// whose slots hold the key and its state inline, so a decision touches one cache line.
// The hash is SipHash under a per-process random key (keyed_hash.h): a client that picks
// its keys cannot tell which shard or slot they land in, so it cannot pile them on one.
// When a shard is full, a CLOCK sweep picks the key to forget: keys used since the hand
// last passed get a second chance, and among the others an idle key (its state is that of
// an absent key, so nothing is lost) is preferred. An absent key is a full bucket.
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
  void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) override;
  // Prefetches the key's home slot without taking the shard's lock.
  void prefetch(std::string_view key) const override;

  // Every key and its state, a shard at a time (each locked while read): for handing the
  // state to the store that replaces this one on a policy change.
  void forEach(const std::function<void(std::string_view key, const KeyState& state)>& fn) const;
  // Sets `key`'s state, inserting it as decide() would (evicting beyond max_keys).
  void put(std::string_view key, KeyState state, int64_t now_ns);

  MemoryStoreStats stats() const;
  // Bytes of one slot: key (inline up to 23 bytes), state and tag. A table is 3/8 to 3/4
  // full, so a key costs 4/3 to 8/3 slots (plus a longer key's own bytes, plus the log).
  static size_t slotBytes();

 private:
  // One cache line: the tag (the key's hash with bit 1 set, so never 0 = empty; bit 0 is
  // the CLOCK reference bit), the key, and its state.
  struct alignas(64) Slot {
    uint64_t tag = 0;
    CompactKey key;
    KeyState state;

    bool empty() const { return tag == 0; }
    uint64_t hash() const { return tag & ~uint64_t{1}; }
    bool referenced() const { return (tag & 1) != 0; }
    void setReferenced(bool on) { tag = on ? tag | 1 : tag & ~uint64_t{1}; }
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line");
  // Big tables ask the kernel for huge pages: a lookup then costs one cache miss, not a
  // cache miss plus a page walk (which dominates on VMs with nested paging).
  template <class T>
  struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding
    T* allocate(size_t n);
    void deallocate(T* p, size_t n);
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const {
      return true;
    }
  };

  struct alignas(64) Shard {
    std::mutex mutex;
    std::vector<Slot, HugePageAllocator<Slot>> slots;  // size a power of two
    // `slots`' array and size, readable without the lock, for prefetch() only: a stale
    // pair (the table grew meanwhile) points at memory that may be gone, which a prefetch
    // instruction may touch harmlessly (it never faults).
    std::atomic<const Slot*> table_hint{nullptr};
    std::atomic<size_t> size_hint{0};
    size_t used = 0;
    size_t hand = 0;  // CLOCK hand
    int64_t evicted_idle = 0;
    int64_t evicted_active = 0;
  };

  Shard& shardFor(uint64_t hash);
  // The home slot of a hash in a table of `slots` (a power of two).
  static size_t home(uint64_t hash, size_t slots) { return (hash >> 2) & (slots - 1); }
  // Index of the slot holding `key`, or of the empty slot ending its probe sequence.
  size_t probe(const Shard& shard, uint64_t hash, std::string_view key) const;
  // The slot for `key`, created (evicting or growing first if needed) when absent.
  Slot& findOrInsert(Shard& shard, uint64_t hash, std::string_view key, int64_t now_ns);
  void grow(Shard& shard);
  static void publishHint(Shard& shard);
  void evictOne(Shard& shard, int64_t now_ns);
  void erase(Shard& shard, size_t index);

  std::shared_ptr<const Algorithm> algorithm_;
  size_t keys_per_shard_;
  size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace floodgate::http
