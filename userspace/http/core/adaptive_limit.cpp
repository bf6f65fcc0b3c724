// SPDX-License-Identifier: MIT
// The gradient concurrency limit.
#include "floodgate/core/adaptive_limit.h"

#include <algorithm>
#include <cmath>

namespace floodgate::http {

AdaptiveLimit::AdaptiveLimit(const AdaptiveConcurrencyConfig& config)
    : config_(config),
      limit_(static_cast<double>(std::clamp(config.initial, config.floor, config.ceiling))) {}

void AdaptiveLimit::record(int64_t latency_ns, bool error, int64_t now_ns) {
  std::lock_guard lock(mutex_);
  if (window_start_ns_ < 0) window_start_ns_ = now_ns;
  ++samples_;
  errors_ += error;
  latency_sum_ns_ += static_cast<double>(std::max<int64_t>(latency_ns, 0));
  if (samples_ >= config_.window && now_ns - window_start_ns_ >= config_.window_ms * 1'000'000) {
    adjust(now_ns);
  }
}

void AdaptiveLimit::adjust(int64_t now_ns) {
  const double average = std::max(latency_sum_ns_ / static_cast<double>(samples_), 1.0);
  const bool failing =
      static_cast<double>(errors_) > config_.error_rate * static_cast<double>(samples_);
  recent_ns_ = average;
  window_start_ns_ = now_ns;
  samples_ = 0;
  errors_ = 0;
  latency_sum_ns_ = 0;
  if (probing_) {
    // a window at the floor: what the service takes with next to nothing queued
    probing_ = false;
    if (!failing) no_load_ns_ = average;
    return;
  }
  if (no_load_ns_ == 0 || average < no_load_ns_) no_load_ns_ = average;
  double next;
  if (failing) {
    next = limit_ * 0.9;
  } else {
    const double gradient = std::clamp(config_.tolerance * no_load_ns_ / average, 0.5, 1.0);
    next = limit_ * gradient + std::sqrt(limit_);
  }
  limit_ =
      std::clamp(next, static_cast<double>(config_.floor), static_cast<double>(config_.ceiling));
  if (config_.probe_every > 0 && ++windows_ % config_.probe_every == 0) probing_ = true;
}

int64_t AdaptiveLimit::limit() const {
  std::lock_guard lock(mutex_);
  return probing_ ? config_.floor : static_cast<int64_t>(limit_);
}

int64_t AdaptiveLimit::noLoadLatencyNs() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(no_load_ns_);
}

int64_t AdaptiveLimit::recentLatencyNs() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(recent_ns_);
}

}  // namespace floodgate::http
