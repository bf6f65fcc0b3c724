// SPDX-License-Identifier: MIT
// The clock the library reads time from, injected so tests and the lab step time by hand.
#pragma once

#include <atomic>
#include <cstdint>

namespace floodgate::http {

// A source of time in nanoseconds on a steady (never adjusted) timeline with an arbitrary
// origin. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t nowNs() const = 0;
};

// std::chrono::steady_clock: never moves backwards, ignores wall-clock changes.
class SteadyClock final : public Clock {
 public:
  int64_t nowNs() const override;
};

// CLOCK_MONOTONIC_COARSE: a few ns to read instead of tens, but it advances in kernel ticks
// (1-4 ms). A reading lags real time by less than a tick, which the algorithms treat like a
// stale reading: never more admitted, retry-after at most one tick longer than needed.
class CoarseSteadyClock final : public Clock {
 public:
  int64_t nowNs() const override;
};

// A clock that only moves when told to; for tests and `floodgate lab`. Thread-safe.
// It may be set backwards on purpose: the algorithms must tolerate stale readings.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ns = 0) : now_ns_(start_ns) {}
  int64_t nowNs() const override { return now_ns_.load(std::memory_order_relaxed); }
  void setNs(int64_t now_ns) { now_ns_.store(now_ns, std::memory_order_relaxed); }
  void setMs(int64_t now_ms) { setNs(now_ms * 1'000'000); }
  void advanceNs(int64_t delta_ns) { now_ns_.fetch_add(delta_ns, std::memory_order_relaxed); }
  void advanceMs(int64_t delta_ms) { advanceNs(delta_ms * 1'000'000); }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace floodgate::http
