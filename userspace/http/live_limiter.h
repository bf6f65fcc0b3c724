// SPDX-License-Identifier: MIT
// LiveLimiter: a Limiter whose policy set is replaced while requests are being decided.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "http/clock.h"
#include "http/limiter.h"

namespace floodgate::http {

// check() reads the current set with one atomic load; update() builds the next set beside
// it and swaps it in with one atomic store. A check() in flight finishes on the set it
// started with (its verdict keeps that set alive), so no request is dropped or decided
// twice. Thread-safe: check() from any number of threads, update() and refuse() from any
// (updates are serialised).
class LiveLimiter {
 public:
  LiveLimiter(std::shared_ptr<Limiter> initial, std::string version,
              std::shared_ptr<const Clock> clock, StoreFactory store_factory = {});

  Verdict check(const RequestInfo& request);
  // Limiter::refund() on the set that decided `verdict` (the current one or an earlier one).
  void refund(Verdict& verdict) const;

  // The set deciding now (for stats and metrics); it stays valid while held.
  std::shared_ptr<Limiter> current() const { return current_.load(); }
  std::string version() const;

  // Compiles `config` taking over the current set's state (Limiter::create with a previous
  // set: unchanged policies keep their store, changed limits migrate their state) and
  // swaps it in. An error (invalid parameters) keeps the current set and counts a refusal.
  Status update(HttpConfig config, const std::string& version);
  // A published document that could not be read or parsed: counted; the set stays.
  void refuse(const std::string& why);

  int64_t updatesApplied() const { return applied_.load(std::memory_order_relaxed); }
  int64_t updatesRefused() const { return refused_.load(std::memory_order_relaxed); }
  std::string lastRefusal() const;

 private:
  std::atomic<std::shared_ptr<Limiter>> current_;
  std::shared_ptr<const Clock> clock_;
  StoreFactory store_factory_;
  mutable std::mutex mutex_;  // serialises update(); guards version_ and last_refusal_
  std::string version_;
  std::string last_refusal_;
  std::atomic<int64_t> applied_{0};
  std::atomic<int64_t> refused_{0};
};

}  // namespace floodgate::http
