// SPDX-License-Identifier: MIT
// Deciding remotely while the store answers, and by the failure mode when it does not.
#include "http/failover_store.h"

#include <algorithm>

namespace floodgate::http {

namespace {

// The limiter refunds on the thread that decided, right after deciding (within check()).
// A refund of a decision the fallback made must go back to the fallback, not to Redis,
// or it would give the fleet units it never took.
struct LastFallback {
  const void* store = nullptr;
  int64_t admitted_ns = 0;
  std::string key;
};
thread_local LastFallback last_fallback;

}  // namespace

AlgorithmParams shareOf(const AlgorithmParams& params, int64_t instances) {
  AlgorithmParams share = params;
  instances = std::max<int64_t>(1, instances);
  share.limit = std::max<int64_t>(1, params.limit / instances);
  share.capacity = std::max<int64_t>(1, params.capacity / instances);
  share.rate_per_s = std::max(kMinRatePerS, params.rate_per_s / static_cast<double>(instances));
  return share;
}

FailoverStore::FailoverStore(std::unique_ptr<Store> remote, std::unique_ptr<Store> fallback,
                             FailureMode mode, std::shared_ptr<CircuitBreaker> breaker)
    : remote_(std::move(remote)),
      fallback_(std::move(fallback)),
      mode_(mode),
      breaker_(std::move(breaker)) {}

Result<Decision> FailoverStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  Error error = Error::failure("shared store unavailable (circuit breaker open)");
  if (breaker_->allow()) {
    Result<Decision> decided = remote_->decide(key, now_ns, cost);
    if (decided) {
      breaker_->onSuccess();
      return decided;
    }
    breaker_->onFailure();
    store_errors_.fetch_add(1, std::memory_order_relaxed);
    error = decided.error();
  }
  if (mode_ == FailureMode::kClosed || fallback_ == nullptr) {
    failed_closed_.fetch_add(1, std::memory_order_relaxed);
    return error;
  }
  Result<Decision> local = fallback_->decide(key, now_ns, cost);
  if (local && local->allowed()) {
    fallback_allowed_.fetch_add(1, std::memory_order_relaxed);
    last_fallback = {this, now_ns, std::string(key)};
  } else {
    fallback_rejected_.fetch_add(1, std::memory_order_relaxed);
  }
  return local;
}

void FailoverStore::refund(std::string_view key, int64_t admitted_ns, int64_t cost) {
  if (last_fallback.store == this && last_fallback.admitted_ns == admitted_ns &&
      last_fallback.key == key) {
    last_fallback.store = nullptr;
    fallback_->refund(key, admitted_ns, cost);
    return;
  }
  // A refund is a call too: skip it while the store is known to be down.
  if (breaker_->state() == BreakerState::kClosed) remote_->refund(key, admitted_ns, cost);
}

FailoverStats FailoverStore::stats() const {
  return {store_errors_.load(), fallback_allowed_.load(), fallback_rejected_.load(),
          failed_closed_.load()};
}

}  // namespace floodgate::http
