// SPDX-License-Identifier: MIT
// Shedder: priority load shedding over the requests in flight on this instance.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/core/adaptive_limit.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/policy.h"

namespace floodgate::http {

// One class's counts since the service started (kept across policy changes by name).
struct PriorityClassStats {
  std::string name;
  int64_t max_in_flight = 0;
  int64_t admitted = 0;  // let through to the policies
  int64_t shed = 0;      // refused with 503: too many requests were in flight
};

// What outlives any one policy set: the requests in flight (tickets taken under an old set
// are given back here), and each class's counts by name. Every Limiter carries it to the
// set that replaces it, with shedding or without, so turning shedding off and on again
// forgets nothing. Thread-safe.
class SheddingState {
 public:
  struct Counters {
    std::atomic<int64_t> admitted{0};
    std::atomic<int64_t> shed{0};
  };
  std::atomic<int64_t> in_flight{0};
  // The counts of class `name`, made on first use.
  std::shared_ptr<Counters> countersOf(const std::string& name);
  // The adaptive limit for `config` (http.adaptive_concurrency): the one made before when
  // the config is the same, so what it learned survives a reload; null when disabled.
  std::shared_ptr<AdaptiveLimit> adaptiveFor(const AdaptiveConcurrencyConfig& config);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Counters>> counters_;
  AdaptiveConcurrencyConfig adaptive_config_;
  std::shared_ptr<AdaptiveLimit> adaptive_;
};

// A request's place in flight: given back when destroyed. With an adaptive limit it is
// also a latency sample, from entry to finish() (or to destruction, when not finished
// before), and whether it failed, unless abandoned. Thread-safe.
class InFlight {
 public:
  // `client`: who sent it, for AdaptiveLimit::record().
  // `in_probe`: it holds a place of the adaptive limit's probe numbered `probe`.
  InFlight(std::shared_ptr<SheddingState> state, std::shared_ptr<AdaptiveLimit> adaptive,
           std::shared_ptr<const Clock> clock, uint64_t client, bool in_probe = false,
           uint64_t probe = 0)
      : state_(std::move(state)),
        adaptive_(std::move(adaptive)),
        clock_(std::move(clock)),
        entered_ns_(adaptive_ ? clock_->nowNs() : 0),
        client_(client),
        probes_(in_probe    ? probe
                : adaptive_ ? adaptive_->probes()
                            : 0),
        in_probe_(in_probe) {}
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight();

  // The request failed on the service's side (a 5xx): the adaptive limit counts it an error.
  void failed() { failed_.store(true, std::memory_order_relaxed); }
  // The request's time says nothing of the service's latency: it was refused before it did
  // any work, by a policy or by the service (a 4xx). No sample for the adaptive limit (a
  // flood of cheap refusals would else teach it a no-load latency of microseconds, and
  // overload protection would be off).
  void abandon() { abandoned_.store(true, std::memory_order_relaxed); }
  // The service's work is done: the sample ends now, though the place is held until the
  // ticket is destroyed (e.g. while the response is written, at the client's pace). Once.
  void finish();

 private:
  std::shared_ptr<SheddingState> state_;
  std::shared_ptr<AdaptiveLimit> adaptive_;
  std::shared_ptr<const Clock> clock_;
  int64_t entered_ns_;
  uint64_t client_;
  uint64_t probes_;  // the adaptive limit's probes() when it entered
  bool in_probe_;    // it holds a place of probe probes_ (AdaptiveLimit::admission)
  std::atomic<bool> failed_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> finished_{false};
};

// Counts requests in flight and refuses those of a class whose threshold they have
// reached. Thread-safe and lock-free; the count is exact (a compare-and-swap admits, so no
// racing pair of requests takes the last place twice).
class Shedder {
 public:
  // Without classes (http.adaptive_concurrency alone), every request is of one class,
  // "default", limited by the adaptive limit alone.
  Shedder(const SheddingConfig& config, const AdaptiveConcurrencyConfig& adaptive,
          std::shared_ptr<SheddingState> state, std::shared_ptr<const Clock> clock);

  // The class of a request: `named` by the service, else the value of the priority header
  // (`header_values`, read only when the peer is a trusted proxy: the caller passes none
  // otherwise), else the first class whose match matches its path, else the default. A
  // server may resolve the path as sent or in its normal form (normalPath), so both are
  // classified and the lower class of the two is the request's. A name that is no class is
  // ignored, so a forged or mistyped one cannot raise a request.
  size_t classify(std::string_view named, const std::vector<std::string_view>& header_values,
                  std::string_view method, std::string_view sent_path,
                  std::string_view normal_path) const;
  // The index of the class named `name` (a Verdict::priority of this shedder's), else the
  // default class.
  size_t indexOf(std::string_view name) const;

  // A place in flight for a request of class `index`: held until the returned ticket (and
  // every copy) is destroyed. Null when the requests in flight have reached the class's
  // threshold: shed. With an adaptive limit, a class's threshold is its max_in_flight
  // scaled by the adaptive limit over the highest class's max_in_flight (so the reserve
  // keeps its share), the highest's being the adaptive limit itself. `again`: a request
  // admitted before, which gave its place back for a while (a shaping wait): it is not
  // counted admitted a second time, only shed if it is refused now.
  // `client` tells the adaptive limit who sent it (see AdaptiveLimit::record()).
  std::shared_ptr<InFlight> enter(size_t index, uint64_t client, bool again = false);
  // The threshold of class `index` now.
  int64_t threshold(size_t index) const;
  // The same, of class `index` under the adaptive limit `limit`.
  int64_t thresholdUnder(size_t index, int64_t limit) const;
  // Null without http.adaptive_concurrency.
  const AdaptiveLimit* adaptive() const { return adaptive_.get(); }

  const std::string& name(size_t index) const { return classes_[index].name; }
  int64_t inFlight() const { return state_->in_flight.load(std::memory_order_relaxed); }
  std::vector<PriorityClassStats> stats() const;

 private:
  struct CompiledClass {
    std::string name;
    std::vector<RouteMatch> match;
    int64_t max_in_flight;
    std::shared_ptr<SheddingState::Counters> counters;
  };
  std::optional<size_t> byName(std::string_view name) const;
  // The first class whose match matches `path`, else the default.
  size_t byPath(std::string_view method, std::string_view path) const;

  std::vector<CompiledClass> classes_;
  size_t default_class_;
  std::shared_ptr<SheddingState> state_;
  std::shared_ptr<AdaptiveLimit> adaptive_;
  std::shared_ptr<const Clock> clock_;
};

}  // namespace floodgate::http
