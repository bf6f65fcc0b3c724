// SPDX-License-Identifier: MIT
// Priority classes: classifying a request and admitting it within its class's threshold.
#include "http/shedder.h"

#include <optional>

#include "http/header_text.h"

namespace floodgate::http {

std::shared_ptr<SheddingState::Counters> SheddingState::countersOf(const std::string& name) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<Counters>& counters = counters_[name];
  if (!counters) counters = std::make_shared<Counters>();
  return counters;
}

Shedder::Shedder(const SheddingConfig& config, std::shared_ptr<SheddingState> state)
    : default_class_(config.default_class), state_(std::move(state)) {
  for (const PriorityClass& c : config.classes) {
    classes_.push_back({c.name, c.match, c.max_in_flight, state_->countersOf(c.name)});
  }
}

size_t Shedder::classify(std::string_view named, const std::vector<std::string_view>& header_values,
                         std::string_view method, std::string_view path) const {
  auto byName = [this](std::string_view name) -> std::optional<size_t> {
    for (size_t i = 0; i < classes_.size(); ++i) {
      if (classes_[i].name == name) return i;
    }
    return std::nullopt;
  };
  if (!named.empty()) {
    if (auto i = byName(named)) return *i;
  }
  // One line naming one class; several lines (a client's own line beside the proxy's)
  // cannot be told apart, so none of them is believed.
  if (header_values.size() == 1) {
    if (auto i = byName(trimOws(header_values[0]))) return *i;
  }
  for (size_t i = 0; i < classes_.size(); ++i) {
    for (const RouteMatch& m : classes_[i].match) {
      if (m.matches(method, path)) return i;
    }
  }
  return default_class_;
}

std::shared_ptr<const void> Shedder::enter(size_t index) {
  CompiledClass& c = classes_[index];
  std::atomic<int64_t>& in_flight = state_->in_flight;
  int64_t now = in_flight.load(std::memory_order_relaxed);
  do {
    if (now >= c.max_in_flight) {
      c.counters->shed.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  } while (!in_flight.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel,
                                            std::memory_order_relaxed));
  c.counters->admitted.fetch_add(1, std::memory_order_relaxed);
  // The ticket keeps the state alive, so it can be given back after this shedder (and the
  // policy set that owns it) is gone.
  std::shared_ptr<SheddingState> state = state_;
  return std::shared_ptr<const void>(state.get(), [state](const void*) {
    state->in_flight.fetch_sub(1, std::memory_order_acq_rel);
  });
}

std::vector<PriorityClassStats> Shedder::stats() const {
  std::vector<PriorityClassStats> out;
  for (const CompiledClass& c : classes_) {
    out.push_back({c.name, c.max_in_flight, c.counters->admitted.load(std::memory_order_relaxed),
                   c.counters->shed.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace floodgate::http
