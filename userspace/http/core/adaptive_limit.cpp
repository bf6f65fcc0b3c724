// SPDX-License-Identifier: MIT
// The gradient concurrency limit.
#include "floodgate/core/adaptive_limit.h"

#include <algorithm>
#include <cmath>

namespace floodgate::http {

namespace {

// The median of `values` (the upper one of an even count), reordering them.
int64_t medianOf(std::vector<int64_t>& values) {
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

AdaptiveLimit::AdaptiveLimit(const AdaptiveConcurrencyConfig& config)
    : config_(config),
      samples_per_client_(std::max<int64_t>(1, config.window / 4)),
      limit_(static_cast<double>(std::clamp(config.initial, config.floor, config.ceiling))) {}

void AdaptiveLimit::record(const Sample& sample, int64_t now_ns) {
  std::lock_guard lock(mutex_);
  // admitted before the probe, at the limit of then: it says nothing of the floor
  if (probing_ && sample.probes != probes_.load(std::memory_order_relaxed)) return;
  if (probing_) probe_progress_ns_ = now_ns;  // one of its own finished: it moves
  if (window_start_ns_ < 0) window_start_ns_ = now_ns;
  ++finished_;
  if (sample.error) {
    ++errors_;
  } else if (++samples_of_[sample.client] <= samples_per_client_) {
    latencies_ns_.push_back(std::max<int64_t>(sample.latency_ns, 1));
  }
  if (finished_ >= config_.window && now_ns - window_start_ns_ >= config_.window_ms * 1'000'000) {
    adjust(now_ns);
  }
}

void AdaptiveLimit::adjust(int64_t now_ns) {
  const bool failing =
      static_cast<double>(errors_) > config_.error_rate * static_cast<double>(finished_);
  const bool measured = !latencies_ns_.empty();
  const int64_t median_ns = measured ? medianOf(latencies_ns_) : 0;
  window_start_ns_ = now_ns;
  finished_ = 0;
  errors_ = 0;
  latencies_ns_.clear();
  samples_of_.clear();
  // clear() keeps the buckets, and clears them all each window: a window of many clients
  // (a flood from many addresses) must not make every later one pay for it
  if (samples_of_.bucket_count() > 1024) samples_of_.rehash(0);
  if (measured) recent_ns_ = median_ns;
  if (probing_) {
    // a window at the floor: what the service takes with next to nothing queued
    probing_ = false;
    if (!failing && median_ns > no_load_ns_) {
      // slower than the no-load latency: a new normal, which the windows before it, all
      // faster, must not lower again
      no_load_ns_ = median_ns;
      medians_ns_.clear();
    } else if (measured) {
      rememberWindow(median_ns);
    }
    return;
  }
  if (measured) rememberWindow(median_ns);
  double next = limit_;
  if (failing) {
    next = limit_ * 0.9;
  } else if (measured && no_load_ns_ > 0) {
    const double gradient = std::clamp(
        config_.tolerance * static_cast<double>(no_load_ns_) / static_cast<double>(median_ns), 0.5,
        1.0);
    next = limit_ * gradient + std::sqrt(limit_);
  }
  limit_ =
      std::clamp(next, static_cast<double>(config_.floor), static_cast<double>(config_.ceiling));
  if (config_.probe_every > 0 && ++windows_ % config_.probe_every == 0) {
    probing_ = true;
    probe_progress_ns_ = now_ns;
    probe_places_.store(0, std::memory_order_relaxed);
    probes_.fetch_add(1, std::memory_order_relaxed);
  }
}

void AdaptiveLimit::rememberWindow(int64_t median_ns) {
  medians_ns_.push_back(median_ns);
  if (medians_ns_.size() > kBaselineWindows) medians_ns_.pop_front();
  if (medians_ns_.size() < kBaselineWindows) return;
  std::vector<int64_t> last(medians_ns_.begin(), medians_ns_.end());
  const int64_t typical_ns = medianOf(last);
  if (no_load_ns_ == 0 || typical_ns < no_load_ns_) no_load_ns_ = typical_ns;
}

int64_t AdaptiveLimit::limit() const {
  std::lock_guard lock(mutex_);
  return probing_ ? config_.floor : static_cast<int64_t>(limit_);
}

int64_t AdaptiveLimit::probeTimeLimitNs() const {
  // ten windows' time, a second, or ten of the service's recent latencies, the longest: a
  // slow service's own requests end a probe's wait often enough
  return std::max({std::max<int64_t>(10 * config_.window_ms, 1000) * 1'000'000, 10 * recent_ns_});
}

AdaptiveLimit::Admission AdaptiveLimit::admission(int64_t now_ns) {
  std::lock_guard lock(mutex_);
  if (probing_ && now_ns - probe_progress_ns_ > probeTimeLimitNs()) {
    // none of its requests finished for that long: over, and its window's samples with it
    probing_ = false;
    window_start_ns_ = now_ns;
    finished_ = 0;
    errors_ = 0;
    latencies_ns_.clear();
    samples_of_.clear();
  }
  if (!probing_) return {static_cast<int64_t>(limit_), nullptr, 0};
  return {config_.floor, &probe_places_, probes_.load(std::memory_order_relaxed)};
}

void AdaptiveLimit::leaveProbe(uint64_t probe) {
  std::lock_guard lock(mutex_);
  // a place of an earlier probe: this probe's count started from zero without it
  if (probing_ && probe == probes_.load(std::memory_order_relaxed)) {
    probe_places_.fetch_sub(1, std::memory_order_relaxed);
  }
}

int64_t AdaptiveLimit::noLoadLatencyNs() const {
  std::lock_guard lock(mutex_);
  return no_load_ns_;
}

int64_t AdaptiveLimit::recentLatencyNs() const {
  std::lock_guard lock(mutex_);
  return recent_ns_;
}

}  // namespace floodgate::http
