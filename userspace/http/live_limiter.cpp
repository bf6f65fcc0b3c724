// SPDX-License-Identifier: MIT
// LiveLimiter: build the next set from the current one, then one atomic swap.
#include "http/live_limiter.h"

namespace floodgate::http {

LiveLimiter::LiveLimiter(std::shared_ptr<Limiter> initial, std::string version,
                         std::shared_ptr<const Clock> clock, StoreFactory store_factory)
    : current_(std::move(initial)),
      clock_(std::move(clock)),
      store_factory_(std::move(store_factory)),
      version_(std::move(version)) {}

Verdict LiveLimiter::check(const RequestInfo& request) {
  std::shared_ptr<Limiter> set = current_.load();
  Verdict verdict = set->check(request);
  verdict.policy_set = std::move(set);
  return verdict;
}

void LiveLimiter::refund(Verdict& verdict) const {
  // check() keeps the set that decided in policy_set: its stores hold what is given back
  if (const auto* set = static_cast<const Limiter*>(verdict.policy_set.get())) set->refund(verdict);
}

std::string LiveLimiter::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

std::string LiveLimiter::lastRefusal() const {
  std::lock_guard lock(mutex_);
  return last_refusal_;
}

Status LiveLimiter::update(HttpConfig config, const std::string& version) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<Limiter> previous = current_.load();
  auto next = Limiter::create(std::move(config), clock_, store_factory_, previous.get());
  if (!next) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    last_refusal_ = next.error().message;
    return next.error();
  }
  current_.store(std::shared_ptr<Limiter>(std::move(*next)));
  version_ = version;
  applied_.fetch_add(1, std::memory_order_relaxed);
  return okStatus();
}

void LiveLimiter::refuse(const std::string& why) {
  std::lock_guard lock(mutex_);
  refused_.fetch_add(1, std::memory_order_relaxed);
  last_refusal_ = why;
}

}  // namespace floodgate::http
