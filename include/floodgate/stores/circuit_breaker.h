// SPDX-License-Identifier: MIT
// CircuitBreaker: stops calling a store that keeps failing, and probes it now and then.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "floodgate/core/clock.h"

namespace floodgate::http {

struct CircuitBreakerOptions {
  int failures_to_open = 3;  // consecutive failures that open the breaker
  int64_t open_ms = 1000;    // how long it stays open before one probe is let through
};

enum class BreakerState { kClosed = 0, kOpen = 1, kHalfOpen = 2 };
std::string_view breakerStateName(BreakerState state);  // closed | open | half_open

// closed: every call goes through; `failures_to_open` failures in a row open it.
// open: no call goes through (the caller answers by its failure policy at once, so a
// dead store costs no timeouts); after open_ms it turns half-open.
// half_open: exactly one call, the probe, goes through; its success closes the breaker,
// its failure opens it again for open_ms. Calls let through before it opened that end
// later move nothing: only the probe closes it.
// Thread-safe; a closed breaker costs one atomic load per call.
class CircuitBreaker {
 public:
  CircuitBreaker(CircuitBreakerOptions options, std::shared_ptr<const Clock> clock);

  // Whether this call may go to the store; *probe says whether it is the one call of a
  // half-open breaker. Every true must be followed by onSuccess(probe) or onFailure(probe),
  // or by notAsked(probe) when the call was answered without the store (a lease, a share),
  // which says nothing of its health.
  bool allow(bool* probe);
  void onSuccess(bool probe);
  void onFailure(bool probe);
  void notAsked(bool probe);

  BreakerState state() const { return static_cast<BreakerState>(state_.load()); }
  int64_t timesOpened() const { return times_opened_.load(); }

 private:
  void open(int64_t now_ns);  // under mutex_

  CircuitBreakerOptions options_;
  std::shared_ptr<const Clock> clock_;
  std::atomic<int> state_{0};
  std::atomic<int> consecutive_failures_{0};
  std::atomic<int64_t> times_opened_{0};
  std::mutex mutex_;
  int64_t open_until_ns_ = 0;
  bool probe_in_flight_ = false;
};

}  // namespace floodgate::http
