// SPDX-License-Identifier: MIT
// Leasing units for hot keys, spending them locally, and giving back what is left.
#include "floodgate/redis/prefetch_store.h"

#include <algorithm>

#include "floodgate/core/policy.h"

namespace floodgate::http {

namespace {
constexpr size_t kMaxHotKeys = 1024;
constexpr size_t kMaxCountedKeys = 8192;  // detection forgets everything beyond this
}  // namespace

PrefetchStore::PrefetchStore(std::unique_ptr<RedisStore> remote, AlgorithmKind kind,
                             PrefetchOptions options)
    : remote_(std::move(remote)), kind_(kind), options_(std::move(options)) {
  for (const std::string& key : options_.hot_keys) leases_[key] = std::make_unique<Lease>();
}

PrefetchStore::~PrefetchStore() { returnLeases(); }

PrefetchStore::Lease* PrefetchStore::hotLease(std::string_view key, int64_t now_ns) {
  // Clients choose keys: one longer than Redis keeps as it is is never hot, so no table here
  // holds more than that a key (the config refuses a longer hot key).
  static_assert(kMaxHotKeyBytes == RedisStore::kMaxKeyBytes);
  if (key.size() > kMaxHotKeyBytes) return nullptr;
  {
    std::shared_lock lock(leases_mutex_);
    auto it = leases_.find(std::string(key));
    if (it != leases_.end()) return it->second.get();
  }
  if (options_.detect_per_s <= 0) return nullptr;
  {
    std::lock_guard lock(counts_mutex_);
    int64_t second = now_ns / 1'000'000'000;
    if (second != counts_second_ || counts_.size() >= kMaxCountedKeys) {
      counts_.clear();
      counts_second_ = second;
    }
    if (++counts_[std::string(key)] < options_.detect_per_s) return nullptr;
  }
  std::unique_lock lock(leases_mutex_);
  if (leases_.size() >= kMaxHotKeys) return nullptr;
  auto& lease = leases_[std::string(key)];
  if (!lease) lease = std::make_unique<Lease>();
  return lease.get();
}

int64_t PrefetchStore::windowOf(int64_t redis_ns) const {
  return redis_ns / (std::max<int64_t>(1, remote_->algorithm().window_ms) * 1'000'000);
}

void PrefetchStore::lapse(Lease& lease) {
  std::lock_guard stats_lock(stats_mutex_);
  stats_.units_lapsed += std::exchange(lease.units, 0);
}

PrefetchStore::Taken PrefetchStore::takeUnits(Lease& lease) {
  return Taken{std::exchange(lease.units, 0), lease.redis_at_ns};
}

void PrefetchStore::giveBack(std::string_view key, Taken taken, int64_t now_ns) {
  if (taken.units == 0) return;
  // Best effort: units that cannot be given back (Redis down) lapse when the state expires.
  bool given = remote_->giveBack(key, taken.redis_at_ns, now_ns, taken.units).ok();
  std::lock_guard lock(stats_mutex_);
  (given ? stats_.units_returned : stats_.units_lapsed) += taken.units;
}

// Redis is never called with the lease's lock held: with Redis slow or gone, threads queued
// on the lock would each wait out their own timeout in turn. One thread refills the lease;
// the others meanwhile decide in Redis directly, side by side.
Result<Decision> PrefetchStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  // returnLeases()'s clock where the store has none of its own (a shared line written only then)
  if (!options_.clock) {
    for (int64_t seen = latest_now_ns_.load(std::memory_order_relaxed);
         now_ns > seen && !latest_now_ns_.compare_exchange_weak(seen, now_ns);) {
    }
  }
  Lease* lease = hotLease(key, now_ns);
  if (lease == nullptr) return remote_->decide(key, now_ns, cost);

  bool refill = false;
  {
    std::lock_guard lock(lease->mutex);
    if (lease->units > 0 && now_ns >= lease->expires_ns) {
      // The lease is over: its units lapse. A window's is over in Redis too (the refund
      // script would ignore units of a past window). A bucket has been refilling since
      // they were taken, as if they were spent: only what it has not refilled could come
      // back (the refund script's rule, unrefilledNs()), written off rather than sent.
      lapse(*lease);
    }
    if (lease->units >= cost) {
      lease->units -= cost;
      Decision d;
      d.limit = remote_->quota();
      d.outcome = Outcome::kAllowed;
      d.remaining = lease->remote_remaining + lease->units;
      d.reset_ns = std::max<int64_t>(0, lease->reset_at_ns - now_ns);
      return d;
    }
    refill = !std::exchange(lease->refilling, true);
  }
  if (!refill) return remote_->decide(key, now_ns, cost);

  auto answers =
      remote_->decideMany({{key, cost, std::max<int64_t>(0, options_.batch - cost)}}, now_ns);
  Taken older;
  Result<Decision> out = Error::failure("no answer");
  {
    std::lock_guard lock(lease->mutex);
    lease->refilling = false;
    if (!answers) return answers.error();
    Result<RedisStore::Answer>& answer = (*answers)[0];
    if (!answer) return answer.error();
    const Decision& d = answer->decision;
    out = d;
    if (d.allowed() && answer->leased > 0) {
      // Older units of a bucket lease are given back first so every unit held here is
      // younger than lease_ms. A window's older units are kept if they are of the window
      // Redis answered in: a refill sent at a window's end may be answered in the next,
      // where the units left of the last (or refunded into it meanwhile) are worth nothing.
      if (kind_ != AlgorithmKind::kFixedWindow) {
        older = takeUnits(*lease);
      } else if (lease->units > 0 &&
                 windowOf(lease->redis_at_ns) != windowOf(answer->redis_now_ns)) {
        lapse(*lease);
      }
      // a window's further leases add to its units; anything else starts them over
      if (kind_ != AlgorithmKind::kFixedWindow || lease->units == 0) lease->since_ns = now_ns;
      lease->units += answer->leased;
      lease->redis_at_ns = answer->redis_now_ns;
      lease->remote_remaining = d.remaining;
      lease->reset_at_ns = now_ns + d.reset_ns;
      // now_ns was read before the request left, so our window end is never past Redis's.
      lease->expires_ns = kind_ == AlgorithmKind::kFixedWindow
                              ? now_ns + d.reset_ns
                              : now_ns + options_.lease_ms * 1'000'000;
      std::lock_guard stats_lock(stats_mutex_);
      ++stats_.leases;
      stats_.units_leased += answer->leased;
    }
  }
  giveBack(key, older, now_ns);
  return out;
}

void PrefetchStore::refund(std::string_view key, int64_t admitted_ns, int64_t now_ns,
                           int64_t cost) {
  Lease* lease = nullptr;
  {
    std::shared_lock lock(leases_mutex_);
    auto it = leases_.find(std::string(key));
    if (it != leases_.end()) lease = it->second.get();
  }
  if (lease == nullptr) {
    remote_->refund(key, admitted_ns, now_ns, cost);
    return;
  }
  {
    // Back into the local lease while it lasts: it returns to Redis with the rest of it.
    std::lock_guard lock(lease->mutex);
    if (admitted_ns >= lease->since_ns && admitted_ns < lease->expires_ns) {
      lease->units += cost;
      return;
    }
  }
  remote_->refund(key, admitted_ns, now_ns, cost);
}

void PrefetchStore::returnLeases() {
  const int64_t now_ns = options_.clock ? options_.clock->nowNs() : latest_now_ns_.load();
  std::shared_lock lock(leases_mutex_);
  for (auto& [key, lease] : leases_) {
    Taken taken;
    {
      std::lock_guard lease_lock(lease->mutex);
      if (now_ns >= lease->expires_ns) {  // over: its units lapse, as in decide()
        lapse(*lease);
        continue;
      }
      taken = takeUnits(*lease);
    }
    giveBack(key, taken, now_ns);
  }
}

PrefetchStats PrefetchStore::stats() const {
  PrefetchStats s;
  {
    std::lock_guard lock(stats_mutex_);
    s = stats_;
  }
  std::shared_lock lock(leases_mutex_);
  s.hot_keys = static_cast<int64_t>(leases_.size());
  for (const auto& [key, lease] : leases_) {
    std::lock_guard lease_lock(lease->mutex);
    s.stranded += lease->units;
  }
  return s;
}

}  // namespace floodgate::http
