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
      per_network_(std::max<int64_t>(1, config.window / 4)),
      limit_(static_cast<double>(std::clamp(config.initial, config.floor, config.ceiling))) {}

size_t AdaptiveLimit::slotOf(uint64_t network) {
  if (auto it = slot_of_.find(network); it != slot_of_.end()) return it->second;
  // beyond kMaxNetworks (ids rotating, or a flood from many addresses), all are one more:
  // the window's memory does not grow with them, and together they are one vote
  if (slot_of_.size() >= kMaxNetworks) {
    if (others_ == SIZE_MAX) {
      others_ = networks_.size();
      networks_.emplace_back();
    }
    return others_;
  }
  slot_of_.emplace(network, networks_.size());
  networks_.emplace_back();
  return networks_.size() - 1;
}

void AdaptiveLimit::record(const Sample& sample, int64_t now_ns) {
  std::lock_guard lock(mutex_);
  // admitted before the probe, at the limit of then: it says nothing of the floor
  if (probing_ && sample.probes != probes_.load(std::memory_order_relaxed)) return;
  if (window_start_ns_ < 0) window_start_ns_ = now_ns;
  ++finished_;
  const size_t slot = slotOf(sample.network);
  NetworkWindow& network = networks_[slot];
  ++network.finished;
  if (sample.error) {
    ++network.errors;
  } else if (++network.samples <= per_network_) {
    latencies_ns_.emplace_back(slot, std::max<int64_t>(sample.latency_ns, 1));
  }
  if (finished_ >= config_.window && now_ns - window_start_ns_ >= config_.window_ms * 1'000'000) {
    adjust(now_ns);
  }
}

bool AdaptiveLimit::failing() const {
  // each network: its weight (its requests, at most per_network_) and its errors' share of it
  std::vector<std::pair<double, double>> weights;  // {errors, requests}
  weights.reserve(networks_.size());
  for (const NetworkWindow& network : networks_) {
    if (network.finished == 0) continue;
    const double weight = static_cast<double>(std::min(network.finished, per_network_));
    weights.emplace_back(
        weight * static_cast<double>(network.errors) / static_cast<double>(network.finished),
        weight);
  }
  if (weights.empty()) return false;
  // without the few networks of the most errors: errors they alone see are theirs
  const size_t trim = std::min(kErrorTrim, weights.size() - 1);
  std::nth_element(weights.begin(), weights.begin() + static_cast<std::ptrdiff_t>(trim),
                   weights.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double errors = 0, requests = 0;
  for (size_t i = trim; i < weights.size(); ++i) {
    errors += weights[i].first;
    requests += weights[i].second;
  }
  return errors > config_.error_rate * requests;
}

std::vector<int64_t> AdaptiveLimit::votes() {
  std::sort(latencies_ns_.begin(), latencies_ns_.end());
  std::vector<int64_t> votes;
  std::vector<int64_t> own;  // one network's latencies
  for (size_t i = 0; i < latencies_ns_.size(); ++i) {
    own.push_back(latencies_ns_[i].second);
    if (i + 1 == latencies_ns_.size() || latencies_ns_[i + 1].first != latencies_ns_[i].first) {
      votes.push_back(medianOf(own));
      own.clear();
    }
  }
  std::sort(votes.begin(), votes.end());
  return votes;
}

void AdaptiveLimit::adjust(int64_t now_ns) {
  const bool failing_now = failing();
  const std::vector<int64_t> voted = votes();
  const bool measured = !voted.empty();
  // a tie goes against whoever would steer it: the lower middle vote shrinks the limit (or
  // raises the no-load latency), the upper one lowers the no-load latency
  const int64_t low_ns = measured ? voted[(voted.size() - 1) / 2] : 0;
  const int64_t high_ns = measured ? voted[voted.size() / 2] : 0;
  // A window lowers the no-load latency only with the votes of several networks, unless
  // the route has not had so many of late (one proxy, a few clients): a few addresses
  // alone at a quiet moment (or in one /24) do not set it where many clients come.
  voters_.push_back(voted.size());
  if (voters_.size() > kDeploymentWindows) voters_.pop_front();
  const size_t usual = *std::max_element(voters_.begin(), voters_.end());
  const bool may_lower = measured && voted.size() >= std::min(kMinNetworks, usual);
  window_start_ns_ = now_ns;
  finished_ = 0;
  latencies_ns_.clear();
  networks_.clear();
  others_ = SIZE_MAX;
  // kept for the next window: bounded by kMaxNetworks (and its samples by per_network_
  // each), however many ids a window sees
  slot_of_.clear();
  if (measured) recent_ns_ = low_ns;
  if (probing_) {
    // a window at the floor: what the service takes with next to nothing queued
    probing_ = false;
    if (!failing_now && low_ns > no_load_ns_) {
      // slower than the no-load latency: a new normal, which the windows before it, all
      // faster, must not lower again
      no_load_ns_ = low_ns;
      medians_ns_.clear();
    } else if (may_lower) {
      rememberWindow(high_ns);
    }
    return;
  }
  if (may_lower) rememberWindow(high_ns);
  double next = limit_;
  if (failing_now) {
    next = limit_ * 0.9;
  } else if (measured && no_load_ns_ > 0) {
    const double gradient = std::clamp(
        config_.tolerance * static_cast<double>(no_load_ns_) / static_cast<double>(low_ns), 0.5,
        1.0);
    next = limit_ * gradient + std::sqrt(limit_);
  }
  limit_ =
      std::clamp(next, static_cast<double>(config_.floor), static_cast<double>(config_.ceiling));
  if (config_.probe_every > 0 && ++windows_ % config_.probe_every == 0) {
    probing_ = true;
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

int64_t AdaptiveLimit::noLoadLatencyNs() const {
  std::lock_guard lock(mutex_);
  return no_load_ns_;
}

int64_t AdaptiveLimit::recentLatencyNs() const {
  std::lock_guard lock(mutex_);
  return recent_ns_;
}

size_t AdaptiveLimit::trackedNetworks() const {
  std::lock_guard lock(mutex_);
  return networks_.size();
}

}  // namespace floodgate::http
