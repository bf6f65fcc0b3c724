// SPDX-License-Identifier: MIT
// AdaptiveLimit: a concurrency limit that follows the service's latency and error rate.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

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
// filter): each window of finished requests compares its median latency with the
// no-load latency, and the limit moves by that gradient:
//   gradient = clamp(tolerance × no_load / recent, 0.5, 1)
//   limit    = clamp(limit × gradient + sqrt(limit), floor, ceiling)
// so it grows by about its square root while latency stays within tolerance, and shrinks
// by up to half as latency rises (more requests in flight only queue). A window whose 5xx
// share exceeds error_rate shrinks it by a tenth, whatever its latency.
//
// Clients choose much of what the limit sees (cheap or slow requests, when and how many),
// so no few of them may steer it: a window's latency is its median, over at most a quarter
// of `window` samples from any one client, so neither one client's flood of cheap requests
// nor a few slow ones move it; the no-load latency is the lowest seen of the median of the
// last kBaselineWindows windows' latencies, so no single window (one burst) sets it.
// A failed request's latency is no sample (a timeout, or an instant error), only its error.
// Until kBaselineWindows windows have been measured the limit holds (but for errors).
// Every probe_every windows one window runs at the floor, and when the requests admitted
// in it (not those still finishing from before) measure more than the no-load latency,
// that becomes the no-load latency (Envoy's minRTT probe), so a lasting slowdown of the
// service's normal is learned again; a faster normal is learned by the windows themselves.
// Thread-safe; times come from the caller (a clock).
class AdaptiveLimit {
 public:
  // Windows whose latencies' median is a candidate for the no-load latency.
  static constexpr size_t kBaselineWindows = 5;

  explicit AdaptiveLimit(const AdaptiveConcurrencyConfig& config);

  // A finished request.
  struct Sample {
    int64_t latency_ns = 0;
    bool error = false;  // it failed (5xx)
    // who sent it: any number that tells clients apart (e.g. a hash of their address)
    uint64_t client = 0;
    uint64_t probes = 0;  // probes() when it was admitted
  };
  // Records `sample`, finished at `now_ns`.
  void record(const Sample& sample, int64_t now_ns);
  // The probe windows begun so far: a request takes it when admitted, so that a probe
  // measures only what it admitted at the floor.
  uint64_t probes() const { return probes_.load(std::memory_order_relaxed); }

  // The requests that may be in flight now (the floor during a probe window).
  int64_t limit() const;
  // What a request entering at `now_ns` is held to, read under one lock: the limit, and
  // during a probe window the places of the requests admitted in it that are still in flight,
  // which the floor bounds instead of all requests in flight (those admitted before it are
  // not its to measure, and counted, a few held open on purpose, slow uploads, would fill the
  // floor and shed everything else). A probe none of whose requests has finished for
  // probeTimeLimitNs() ends without a measurement, the limit as it was: requests it admitted
  // held open cannot keep it, and everyone else's shedding, going.
  struct Admission {
    int64_t limit = 0;
    std::atomic<int64_t>* probe_places = nullptr;  // nullptr when no probe runs
    uint64_t probe = 0;                            // its number (probes()), for leaveProbe()
  };
  Admission admission(int64_t now_ns);
  // The longest a probe window waits for one of its requests to finish: 10 windows' time,
  // a second, or 10 recent latencies (recentLatencyNs()), whichever is longest. With mutex_
  // held, or before any other thread uses the limit.
  int64_t probeTimeLimitNs() const;
  // A request that took a place of probe `probe` has left.
  void leaveProbe(uint64_t probe);
  int64_t noLoadLatencyNs() const;  // 0 until measured
  int64_t recentLatencyNs() const;

 private:
  void adjust(int64_t now_ns);             // with mutex_ held
  void rememberWindow(int64_t median_ns);  // with mutex_ held

  const AdaptiveConcurrencyConfig config_;
  const int64_t samples_per_client_;  // latencies one client gives a window, at most
  mutable std::mutex mutex_;
  double limit_;
  int64_t no_load_ns_ = 0;  // 0: not measured yet
  int64_t recent_ns_ = 0;
  int64_t window_start_ns_ = -1;
  int64_t finished_ = 0;  // requests finished in this window, failed or not
  int64_t errors_ = 0;
  std::vector<int64_t> latencies_ns_;                 // this window's samples
  std::unordered_map<uint64_t, int64_t> samples_of_;  // by client, this window
  std::deque<int64_t> medians_ns_;  // of the last kBaselineWindows windows, oldest first
  int64_t windows_ = 0;
  bool probing_ = false;
  std::atomic<uint64_t> probes_{0};       // written with mutex_ held
  std::atomic<int64_t> probe_places_{0};  // see admission(); reset as each probe begins
  int64_t probe_progress_ns_ = 0;         // when the probe began, or one of its requests finished
};

}  // namespace floodgate::http
