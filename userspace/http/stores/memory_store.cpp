// SPDX-License-Identifier: MIT
// The in-memory store: hash to a shard, lock it, find or make the key's slot, decide.
#include "floodgate/stores/memory_store.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <functional>
#include <new>

#include "floodgate/core/keyed_hash.h"

namespace floodgate::http {

namespace {

// Keyed (see keyed_hash.h): a client that picks its keys cannot aim them all at one shard,
// or at one probe sequence, without knowing this process's random key.
// Bit 1 set (never 0, the empty mark), bit 0 clear (room for the reference bit).
uint64_t hashOf(std::string_view key) { return (keyedHash(key) | 2) & ~uint64_t{1}; }

// A shard's table starts this small and doubles whenever it would be over 3/4 full.
constexpr size_t kInitialSlots = 16;
// How many occupied slots one eviction looks at, at most.
constexpr int kEvictionScan = 32;

}  // namespace

template <class T>
T* MemoryStore::HugePageAllocator<T>::allocate(size_t n) {
  constexpr size_t kHugePage = 2 << 20;
  size_t bytes = n * sizeof(T);
  if (bytes < kHugePage) return std::allocator<T>{}.allocate(n);
  bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, bytes);
  if (p == nullptr) throw std::bad_alloc();
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without huge pages it still works
  return static_cast<T*>(p);
}

template <class T>
void MemoryStore::HugePageAllocator<T>::deallocate(T* p, size_t n) {
  if (n * sizeof(T) < (2 << 20)) {
    std::allocator<T>{}.deallocate(p, n);
  } else {
    std::free(p);
  }
}

MemoryStore::MemoryStore(std::shared_ptr<const Algorithm> algorithm, MemoryStoreOptions options)
    : algorithm_(std::move(algorithm)) {
  size_t shards = std::bit_ceil(static_cast<size_t>(std::max(1, options.shards)));
  shard_mask_ = shards - 1;
  size_t max_keys = static_cast<size_t>(std::max<int64_t>(1, options.max_keys));
  keys_per_shard_ = std::max<size_t>(1, (max_keys + shards - 1) / shards);
  shards_ = std::make_unique<Shard[]>(shards);
  for (size_t i = 0; i < shards; ++i) {
    shards_[i].slots.resize(kInitialSlots);
    publishHint(shards_[i]);
  }
}

void MemoryStore::publishHint(Shard& shard) {
  shard.table_hint.store(shard.slots.data(), std::memory_order_relaxed);
  shard.size_hint.store(shard.slots.size(), std::memory_order_relaxed);
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shardFor(uint64_t hash) {
  // Slots are indexed by the low bits; take the shard from the high ones.
  return shards_[(hash >> 48) & shard_mask_];
}

size_t MemoryStore::probe(const Shard& shard, uint64_t hash, std::string_view key) const {
  const size_t mask = shard.slots.size() - 1;
  size_t i = home(hash, shard.slots.size());
  while (!shard.slots[i].empty() &&
         (shard.slots[i].hash() != hash || shard.slots[i].key.view() != key)) {
    i = (i + 1) & mask;
  }
  return i;
}

void MemoryStore::grow(Shard& shard) {
  auto old = std::move(shard.slots);
  shard.slots.clear();
  shard.slots.resize(old.size() * 2);
  const size_t mask = shard.slots.size() - 1;
  for (Slot& slot : old) {
    if (slot.empty()) continue;
    size_t i = home(slot.hash(), shard.slots.size());
    while (!shard.slots[i].empty()) i = (i + 1) & mask;
    shard.slots[i] = std::move(slot);
  }
  shard.hand = 0;
  publishHint(shard);
}

void MemoryStore::erase(Shard& shard, size_t index) {
  // Backward-shift deletion keeps every probe sequence unbroken without tombstones.
  const size_t mask = shard.slots.size() - 1;
  size_t hole = index;
  for (size_t j = (hole + 1) & mask; !shard.slots[j].empty(); j = (j + 1) & mask) {
    size_t h = home(shard.slots[j].hash(), shard.slots.size());
    // Move j into the hole unless its home lies cyclically in (hole, j].
    bool home_after_hole = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (home_after_hole) continue;
    shard.slots[hole] = std::move(shard.slots[j]);
    hole = j;
  }
  shard.slots[hole] = Slot{};
  --shard.used;
}

void MemoryStore::evictOne(Shard& shard, int64_t now_ns) {
  const size_t mask = shard.slots.size() - 1;
  size_t victim = SIZE_MAX;
  int64_t victim_used = INT64_MAX;
  bool victim_referenced = true;
  int seen = 0;
  // Of the keys looked at, an idle unreferenced one goes at once; else the least used, an
  // unreferenced one first among equals: forgetting a key hands its client what it used,
  // so a flood of keys used once each pushes out one another, never a spent key, whether
  // or not the sweep's second chance is on it.
  for (size_t step = 0; step < 2 * shard.slots.size() && seen < kEvictionScan; ++step) {
    size_t i = shard.hand;
    shard.hand = (shard.hand + 1) & mask;
    Slot& slot = shard.slots[i];
    if (slot.empty()) continue;
    ++seen;
    const bool referenced = slot.referenced();
    if (referenced) {
      slot.setReferenced(false);  // a second chance
    } else if (algorithm_->idle(slot.state, now_ns)) {
      victim = i;
      break;
    }
    const int64_t used = algorithm_->used(slot.state, now_ns);
    if (used < victim_used || (used == victim_used && victim_referenced && !referenced)) {
      victim = i;
      victim_used = used;
      victim_referenced = referenced;
    }
  }
  if (victim == SIZE_MAX) victim = (shard.hand - 1) & mask;  // nothing looked at
  while (shard.slots[victim].empty()) victim = (victim + 1) & mask;
  if (algorithm_->idle(shard.slots[victim].state, now_ns)) {
    ++shard.evicted_idle;
  } else {
    ++shard.evicted_active;
  }
  erase(shard, victim);
}

MemoryStore::Slot& MemoryStore::findOrInsert(Shard& shard, uint64_t hash, std::string_view key,
                                             int64_t now_ns) {
  size_t i = probe(shard, hash, key);
  if (!shard.slots[i].empty()) {
    shard.slots[i].setReferenced(true);
    return shard.slots[i];
  }
  if (shard.used >= keys_per_shard_) {
    evictOne(shard, now_ns);
    i = probe(shard, hash, key);
  } else if ((shard.used + 1) * 4 > shard.slots.size() * 3) {
    grow(shard);
    i = probe(shard, hash, key);
  }
  Slot& slot = shard.slots[i];
  slot.tag = hash | 1;  // referenced
  slot.key.assign(key);
  ++shard.used;
  return slot;
}

Result<Decision> MemoryStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  std::string scratch;
  // Keys are attacker-controlled (an API key header): bounded, under a keyed hash, so no
  // one can make two long keys share a prefix and a hash, and a state.
  key = boundedKey(key, kMaxKeyBytes, scratch);
  uint64_t hash = hashOf(key);
  Shard& shard = shardFor(hash);
  std::lock_guard lock(shard.mutex);
  Slot& slot = findOrInsert(shard, hash, key, now_ns);
  return algorithm_->decide(slot.state, now_ns, cost);
}

void MemoryStore::prefetch(std::string_view key) const {
  std::string scratch;
  key = boundedKey(key, kMaxKeyBytes, scratch);
  const uint64_t hash = hashOf(key);
  const Shard& shard = shards_[(hash >> 48) & shard_mask_];
  const Slot* table = shard.table_hint.load(std::memory_order_relaxed);
  const size_t size = shard.size_hint.load(std::memory_order_relaxed);
  if (table != nullptr && size != 0) __builtin_prefetch(&table[home(hash, size)], 1);
}

void MemoryStore::refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) {
  std::string scratch;
  key = boundedKey(key, kMaxKeyBytes, scratch);
  uint64_t hash = hashOf(key);
  Shard& shard = shardFor(hash);
  std::lock_guard lock(shard.mutex);
  // An evicted key has nothing to give back to.
  size_t i = probe(shard, hash, key);
  if (!shard.slots[i].empty()) algorithm_->refund(shard.slots[i].state, admitted_ns, now_ns, cost);
}

void MemoryStore::forEach(
    const std::function<void(std::string_view key, const KeyState& state)>& fn) const {
  for (size_t i = 0; i <= shard_mask_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    for (const Slot& slot : shard.slots) {
      if (!slot.empty()) fn(slot.key.view(), slot.state);
    }
  }
}

void MemoryStore::put(std::string_view key, KeyState state, int64_t now_ns) {
  std::string scratch;
  key = boundedKey(key, kMaxKeyBytes, scratch);
  uint64_t hash = hashOf(key);
  Shard& shard = shardFor(hash);
  std::lock_guard lock(shard.mutex);
  findOrInsert(shard, hash, key, now_ns).state = std::move(state);
}

MemoryStoreStats MemoryStore::stats() const {
  MemoryStoreStats s;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    s.keys += static_cast<int64_t>(shard.used);
    s.evicted_idle += shard.evicted_idle;
    s.evicted_active += shard.evicted_active;
  }
  return s;
}

size_t MemoryStore::slotBytes() { return sizeof(Slot); }

}  // namespace floodgate::http
