// SPDX-License-Identifier: MIT
// LiveLimiter: a Limiter whose policy set is replaced while requests are being decided.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "floodgate/common/result.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/limiter.h"
#include "floodgate/core/policy_refusal.h"

namespace floodgate::http {

// update() builds the next set beside the current one and swaps it in with one atomic store;
// check() reads the set it decides on without a lock (below). A check() in flight finishes
// on the set it started with (its verdict keeps that set alive), so no request is dropped
// or decided twice. Thread-safe: check() from any number of threads, update() and refuse()
// from any (updates are serialised).
class LiveLimiter {
 public:
  // `serial`: of the signed document the initial set came from (0: none).
  LiveLimiter(std::shared_ptr<Limiter> initial, std::string version,
              std::shared_ptr<const Clock> clock, StoreFactory store_factory = {},
              uint64_t serial = 0);

  Verdict check(const RequestInfo& request);
  // Limiter::refund() on the set that decided `verdict` (the current one or an earlier one).
  void refund(Verdict& verdict, int64_t kept = 0) const;
  // Limiter::reenter() on the set that decided `verdict`.
  bool reenter(Verdict& verdict) const;
  // Limiter::jitterRetryAfter() of `verdict`'s binding decision, by the set that decided it.
  void jitterRetryAfter(Verdict& verdict) const;

  // The set deciding now (for stats and metrics); it stays valid while held.
  std::shared_ptr<Limiter> current() const { return current_.load(); }
  std::string version() const;
  // The highest serial of a signed document taken (0: none): one below it is a replay.
  uint64_t serial() const;

  // Compiles `config` taking over the current set's state (Limiter::create with a previous
  // set: unchanged policies keep their store, changed limits migrate their state) and
  // swaps it in, with `serial` (of a signed document; 0: unsigned) as serial() when higher.
  // An error (invalid parameters) keeps the current set and counts a kInvalid refusal.
  Status update(HttpConfig config, const std::string& version, uint64_t serial = 0);
  // A signed document of the version in force, published again: raises serial() to `serial`
  // (never lowers it), so that the documents between become replays.
  void noteSerial(uint64_t serial);
  // A published document that was not taken (unreadable, invalid, unsigned, forged, stale):
  // counted under `reason`; the set stays.
  void refuse(PolicyRefusal reason, const std::string& why);

  int64_t updatesApplied() const { return applied_.load(std::memory_order_relaxed); }
  // Refusals of every reason, or of one.
  int64_t updatesRefused() const;
  int64_t updatesRefused(PolicyRefusal reason) const {
    return refused_[static_cast<size_t>(reason)].load(std::memory_order_relaxed);
  }
  std::string lastRefusal() const;

 private:
  std::atomic<std::shared_ptr<Limiter>> current_;
  // Raised after every swap of current_. A load of current_ takes a spin lock (libstdc++'s
  // atomic<shared_ptr>), which a pool of server threads on a few cores spun on for 1% of a
  // service's CPU: check() keeps a weak reference to the set it read (per thread, so it
  // keeps nothing alive) and reads current_ again only when the generation has moved.
  std::atomic<uint64_t> generation_{0};
  const uint64_t id_;  // this LiveLimiter among all of the process, for those references
  std::shared_ptr<const Clock> clock_;
  StoreFactory store_factory_;
  mutable std::mutex mutex_;  // serialises update(); guards version_, serial_, last_refusal_
  std::string version_;
  uint64_t serial_ = 0;
  std::string last_refusal_;
  std::atomic<int64_t> applied_{0};
  std::array<std::atomic<int64_t>, kPolicyRefusalKinds> refused_{};
};

}  // namespace floodgate::http
