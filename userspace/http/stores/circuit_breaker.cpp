// SPDX-License-Identifier: MIT
// The breaker's three states and the moves between them.
#include "floodgate/stores/circuit_breaker.h"

namespace floodgate::http {

std::string_view breakerStateName(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed:
      return "closed";
    case BreakerState::kOpen:
      return "open";
    case BreakerState::kHalfOpen:
      return "half_open";
  }
  return "unknown";
}

CircuitBreaker::CircuitBreaker(CircuitBreakerOptions options, std::shared_ptr<const Clock> clock)
    : options_(options), clock_(std::move(clock)) {}

bool CircuitBreaker::allow(bool* probe) {
  if (probe != nullptr) *probe = false;
  if (state() == BreakerState::kClosed) return true;
  std::lock_guard lock(mutex_);
  if (state() == BreakerState::kClosed) return true;
  if (probe_in_flight_) return false;
  if (state() == BreakerState::kOpen && clock_->nowNs() < open_until_ns_) return false;
  state_.store(static_cast<int>(BreakerState::kHalfOpen));
  probe_in_flight_ = true;  // this caller is the probe
  if (probe != nullptr) *probe = true;
  return true;
}

void CircuitBreaker::onSuccess(bool probe) {
  if (state() == BreakerState::kClosed) {
    if (consecutive_failures_.load(std::memory_order_relaxed) != 0) consecutive_failures_.store(0);
    return;
  }
  // Only the probe closes it: a call let through before it opened that answers late says
  // little of a store that failed the calls after it, and closing on it would send every
  // caller back to a store that may time out again (a breaker flapping on a degraded store).
  if (!probe) return;
  std::lock_guard lock(mutex_);
  consecutive_failures_.store(0);
  probe_in_flight_ = false;
  state_.store(static_cast<int>(BreakerState::kClosed));
}

void CircuitBreaker::notAsked(bool probe) {
  if (!probe) return;  // a call let through while closed holds no probe
  std::lock_guard lock(mutex_);
  probe_in_flight_ = false;  // the next call is the probe
}

void CircuitBreaker::open(int64_t now_ns) {
  open_until_ns_ = now_ns + options_.open_ms * 1'000'000;
  if (state() != BreakerState::kOpen) times_opened_.fetch_add(1);
  state_.store(static_cast<int>(BreakerState::kOpen));
}

void CircuitBreaker::onFailure(bool probe) {
  std::lock_guard lock(mutex_);
  if (probe) {
    probe_in_flight_ = false;
    open(clock_->nowNs());
    return;
  }
  // a call that started before it opened: the probe, not this one, says when it may close
  if (state() != BreakerState::kClosed) return;
  if (consecutive_failures_.fetch_add(1) + 1 >= options_.failures_to_open) open(clock_->nowNs());
}

}  // namespace floodgate::http
