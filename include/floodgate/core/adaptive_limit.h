// SPDX-License-Identifier: MIT
// AdaptiveLimit: a concurrency limit that follows the service's latency and error rate.
#pragma once

#include <cstdint>
#include <mutex>

namespace floodgate::http {

// http.adaptive_concurrency: the bounds and how eagerly the limit moves.
struct AdaptiveConcurrencyConfig {
  bool enabled = false;
  int64_t floor = 4;       // the limit never goes below: some work always gets through
  int64_t ceiling = 1000;  // nor above
  int64_t initial = 20;    // where it starts
  double tolerance = 1.2;  // latency may grow to this times the no-load latency unpunished
  int64_t window = 50;     // requests per adjustment (and at least window_ms apart)
  int64_t window_ms = 100;
  double error_rate = 0.1;    // a window with more 5xx than this shrinks the limit
  int64_t probe_every = 100;  // windows between two that run at the floor (see below)
  uint64_t retry_after_ns = 1'000'000'000;

  bool operator==(const AdaptiveConcurrencyConfig&) const = default;
};

// The gradient method of Netflix's concurrency-limits (and Envoy's adaptive concurrency
// filter): each window of finished requests compares its average latency with the
// no-load latency, and the limit moves by that gradient:
//   gradient = clamp(tolerance × no_load / recent, 0.5, 1)
//   limit    = clamp(limit × gradient + sqrt(limit), floor, ceiling)
// so it grows by about its square root while latency stays within tolerance, and shrinks
// by up to half as latency rises (more requests in flight only queue). A window whose 5xx
// share exceeds error_rate shrinks it by a tenth, whatever its latency. The no-load latency
// is the lowest window average seen; every probe_every windows one window runs at the
// floor, and what it measures becomes the no-load latency (Envoy's minRTT probe), so a
// lasting change of the service's normal is learned again, either way. Thread-safe; times
// come from the caller (a clock).
class AdaptiveLimit {
 public:
  explicit AdaptiveLimit(const AdaptiveConcurrencyConfig& config);

  // A finished request: how long it took, and whether it failed (5xx), at `now_ns`.
  void record(int64_t latency_ns, bool error, int64_t now_ns);

  // The requests that may be in flight now (the floor during a probe window).
  int64_t limit() const;
  int64_t noLoadLatencyNs() const;
  int64_t recentLatencyNs() const;

 private:
  void adjust(int64_t now_ns);  // with mutex_ held

  const AdaptiveConcurrencyConfig config_;
  mutable std::mutex mutex_;
  double limit_;
  double no_load_ns_ = 0;  // 0: not measured yet
  double recent_ns_ = 0;
  int64_t window_start_ns_ = -1;
  int64_t samples_ = 0;
  int64_t errors_ = 0;
  double latency_sum_ns_ = 0;
  int64_t windows_ = 0;
  bool probing_ = false;
};

}  // namespace floodgate::http
