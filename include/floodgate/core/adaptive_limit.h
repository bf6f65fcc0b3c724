// SPDX-License-Identifier: MIT
// AdaptiveLimit: a concurrency limit that follows the service's latency and error rate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>
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
// Clients choose much of what the limit sees (cheap or slow requests, when and how many,
// and which of them fail), so no few of them may steer it. A window tells networks apart
// (a /24 of IPv4, a /48 of IPv6: what an attacker cannot multiply cheaply) and each counts
// at most a quarter of `window` in it:
//  - latency: each network's median is one vote, and the window's latency is the median of
//    its votes, so networks move it only when they are more than half of the window's;
//    a tie goes against the attacker (the lower middle vote is the latency that shrinks
//    the limit and that a probe raises the no-load latency to; the upper one is the
//    window's candidate for lowering the no-load latency);
//  - errors: a network's requests weigh at most a quarter of `window`, and its errors their
//    share of that weight (so one network's flood neither dilutes the window nor fills it
//    with errors); the window is failing when the error share of what remains, with the
//    kErrorTrim networks of the most errors left out (but always one network kept), is over
//    error_rate: the 5xx that a few networks provoke (a crafted request) decide nothing,
//    while an overload fails every network's requests. A route behind one proxy that
//    forwards no client address is one network, judged on all of its requests.
// The no-load latency is the lowest seen of the median of the candidates of the last
// kBaselineWindows windows that may lower it, so no single window (one burst) sets it; a
// window may lower it only with the votes of kMinNetworks networks, or of as many as the
// most that any of the last kDeploymentWindows windows had, if fewer (a route that only a
// few networks use, or one proxy, still learns it). At most kMaxNetworks networks are told
// apart in one window; the rest count as one more, so ids rotating do not grow it.
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
  // The networks with the most errors that a window's error verdict leaves out.
  static constexpr size_t kErrorTrim = 3;
  // The networks whose votes a window needs to lower the no-load latency, unless no window
  // of the last kDeploymentWindows had so many.
  static constexpr size_t kMinNetworks = 8;
  static constexpr size_t kDeploymentWindows = 100;
  // The networks one window tells apart; any more are counted as one.
  static constexpr size_t kMaxNetworks = 1024;

  explicit AdaptiveLimit(const AdaptiveConcurrencyConfig& config);

  // A finished request.
  struct Sample {
    int64_t latency_ns = 0;
    bool error = false;  // it failed (5xx)
    // the network that sent it: any number that tells networks apart (a hash of the
    // client's /24 or /48, or of whatever else tells clients apart)
    uint64_t network = 0;
    uint64_t probes = 0;  // probes() when it was admitted
  };
  // Records `sample`, finished at `now_ns`.
  void record(const Sample& sample, int64_t now_ns);
  // The probe windows begun so far: a request takes it when admitted, so that a probe
  // measures only what it admitted at the floor.
  uint64_t probes() const { return probes_.load(std::memory_order_relaxed); }

  // The requests that may be in flight now (the floor during a probe window).
  int64_t limit() const;
  int64_t noLoadLatencyNs() const;  // 0 until measured
  int64_t recentLatencyNs() const;
  // The networks the current window tells apart (at most kMaxNetworks + 1).
  size_t trackedNetworks() const;

 private:
  // One network's part of the current window.
  struct NetworkWindow {
    int64_t finished = 0;  // failed or not
    int64_t errors = 0;
    int64_t samples = 0;  // latencies it gave, counted or not
  };

  void adjust(int64_t now_ns);             // with mutex_ held
  void rememberWindow(int64_t median_ns);  // with mutex_ held
  size_t slotOf(uint64_t network);         // with mutex_ held: its index in networks_
  bool failing() const;                    // with mutex_ held: the window's error verdict
  // The median latency of each network of the window (one vote each), sorted; with mutex_
  // held, reordering latencies_ns_.
  std::vector<int64_t> votes();

  const AdaptiveConcurrencyConfig config_;
  const int64_t per_network_;  // latencies one network gives a window, and its weight, at most
  mutable std::mutex mutex_;
  double limit_;
  int64_t no_load_ns_ = 0;  // 0: not measured yet
  int64_t recent_ns_ = 0;
  int64_t window_start_ns_ = -1;
  int64_t finished_ = 0;                          // requests finished in this window, failed or not
  std::unordered_map<uint64_t, size_t> slot_of_;  // this window's networks, at most kMaxNetworks
  std::vector<NetworkWindow> networks_;           // by slot
  size_t others_ = SIZE_MAX;  // the slot of every network beyond kMaxNetworks, once used
  std::vector<std::pair<size_t, int64_t>> latencies_ns_;  // this window's samples, by slot
  // the networks that voted in each of the last kDeploymentWindows windows, oldest first
  std::deque<size_t> voters_;
  std::deque<int64_t> medians_ns_;  // of the last kBaselineWindows windows, oldest first
  int64_t windows_ = 0;
  bool probing_ = false;
  std::atomic<uint64_t> probes_{0};  // written with mutex_ held
};

}  // namespace floodgate::http
