// SPDX-License-Identifier: MIT
// Priority classes: classifying a request and admitting it within its class's threshold.
#include "floodgate/core/shedder.h"

#include <algorithm>
#include <optional>

#include "floodgate/core/header_text.h"

namespace floodgate::http {

std::shared_ptr<SheddingState::Counters> SheddingState::countersOf(const std::string& name) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<Counters>& counters = counters_[name];
  if (!counters) counters = std::make_shared<Counters>();
  return counters;
}

std::shared_ptr<AdaptiveLimit> SheddingState::adaptiveFor(const AdaptiveConcurrencyConfig& config) {
  std::lock_guard lock(mutex_);
  if (!config.enabled) return nullptr;
  if (!adaptive_ || !(adaptive_config_ == config)) {
    adaptive_ = std::make_shared<AdaptiveLimit>(config);
    adaptive_config_ = config;
  }
  return adaptive_;
}

void InFlight::finish() {
  if (!adaptive_ || abandoned_.load(std::memory_order_relaxed) ||
      finished_.exchange(true, std::memory_order_relaxed)) {
    return;
  }
  const int64_t now_ns = clock_->nowNs();
  adaptive_->record(
      {now_ns - entered_ns_, failed_.load(std::memory_order_relaxed), client_, probes_}, now_ns);
}

InFlight::~InFlight() {
  finish();
  if (in_probe_) adaptive_->leaveProbe(probes_);
  state_->in_flight.fetch_sub(1, std::memory_order_acq_rel);
}

Shedder::Shedder(const SheddingConfig& config, const AdaptiveConcurrencyConfig& adaptive,
                 std::shared_ptr<SheddingState> state, std::shared_ptr<const Clock> clock)
    : default_class_(config.default_class),
      state_(std::move(state)),
      adaptive_(state_->adaptiveFor(adaptive)),
      clock_(std::move(clock)) {
  for (const PriorityClass& c : config.classes) {
    classes_.push_back({c.name, c.match, c.max_in_flight, state_->countersOf(c.name)});
  }
  if (classes_.empty()) {
    classes_.push_back({"default", {}, adaptive.ceiling, state_->countersOf("default")});
    default_class_ = 0;
  }
}

int64_t Shedder::threshold(size_t index) const {
  return adaptive_ ? thresholdUnder(index, adaptive_->limit()) : classes_[index].max_in_flight;
}

int64_t Shedder::thresholdUnder(size_t index, int64_t limit) const {
  const int64_t own = classes_[index].max_in_flight;
  if (!adaptive_) return own;
  const int64_t top = classes_.front().max_in_flight;
  return index == 0 ? limit : std::max<int64_t>(1, limit * own / top);
}

std::optional<size_t> Shedder::byName(std::string_view name) const {
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].name == name) return i;
  }
  return std::nullopt;
}

size_t Shedder::indexOf(std::string_view name) const {
  return byName(name).value_or(default_class_);
}

size_t Shedder::classify(std::string_view named, const std::vector<std::string_view>& header_values,
                         std::string_view method, std::string_view sent_path,
                         std::string_view normal_path) const {
  if (!named.empty()) {
    if (auto i = byName(named)) return *i;
  }
  // One line naming one class; several lines (a client's own line beside the proxy's)
  // cannot be told apart, so none of them is believed.
  if (header_values.size() == 1) {
    if (auto i = byName(trimOws(header_values[0]))) return *i;
  }
  // classes are listed highest first: the later of the two is the less privileged
  return std::max(byPath(method, sent_path), byPath(method, normal_path));
}

size_t Shedder::byPath(std::string_view method, std::string_view path) const {
  for (size_t i = 0; i < classes_.size(); ++i) {
    for (const RouteMatch& m : classes_[i].match) {
      if (m.matches(method, path)) return i;
    }
  }
  return default_class_;
}

std::shared_ptr<InFlight> Shedder::enter(size_t index, uint64_t client, bool again) {
  CompiledClass& c = classes_[index];
  // the limit and the probe read together: a probe window bounds the requests it admitted,
  // not those from before it
  const AdaptiveLimit::Admission admission =
      adaptive_ ? adaptive_->admission(clock_->nowNs()) : AdaptiveLimit::Admission{};
  const int64_t max = thresholdUnder(index, admission.limit);
  std::atomic<int64_t>* probe_places = admission.probe_places;
  const uint64_t probe = admission.probe;
  std::atomic<int64_t>& counted = probe_places ? *probe_places : state_->in_flight;
  int64_t now = counted.load(std::memory_order_relaxed);
  do {
    if (now >= max) {
      c.counters->shed.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  } while (!counted.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel,
                                          std::memory_order_relaxed));
  if (probe_places) state_->in_flight.fetch_add(1, std::memory_order_acq_rel);
  if (!again) c.counters->admitted.fetch_add(1, std::memory_order_relaxed);
  // The ticket keeps the state alive, so it can be given back after this shedder (and the
  // policy set that owns it) is gone.
  return std::make_shared<InFlight>(state_, adaptive_, clock_, client, probe_places != nullptr,
                                    probe);
}

std::vector<PriorityClassStats> Shedder::stats() const {
  std::vector<PriorityClassStats> out;
  for (const CompiledClass& c : classes_) {
    out.push_back({c.name, threshold(static_cast<size_t>(&c - classes_.data())),
                   c.counters->admitted.load(std::memory_order_relaxed),
                   c.counters->shed.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace floodgate::http
