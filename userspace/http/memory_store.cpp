// SPDX-License-Identifier: MIT
// The in-memory store: hash to a shard, lock it, find or make the key's state, decide.
#include "http/memory_store.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace floodgate::http {

struct MemoryStore::Entry {
  std::string key;
  size_t hash = 0;
  KeyState state;
  Entry* hotter = nullptr;
  Entry* colder = nullptr;
};

namespace {

// Keys are attacker-controlled (an API key header): cap what one can make us store.
std::string_view boundedKey(std::string_view key, std::string& scratch) {
  if (key.size() <= MemoryStore::kMaxKeyBytes) return key;
  size_t whole = std::hash<std::string_view>{}(key);
  scratch.assign(key.substr(0, MemoryStore::kMaxKeyBytes - 24));
  scratch += "#";
  scratch += std::to_string(whole);
  return scratch;
}

// How many entries near the cold end are checked for an idle one before evicting the coldest.
constexpr int kIdleScan = 8;

}  // namespace

MemoryStore::MemoryStore(std::shared_ptr<const Algorithm> algorithm, MemoryStoreOptions options)
    : algorithm_(std::move(algorithm)) {
  size_t shards = std::bit_ceil(static_cast<size_t>(std::max(1, options.shards)));
  shard_mask_ = shards - 1;
  keys_per_shard_ =
      std::max<size_t>(1, (static_cast<size_t>(std::max<int64_t>(1, options.max_keys)) +
                           shards - 1) / shards);
  shards_ = std::make_unique<Shard[]>(shards);
}

MemoryStore::~MemoryStore() {
  for (size_t i = 0; i <= shard_mask_; ++i) {
    Entry* e = shards_[i].hottest;
    while (e != nullptr) {
      Entry* next = e->colder;
      delete e;
      e = next;
    }
  }
}

MemoryStore::Shard& MemoryStore::shardFor(size_t hash) {
  // The map buckets by the low bits; take the shard from the high ones.
  return shards_[(hash >> 40) & shard_mask_];
}

void MemoryStore::unlink(Shard& shard, Entry* e) {
  (e->hotter ? e->hotter->colder : shard.hottest) = e->colder;
  (e->colder ? e->colder->hotter : shard.coldest) = e->hotter;
  e->hotter = e->colder = nullptr;
}

void MemoryStore::pushHot(Shard& shard, Entry* e) {
  e->colder = shard.hottest;
  e->hotter = nullptr;
  if (shard.hottest) shard.hottest->hotter = e;
  shard.hottest = e;
  if (!shard.coldest) shard.coldest = e;
}

void MemoryStore::evictOne(Shard& shard, int64_t now_ns) {
  Entry* victim = shard.coldest;
  Entry* candidate = shard.coldest;
  for (int i = 0; i < kIdleScan && candidate != nullptr; ++i, candidate = candidate->hotter) {
    if (algorithm_->idle(candidate->state, now_ns)) {
      victim = candidate;
      break;
    }
  }
  if (algorithm_->idle(victim->state, now_ns)) {
    ++shard.evicted_idle;
  } else {
    ++shard.evicted_active;
  }
  shard.index.erase(KeyRef{victim->key, victim->hash});
  unlink(shard, victim);
  delete victim;
}

MemoryStore::Entry* MemoryStore::find(Shard& shard, const KeyRef& ref) {
  auto it = shard.index.find(ref);
  return it == shard.index.end() ? nullptr : it->second;
}

MemoryStore::Entry* MemoryStore::findOrInsert(Shard& shard, const KeyRef& ref, int64_t now_ns) {
  if (Entry* e = find(shard, ref)) {
    if (shard.hottest != e) {
      unlink(shard, e);
      pushHot(shard, e);
    }
    return e;
  }
  if (shard.index.size() >= keys_per_shard_) evictOne(shard, now_ns);
  auto entry = std::make_unique<Entry>();
  entry->key.assign(ref.key);
  entry->hash = ref.hash;
  Entry* e = entry.release();
  shard.index.emplace(KeyRef{e->key, e->hash}, e);
  pushHot(shard, e);
  return e;
}

Result<Decision> MemoryStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  std::string scratch;
  KeyRef ref{boundedKey(key, scratch), 0};
  ref.hash = std::hash<std::string_view>{}(ref.key);
  Shard& shard = shardFor(ref.hash);
  std::lock_guard lock(shard.mutex);
  Entry* e = findOrInsert(shard, ref, now_ns);
  return algorithm_->decide(e->state, now_ns, cost);
}

void MemoryStore::refund(std::string_view key, int64_t admitted_ns, int64_t cost) {
  std::string scratch;
  KeyRef ref{boundedKey(key, scratch), 0};
  ref.hash = std::hash<std::string_view>{}(ref.key);
  Shard& shard = shardFor(ref.hash);
  std::lock_guard lock(shard.mutex);
  // An evicted key has nothing to give back to.
  if (Entry* e = find(shard, ref)) algorithm_->refund(e->state, admitted_ns, cost);
}

MemoryStoreStats MemoryStore::stats() const {
  MemoryStoreStats s;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    s.keys += static_cast<int64_t>(shard.index.size());
    s.evicted_idle += shard.evicted_idle;
    s.evicted_active += shard.evicted_active;
  }
  return s;
}

size_t MemoryStore::overheadBytesPerKey() {
  // The entry less the algorithm's state words, plus an unordered_map node (next pointer,
  // key ref, value, cached hash) and one bucket pointer.
  size_t entry = sizeof(Entry) - sizeof(std::array<int64_t, 3>);
  size_t map_node = sizeof(void*) + sizeof(KeyRef) + sizeof(Entry*) + sizeof(size_t);
  return entry + map_node + sizeof(void*);
}

}  // namespace floodgate::http
