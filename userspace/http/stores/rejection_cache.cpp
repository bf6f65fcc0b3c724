// SPDX-License-Identifier: MIT
// Rejections remembered per key, in the order they were made, answered until they run out.
#include "floodgate/stores/rejection_cache.h"

#include <algorithm>

namespace floodgate::http {

namespace {
constexpr int64_t kNsPerMs = 1'000'000;
}  // namespace

RejectionCache::RejectionCache(RejectionCacheOptions options) : options_(options) {
  options_.max_keys = std::max<size_t>(1, options_.max_keys);
  options_.max_hold_ms = std::max<int64_t>(0, options_.max_hold_ms);
}

int64_t RejectionCache::Entry::until_ns() const {
  int64_t until = 0;
  for (const Held& h : held) until = std::max(until, h.until_ns);
  return until;
}

void RejectionCache::eraseLocked(Order::iterator it) {
  index_.erase(it->key);
  order_.erase(it);
  size_.store(index_.size(), std::memory_order_relaxed);
}

std::optional<Decision> RejectionCache::lookup(std::string_view key, int64_t now_ns, int64_t cost) {
  if (size_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::string scratch;
  key = boundedKey(key, kMaxKeyBytes, scratch);
  std::lock_guard lock(mutex_);
  auto found = index_.find(key);
  if (found == index_.end()) return std::nullopt;
  Entry& entry = *found->second;
  std::erase_if(entry.held, [now_ns](const Held& h) { return now_ns >= h.until_ns; });
  if (entry.held.empty()) {
    eraseLocked(found->second);
    return std::nullopt;
  }
  // This cost's own answer, else the largest smaller cost's: a larger cost is admitted only
  // where a smaller one would be (every algorithm's test is monotone in the cost).
  const Held* answer = nullptr;
  for (const Held& h : entry.held) {
    if (h.cost == cost) {
      answer = &h;
      break;
    }
    if (h.cost < cost && (answer == nullptr || h.cost > answer->cost)) answer = &h;
  }
  // Only larger costs held: a smaller one may fit.
  if (answer == nullptr) return std::nullopt;
  if (answer->cost != cost) {
    // Refused, but told a later retry than the smaller cost's: the store is asked once, and
    // its answer held, while the key has room for it. A cost above the limit never fits,
    // which the store says (no retry).
    if (cost > answer->rejection.limit || entry.held.size() < kCostsPerKey) return std::nullopt;
  }
  ++answered_;
  Decision d = answer->rejection;
  // Counted from the store's answer; a reading older than it (another thread's) is told
  // no more than the store said.
  const int64_t elapsed_ns = std::max<int64_t>(0, now_ns - answer->decided_ns);
  d.retry_after_ns = std::max<int64_t>(1, d.retry_after_ns - elapsed_ns);
  d.reset_ns = std::max<int64_t>(0, d.reset_ns - elapsed_ns);
  d.delay_ns = 0;
  return d;
}

void RejectionCache::remember(std::string_view key, int64_t now_ns, int64_t cost,
                              const Decision& decided) {
  if (decided.outcome != Outcome::kRejected || decided.retry_after_ns <= 0 ||
      options_.max_hold_ms == 0) {
    // Another cost was admitted: what is known of the key now has a later retry.
    if (decided.allowed()) forget(key);
    return;
  }
  const int64_t until_ns =
      now_ns + std::min(decided.retry_after_ns, options_.max_hold_ms * kNsPerMs);
  std::string scratch;
  key = boundedKey(key, kMaxKeyBytes, scratch);
  std::lock_guard lock(mutex_);
  Order::iterator it;
  if (auto found = index_.find(key); found != index_.end()) {
    // the key goes to the back of the line with its newest answer
    it = found->second;
    order_.splice(order_.end(), order_, it);
  } else {
    if (order_.size() >= options_.max_keys) {
      if (now_ns < order_.front().until_ns()) ++evicted_;
      eraseLocked(order_.begin());
    }
    it = order_.emplace(order_.end());
    it->key = std::string(key);
    index_.emplace(it->key, it);
    size_.store(index_.size(), std::memory_order_relaxed);
  }
  // The newer answer of a cost replaces its older one; a new cost takes a free place, or
  // that of the answer that runs out first.
  std::vector<Held>& held = it->held;
  auto slot =
      std::find_if(held.begin(), held.end(), [cost](const Held& h) { return h.cost == cost; });
  if (slot == held.end()) {
    if (held.size() < kCostsPerKey) {
      slot = held.emplace(held.end());
    } else {
      slot = std::min_element(held.begin(), held.end(),
                              [](const Held& a, const Held& b) { return a.until_ns < b.until_ns; });
    }
  }
  slot->cost = cost;
  slot->decided_ns = now_ns;
  slot->until_ns = until_ns;
  slot->rejection = decided;
  slot->rejection.policy = {};
}

void RejectionCache::forget(std::string_view key) {
  if (size_.load(std::memory_order_relaxed) == 0) return;
  std::string scratch;
  key = boundedKey(key, kMaxKeyBytes, scratch);
  std::lock_guard lock(mutex_);
  auto found = index_.find(key);
  if (found != index_.end()) eraseLocked(found->second);
}

RejectionCacheStats RejectionCache::stats() const {
  std::lock_guard lock(mutex_);
  return {static_cast<int64_t>(order_.size()), answered_, evicted_};
}

}  // namespace floodgate::http
