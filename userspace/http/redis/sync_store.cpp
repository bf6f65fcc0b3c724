// SPDX-License-Identifier: MIT
// Spending local shares, reconciling them with Redis every interval, and bounding the keys.
#include "floodgate/redis/sync_store.h"

#include <algorithm>

namespace floodgate::http {

namespace {
constexpr size_t kShards = 16;
constexpr size_t kKeysPerRound = 4096;  // one client call each; a round makes several
constexpr size_t kEvictionScan = 32;    // entries looked at for one that loses nothing
}  // namespace

SyncStore::SyncStore(std::unique_ptr<RedisStore> remote, std::function<int64_t()> instances,
                     std::shared_ptr<CircuitBreaker> breaker, std::shared_ptr<const Clock> clock,
                     SyncOptions options)
    : remote_(std::move(remote)),
      params_(remote_->algorithm()),
      quota_(remote_->quota()),
      instances_(std::move(instances)),
      breaker_(std::move(breaker)),
      clock_(std::move(clock)),
      options_(options),
      keys_per_shard_(std::max<size_t>(1, static_cast<size_t>(options.max_keys) / kShards)),
      shards_(kShards) {
  // a failed round keeps the spent units for the next one
  syncs_task_ =
      std::make_unique<PeriodicTask>(options_.background ? options_.interval_ms : 0,
                                     /*first_at_once=*/false, [this] { (void)syncNow(); });
}

SyncStore::~SyncStore() {
  syncs_task_->stop();
  // What was admitted since the last sync still counts for the fleet.
  if (breaker_->state() == BreakerState::kClosed) (void)syncNow();
}

SyncStore::Shard& SyncStore::shardFor(std::string_view key) {
  return shards_[(hasher_(key) >> 7) % kShards];
}

SyncStore::Entry* SyncStore::findOrInsert(Shard& shard, std::string_view key, int64_t now_ns) {
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) return &it->second;
  if (shard.entries.size() >= keys_per_shard_) {
    // Forget a key whose state is all in Redis: nothing unreported, nothing in flight, and
    // not used since the last sync (or with a share gone stale). Its next decision here
    // costs a round trip, never an admission Redis did not grant.
    size_t looked = 0;
    auto victim = shard.entries.end();
    for (auto e = shard.entries.begin(); e != shard.entries.end() && looked < kEvictionScan;
         ++e, ++looked) {
      const Entry& entry = e->second;
      if (!entry.syncing && entry.spent == 0 && entry.reporting == 0 &&
          (!entry.used || now_ns >= entry.fresh_until_ns)) {
        victim = e;
        break;
      }
    }
    if (victim == shard.entries.end()) return nullptr;
    shard.entries.erase(victim);
  }
  return &shard.entries.emplace(std::string(key), Entry{}).first->second;
}

Decision SyncStore::spend(Entry& entry, int64_t now_ns, int64_t cost) {
  entry.used = true;
  Decision d;
  d.limit = quota_;
  d.reset_ns = std::max<int64_t>(0, entry.reset_at_ns - now_ns);
  if (entry.share >= cost) {
    entry.share -= cost;
    entry.spent += cost;
    d.outcome = Outcome::kAllowed;
    d.remaining = entry.share;
    return d;
  }
  d.outcome = Outcome::kRejected;
  d.remaining = entry.share;
  // The next sync may grant a new share; but with nothing left for the fleet, the units
  // come back only with the window's end, or as the bucket refills the cost: told the next
  // sync instead, a client would retry (each a round trip once the share is stale) for
  // nothing.
  const int64_t next_sync_ns = std::max<int64_t>(options_.interval_ms, 1) * kNsPerMs;
  d.retry_after_ns = next_sync_ns;
  if (entry.fleet_remaining < cost && entry.reset_at_ns > now_ns) {
    int64_t back_ns = entry.reset_at_ns - now_ns;  // the window's end; a bucket full again
    if (params_.kind != AlgorithmKind::kFixedWindow && params_.rate_per_s > 0) {
      // a bucket has the cost back (capacity - cost) units before it is full, at the rate
      // the scripts refill at (whole thousandths of a unit per second)
      const double unit_ns = 1e12 / static_cast<double>(rateMilliPerS(params_.rate_per_s));
      back_ns -= static_cast<int64_t>(static_cast<double>(params_.capacity - cost) * unit_ns);
    }
    d.retry_after_ns = std::max(next_sync_ns, back_ns);
  }
  return d;
}

std::optional<Decision> SyncStore::decideLocally(std::string_view key, int64_t now_ns,
                                                 int64_t cost) {
  std::string scratch;
  key = RedisStore::boundedKey(key, scratch);  // what a client's key makes this store hold
  std::optional<Decision> d = fromShare(key, now_ns, cost);
  if (d) decided_locally_.fetch_add(1, std::memory_order_relaxed);
  return d;
}

std::optional<Decision> SyncStore::fromShare(std::string_view key, int64_t now_ns, int64_t cost) {
  if (cost > quota_) {
    Decision d;
    d.limit = quota_;
    d.outcome = Outcome::kCostExceedsBurst;
    return d;
  }
  Shard& shard = shardFor(key);
  std::lock_guard lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || now_ns >= it->second.fresh_until_ns) return std::nullopt;
  return spend(it->second, now_ns, cost);
}

Result<Decision> SyncStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  if (auto local = decideLocally(key, now_ns, cost)) return *local;
  std::string scratch;
  key = RedisStore::boundedKey(key, scratch);
  Shard& shard = shardFor(key);
  bool tracked = false;
  {
    std::lock_guard lock(shard.mutex);
    Entry* entry = findOrInsert(shard, key, now_ns);
    // Another thread syncing the key: not twice at once; this one asks Redis exactly.
    tracked = entry != nullptr && !entry->syncing;
  }
  if (!tracked) {
    exact_.fetch_add(1, std::memory_order_relaxed);
    return remote_->decide(key, now_ns, cost);
  }
  grants_.fetch_add(1, std::memory_order_relaxed);
  if (Status synced = syncKeys({std::string(key)}, now_ns); !synced) return synced.error();
  if (auto granted = fromShare(key, now_ns, cost)) return *granted;
  // The grant did not take (Redis answered this key with an error): as the exact store.
  exact_.fetch_add(1, std::memory_order_relaxed);
  return remote_->decide(key, now_ns, cost);
}

void SyncStore::refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) {
  std::string scratch;
  key = RedisStore::boundedKey(key, scratch);
  {
    Shard& shard = shardFor(key);
    std::lock_guard lock(shard.mutex);
    auto it = shard.entries.find(key);
    // Only a request admitted since the last report is in `spent`: an older one's units
    // were reported (and may be of a window since ended), so giving them to the share
    // would admit them twice.
    if (it != shard.entries.end() && admitted_ns >= it->second.spent_since_ns &&
        it->second.spent >= cost) {
      it->second.spent -= cost;
      it->second.share += cost;
      return;
    }
  }
  // Reported already (or decided exactly): Redis holds the units.
  remote_->refund(key, admitted_ns, now_ns, cost);
}

Status SyncStore::syncKeys(const std::vector<std::string>& keys, int64_t now_ns, bool* asked) {
  std::vector<RedisStore::SyncItem> items;
  items.reserve(keys.size());
  for (const std::string& key : keys) {
    Shard& shard = shardFor(key);
    std::lock_guard lock(shard.mutex);
    auto it = shard.entries.find(key);
    if (it == shard.entries.end() || it->second.syncing) continue;
    Entry& e = it->second;
    e.syncing = true;
    e.used = false;
    e.reporting = std::exchange(e.spent, 0);
    e.reporting_since_ns = std::exchange(e.spent_since_ns, clock_->nowNs());
    items.push_back({key, e.reporting, e.window_index});
  }
  if (items.empty()) return {};
  if (asked != nullptr) *asked = true;
  auto answers = remote_->sync(items, now_ns);
  const int64_t instances = std::max<int64_t>(1, instances_());
  const int64_t window_us = params_.window_ms * 1000;
  for (size_t i = 0; i < items.size(); ++i) {
    Shard& shard = shardFor(items[i].key);
    std::lock_guard lock(shard.mutex);
    auto it = shard.entries.find(items[i].key);
    if (it == shard.entries.end()) continue;  // syncing entries are never forgotten
    Entry& e = it->second;
    e.syncing = false;
    if (!answers || !(*answers)[i]) {
      e.spent += std::exchange(e.reporting, 0);  // for the next sync
      e.spent_since_ns = e.reporting_since_ns;
      continue;
    }
    e.reporting = 0;
    const RedisStore::Synced& synced = *(*answers)[i];
    // Spent while the sync was under way: out of the old share, not yet in R.
    e.share = std::max<int64_t>(0, ceilDiv(synced.remaining, instances) - e.spent);
    e.fleet_remaining = synced.remaining;
    // a debt near the 2^53 the scripts hold it under resets ~285 years on: kept in int64
    e.reset_at_ns =
        now_ns + std::min(synced.reset_ns, INT64_MAX / 2 - std::max<int64_t>(now_ns, 0));
    e.fresh_until_ns = now_ns + 2 * std::max<int64_t>(options_.interval_ms, 1) * kNsPerMs;
    if (params_.kind == AlgorithmKind::kFixedWindow) {
      // now_ns was read before the call: this end is never past Redis's.
      e.fresh_until_ns = std::min(e.fresh_until_ns, e.reset_at_ns);
      e.window_index = synced.redis_now_ns / 1000 / window_us;
    }
  }
  if (!answers) {
    failed_syncs_.fetch_add(1, std::memory_order_relaxed);
    return answers.error();
  }
  return {};
}

Status SyncStore::syncNow() {
  const int64_t now_ns = clock_->nowNs();
  std::vector<std::string> active;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    for (const auto& [key, e] : shard.entries) {
      if ((e.used || e.spent > 0) && !e.syncing) active.push_back(key);
    }
  }
  Status status;
  for (size_t from = 0; from < active.size(); from += kKeysPerRound) {
    bool probe = false;
    if (!breaker_->allow(&probe))
      return Error::failure("shared store unavailable (circuit breaker open)");
    size_t to = std::min(active.size(), from + kKeysPerRound);
    std::vector<std::string> round(active.begin() + static_cast<std::ptrdiff_t>(from),
                                   active.begin() + static_cast<std::ptrdiff_t>(to));
    bool asked = false;
    status = syncKeys(round, now_ns, &asked);
    if (!asked) {
      // Every key of the round began syncing on the request path meanwhile: Redis was not
      // called, which says nothing of its health. Closing a half-open breaker on it would
      // let decisions pay the timeout against a Redis still down.
      breaker_->notAsked(probe);
      continue;
    }
    if (!status) {
      breaker_->onFailure(probe);
      return status;
    }
    breaker_->onSuccess(probe);
    syncs_.fetch_add(1, std::memory_order_relaxed);
  }
  return status;
}

SyncStats SyncStore::stats() const {
  SyncStats s;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    s.keys += static_cast<int64_t>(shard.entries.size());
    for (const auto& [key, entry] : shard.entries) s.key_bytes += static_cast<int64_t>(key.size());
  }
  s.syncs = syncs_.load();
  s.grants = grants_.load();
  s.exact = exact_.load();
  s.failed_syncs = failed_syncs_.load();
  s.decided_locally = decided_locally_.load();
  return s;
}

}  // namespace floodgate::http
