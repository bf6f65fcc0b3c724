// SPDX-License-Identifier: MIT
// Priority classes: classifying a request and admitting it within its class's threshold.
#include "http/shedder.h"

#include <optional>

#include "http/header_text.h"

namespace floodgate::http {

Shedder::Shedder(const SheddingConfig& config, const Shedder* previous)
    : default_class_(config.default_class),
      in_flight_(previous != nullptr ? previous->in_flight_
                                     : std::make_shared<std::atomic<int64_t>>(0)) {
  for (const PriorityClass& c : config.classes) {
    std::shared_ptr<Counters> counters;
    if (previous != nullptr) {
      for (const CompiledClass& was : previous->classes_) {
        if (was.name == c.name) counters = was.counters;
      }
    }
    if (!counters) counters = std::make_shared<Counters>();
    classes_.push_back({c.name, c.match, c.max_in_flight, std::move(counters)});
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
  int64_t now = in_flight_->load(std::memory_order_relaxed);
  do {
    if (now >= c.max_in_flight) {
      c.counters->shed.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  } while (!in_flight_->compare_exchange_weak(now, now + 1, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
  c.counters->admitted.fetch_add(1, std::memory_order_relaxed);
  // The ticket keeps the count alive, so it can be given back after this shedder (and the
  // policy set that owns it) is gone.
  std::shared_ptr<std::atomic<int64_t>> count = in_flight_;
  return std::shared_ptr<const void>(
      count.get(), [count](const void*) { count->fetch_sub(1, std::memory_order_acq_rel); });
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
