// SPDX-License-Identifier: MIT
// Shedder: priority load shedding over the requests in flight on this instance.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/policy.h"

namespace floodgate::http {

// One class's counts since the service started (kept across policy changes by name).
struct PriorityClassStats {
  std::string name;
  int64_t max_in_flight = 0;
  int64_t admitted = 0;  // let through to the policies
  int64_t shed = 0;      // refused with 503: too many requests were in flight
};

// Counts requests in flight and refuses those of a class whose threshold they have
// reached. Thread-safe and lock-free; the count is exact (a compare-and-swap admits, so no
// racing pair of requests takes the last place twice).
class Shedder {
 public:
  // With `previous` (the shedder of the policy set this one replaces), the requests still
  // in flight under it count here too, and classes of the same name keep their counts.
  Shedder(const SheddingConfig& config, const Shedder* previous);

  // The class of a request: `named` by the service, else the value of the priority header
  // (`header_values`, read only when the peer is a trusted proxy: the caller passes none
  // otherwise), else the first class whose match matches, else the default. A name that
  // is no class is ignored, so a forged or mistyped one cannot raise a request.
  size_t classify(std::string_view named, const std::vector<std::string_view>& header_values,
                  std::string_view method, std::string_view path) const;

  // A place in flight for a request of class `index`: held until the returned ticket (and
  // every copy) is destroyed. Null when the requests in flight have reached the class's
  // threshold: shed.
  std::shared_ptr<const void> enter(size_t index);

  const std::string& name(size_t index) const { return classes_[index].name; }
  int64_t inFlight() const { return in_flight_->load(std::memory_order_relaxed); }
  std::vector<PriorityClassStats> stats() const;

 private:
  struct Counters {
    std::atomic<int64_t> admitted{0};
    std::atomic<int64_t> shed{0};
  };
  struct CompiledClass {
    std::string name;
    std::vector<RouteMatch> match;
    int64_t max_in_flight;
    std::shared_ptr<Counters> counters;
  };

  std::vector<CompiledClass> classes_;
  size_t default_class_;
  std::shared_ptr<std::atomic<int64_t>> in_flight_;
};

}  // namespace floodgate::http
