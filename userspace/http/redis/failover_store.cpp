// SPDX-License-Identifier: MIT
// Deciding remotely while the store answers, and by the failure mode when it does not.
#include "floodgate/redis/failover_store.h"

#include <algorithm>

namespace floodgate::http {

FailoverStore::FailoverStore(std::unique_ptr<Store> remote, std::unique_ptr<Store> fallback,
                             FailureMode mode, std::shared_ptr<CircuitBreaker> breaker,
                             RejectionCacheOptions rejections)
    : remote_(std::move(remote)),
      fallback_(std::move(fallback)),
      mode_(mode),
      breaker_(std::move(breaker)),
      rejections_(rejections) {
  batchable_ = dynamic_cast<RedisStore*>(remote_.get());
  sync_ = dynamic_cast<SyncStore*>(remote_.get());
}

std::optional<Decision> FailoverStore::knownRejection(std::string_view key, int64_t now_ns,
                                                      int64_t cost) {
  return rejections_.lookup(key, now_ns, cost);
}

Result<Decision> FailoverStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  if (sync_ != nullptr) {
    // A local decision says nothing of Redis's health: it neither feeds the breaker nor is
    // made while the breaker is open (closed mode then rejects, open mode has its fallback).
    if (breaker_->state() == BreakerState::kClosed) {
      if (auto local = sync_->decideLocally(key, now_ns, cost)) return *local;
    }
  } else if (auto known = rejections_.lookup(key, now_ns, cost)) {
    return *known;
  }
  bool probe = false;
  if (!breaker_->allow(&probe)) {
    return failed(key, now_ns, cost,
                  Error::failure("shared store unavailable (circuit breaker open)"));
  }
  const int64_t calls = redis::Client::callsOnThisThread();
  Result<Decision> decided = remote_->decide(key, now_ns, cost);
  // A decision made without Redis (a prefetch lease, a fresh sync share) tells nothing of its
  // health: it neither closes a half-open breaker nor clears the failures that open one.
  const bool asked = redis::Client::callsOnThisThread() != calls;
  if (decided) {
    asked ? breaker_->onSuccess(probe) : breaker_->notAsked(probe);
    if (sync_ == nullptr) rejections_.remember(key, now_ns, cost, *decided);
    return decided;
  }
  asked ? breaker_->onFailure(probe) : breaker_->notAsked(probe);
  store_errors_.fetch_add(1, std::memory_order_relaxed);
  return failed(key, now_ns, cost, decided.error());
}

const void* FailoverStore::batchGroup() const {
  return batchable_ != nullptr ? batchable_->sharedClient().get() : nullptr;
}

std::vector<SharedStore::Answer> FailoverStore::decideTogether(const std::vector<Item>& items,
                                                               int64_t now_ns, bool charge) {
  std::vector<Answer> out(items.size());
  if (items.empty()) return out;
  // The group is this store's Redis client, and only failover stores have one; an item of
  // another store (a caller's mistake) is decided on its own rather than trusted.
  std::vector<FailoverStore*> stores(items.size(), nullptr);
  std::vector<size_t> ask;  // the items without a known rejection
  ask.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    auto* store = dynamic_cast<FailoverStore*>(item.store);
    if (store == nullptr || store->batchGroup() != batchGroup() || batchGroup() == nullptr) {
      out[i].decision = item.store->decide(item.key, now_ns, item.cost);
      if (out[i].decision && !out[i].decision->allowed()) charge = false;
      continue;
    }
    stores[i] = store;
    if (auto known = store->rejections_.lookup(item.key, now_ns, item.cost)) {
      out[i].decision = *known;
      charge = false;  // the request is refused: what Redis decides need not be charged
    } else {
      ask.push_back(i);
    }
  }
  if (ask.empty()) return out;
  CircuitBreaker& breaker = *breaker_;
  bool probe = false;
  if (!breaker.allow(&probe)) {
    for (size_t i : ask) {
      const Item& item = items[i];
      out[i].decision =
          stores[i]->failed(item.key, now_ns, item.cost,
                            Error::failure("shared store unavailable (circuit breaker open)"));
    }
    return out;
  }
  std::vector<RedisStore::Across> across;
  across.reserve(ask.size());
  for (size_t i : ask) {
    across.push_back({stores[i]->batchable_, {items[i].key, items[i].cost, 0}});
  }
  auto answers = RedisStore::decideAtomically(across, now_ns, charge);
  bool all_answered = answers.ok();
  for (size_t j = 0; j < ask.size(); ++j) {
    const Item& item = items[ask[j]];
    FailoverStore* store = stores[ask[j]];
    if (answers && (*answers)[j]) {
      const RedisStore::Answer& answer = *(*answers)[j];
      store->rejections_.remember(item.key, now_ns, item.cost, answer.decision);
      out[ask[j]] = {answer.decision, answer.charged};
      continue;
    }
    all_answered = false;
    store->store_errors_.fetch_add(1, std::memory_order_relaxed);
    Error error = answers ? (*answers)[j].error() : answers.error();
    out[ask[j]].decision = store->failed(item.key, now_ns, item.cost, std::move(error));
  }
  // One call: one success or one failure for the breaker.
  if (all_answered) {
    breaker.onSuccess(probe);
  } else {
    breaker.onFailure(probe);
  }
  return out;
}

Result<Decision> FailoverStore::failed(std::string_view key, int64_t now_ns, int64_t cost,
                                       Error error) {
  if (mode_ == FailureMode::kClosed || fallback_ == nullptr) {
    failed_closed_.fetch_add(1, std::memory_order_relaxed);
    return error;
  }
  Result<Decision> local = fallback_->decide(key, now_ns, cost);
  if (local && local->allowed()) {
    fallback_allowed_.fetch_add(1, std::memory_order_relaxed);
    // its units are the fallback's: a refund of it goes there (refundDecision), not to a
    // Redis that never took them
    local->by_fallback = true;
  } else {
    fallback_rejected_.fetch_add(1, std::memory_order_relaxed);
  }
  return local;
}

void FailoverStore::refund(std::string_view key, int64_t admitted_ns, int64_t now_ns,
                           int64_t cost) {
  refundDecision(key, Decision{}, admitted_ns, now_ns, cost);
}

void FailoverStore::refundDecision(std::string_view key, const Decision& decision,
                                   int64_t admitted_ns, int64_t now_ns, int64_t cost) {
  // Units come back: a rejection remembered for the key may no longer hold.
  rejections_.forget(key);
  if (decision.by_fallback) {
    if (fallback_ != nullptr) fallback_->refund(key, admitted_ns, now_ns, cost);
    return;
  }
  // A refund is a call too: skip it while the store is known to be down.
  if (breaker_->state() == BreakerState::kClosed) remote_->refund(key, admitted_ns, now_ns, cost);
}

FailoverStats FailoverStore::stats() const {
  return {store_errors_.load(), fallback_allowed_.load(), fallback_rejected_.load(),
          failed_closed_.load(), rejections_.stats().answered};
}

}  // namespace floodgate::http
