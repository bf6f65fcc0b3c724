// SPDX-License-Identifier: MIT
// LiveLimiter: build the next set from the current one, then one atomic swap.
#include "floodgate/core/live_limiter.h"

#include <algorithm>

namespace floodgate::http {

namespace {

// The set this thread last decided on, of which LiveLimiter and generation (see
// LiveLimiter::generation_). Weak: a set swapped out is freed when its last verdict is.
struct SeenSet {
  uint64_t limiter = 0;
  uint64_t generation = 0;
  std::weak_ptr<Limiter> set;
};
thread_local SeenSet t_seen;

std::atomic<uint64_t> g_next_limiter_id{1};

}  // namespace

LiveLimiter::LiveLimiter(std::shared_ptr<Limiter> initial, std::string version,
                         std::shared_ptr<const Clock> clock, StoreFactory store_factory,
                         uint64_t serial)
    : current_(std::move(initial)),
      id_(g_next_limiter_id.fetch_add(1, std::memory_order_relaxed)),
      clock_(std::move(clock)),
      store_factory_(std::move(store_factory)),
      version_(std::move(version)),
      serial_(serial) {}

Verdict LiveLimiter::check(const RequestInfo& request) {
  // Acquire: a generation read after update() raised it finds its set in current_.
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  std::shared_ptr<Limiter> set;
  if (t_seen.limiter == id_ && t_seen.generation == generation) set = t_seen.set.lock();
  if (!set) {  // another limiter, a new set, or one swapped out meanwhile and gone
    set = current_.load();
    t_seen = {id_, generation, set};
  }
  Verdict verdict = set->check(request);
  verdict.policy_set = std::move(set);
  return verdict;
}

void LiveLimiter::refund(Verdict& verdict, int64_t kept) const {
  // check() keeps the set that decided in policy_set: its stores hold what is given back
  if (const auto* set = static_cast<const Limiter*>(verdict.policy_set.get())) {
    set->refund(verdict, kept);
  }
}

bool LiveLimiter::reenter(Verdict& verdict) const {
  if (const auto* set = static_cast<const Limiter*>(verdict.policy_set.get())) {
    return set->reenter(verdict);
  }
  return verdict.allowed();
}

void LiveLimiter::jitterRetryAfter(Verdict& verdict) const {
  if (const auto* set = static_cast<const Limiter*>(verdict.policy_set.get())) {
    set->jitterRetryAfter(verdict.binding);
  }
}

std::string LiveLimiter::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

uint64_t LiveLimiter::serial() const {
  std::lock_guard lock(mutex_);
  return serial_;
}

int64_t LiveLimiter::updatesRefused() const {
  int64_t total = 0;
  for (const auto& count : refused_) total += count.load(std::memory_order_relaxed);
  return total;
}

std::string LiveLimiter::lastRefusal() const {
  std::lock_guard lock(mutex_);
  return last_refusal_;
}

Status LiveLimiter::update(HttpConfig config, const std::string& version, uint64_t serial) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<Limiter> previous = current_.load();
  auto next = Limiter::create(std::move(config), clock_, store_factory_, previous.get());
  if (!next) {
    refused_[static_cast<size_t>(PolicyRefusal::kInvalid)].fetch_add(1, std::memory_order_relaxed);
    last_refusal_ = next.error().message;
    return next.error();
  }
  current_.store(std::shared_ptr<Limiter>(std::move(*next)));
  generation_.fetch_add(1, std::memory_order_release);
  version_ = version;
  serial_ = std::max(serial_, serial);
  applied_.fetch_add(1, std::memory_order_relaxed);
  return okStatus();
}

void LiveLimiter::noteSerial(uint64_t serial) {
  std::lock_guard lock(mutex_);
  serial_ = std::max(serial_, serial);
}

void LiveLimiter::refuse(PolicyRefusal reason, const std::string& why) {
  std::lock_guard lock(mutex_);
  refused_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  last_refusal_ = why;
}

}  // namespace floodgate::http
