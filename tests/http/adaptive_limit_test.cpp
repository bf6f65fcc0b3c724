// SPDX-License-Identifier: MIT
// The adaptive concurrency limit on a stepped clock, against a fake downstream whose
// latency rises with the requests in flight past its knee, and against clients that try
// to steer it.
#include "floodgate/core/adaptive_limit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace floodgate::http {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kKnee = 20;  // the downstream serves 20 at once in 10 ms; more queue

class FakeDownstream {
 public:
  explicit FakeDownstream(AdaptiveLimit& limit) : limit_(limit) {}

  // Runs `windows` windows of 50 requests, each of another client, each window at the
  // concurrency the limit allows, 2 ms of clock apart; the latency is 10 ms up to the knee,
  // then grows with the queue, times `slowdown`. Every `error_every`th request fails (0:
  // none). `each` runs after every request (e.g. an attacker's requests).
  template <typename Each>
  void run(int windows, double slowdown, int error_every, Each each) {
    for (int w = 0; w < windows; ++w) {
      const int64_t concurrency = limit_.limit();
      const uint64_t probes = limit_.probes();  // the window's requests are admitted now
      const double queue = std::max(1.0, static_cast<double>(concurrency) / kKnee);
      const auto latency = static_cast<int64_t>(10 * kMs * queue * slowdown);
      for (int i = 0; i < 50; ++i) {
        now_ += 2 * kMs;
        ++n_;
        limit_.record({latency, error_every > 0 && n_ % error_every == 0, n_, probes}, now_);
        each(i, probes);
      }
    }
  }
  void run(int windows, double slowdown = 1, int error_every = 0) {
    run(windows, slowdown, error_every, [](int, uint64_t) {});
  }
  // Another request finishing at the same moment as the last.
  void alsoRecord(int64_t latency_ns, uint64_t client, uint64_t probes) {
    limit_.record({latency_ns, false, client, probes}, now_);
  }
  // `count` requests of `client` that take `latency_ns`, 2 ms apart, and nothing else.
  void burst(int count, int64_t latency_ns, uint64_t client) {
    for (int i = 0; i < count; ++i) {
      now_ += 2 * kMs;
      limit_.record({latency_ns, false, client, limit_.probes()}, now_);
    }
  }
  // The lowest and highest limit over `windows` more windows.
  std::pair<int64_t, int64_t> range(int windows, double slowdown = 1) {
    int64_t low = 1 << 30, high = 0;
    for (int w = 0; w < windows; ++w) {
      run(1, slowdown);
      low = std::min(low, limit_.limit());
      high = std::max(high, limit_.limit());
    }
    return {low, high};
  }

 private:
  AdaptiveLimit& limit_;
  int64_t now_ = 1'000 * kMs;
  uint64_t n_ = 0;
};

AdaptiveConcurrencyConfig config() {
  AdaptiveConcurrencyConfig c;
  c.enabled = true;
  c.floor = 2;
  c.ceiling = 500;
  c.initial = 4;
  c.probe_every = 0;  // no probe windows unless a test asks
  return c;
}

TEST(AdaptiveLimit, SettlesNearTheKneeDropsUnderInjectedLatencyAndRecovers) {
  AdaptiveLimit limit(config());
  FakeDownstream downstream(limit);
  downstream.run(100);  // from 4 up: it grows while latency holds
  auto [low, high] = downstream.range(50);
  EXPECT_GE(low, kKnee) << "settled below the knee: latency was still flat there";
  EXPECT_LE(high, 2 * kKnee) << "settled far past the knee: requests only queue there";
  EXPECT_EQ(limit.noLoadLatencyNs(), 10 * kMs);

  const int64_t settled = limit.limit();
  downstream.run(10, 3.0);  // the downstream turns three times slower
  EXPECT_LE(limit.limit(), settled / 4) << "the limit did not drop under injected latency";
  EXPECT_GE(limit.limit(), 2) << "never below the floor";

  downstream.run(100);  // and back
  auto [low_again, high_again] = downstream.range(50);
  EXPECT_GE(low_again, kKnee);
  EXPECT_LE(high_again, 2 * kKnee);
}

constexpr uint64_t kAttacker = 1ULL << 40;  // no client of the downstream's

// A burst of cheap requests (a path no route serves, a cached one) from a quiet moment
// fills a window of its own: were that window's latency the no-load latency, every window
// of real traffic after it would seem overloaded and the limit would sink to its floor.
TEST(AdaptiveLimit, ABurstOfCheapRequestsDoesNotSetTheNoLoadLatency) {
  AdaptiveLimit limit(config());
  FakeDownstream downstream(limit);
  downstream.run(100);
  downstream.burst(60, 10'000, kAttacker);  // 10 µs each, over 120 ms
  auto [low, high] = downstream.range(50);
  EXPECT_EQ(limit.noLoadLatencyNs(), 10 * kMs);
  EXPECT_GE(low, kKnee) << "the limit sank under no load";
  EXPECT_LE(high, 2 * kKnee);
}

// One client flooding cheap requests through ten windows gets a quarter of a window's
// samples in each, not most of them.
TEST(AdaptiveLimit, OneClientFloodingCheapRequestsDoesNotSetTheNoLoadLatency) {
  AdaptiveLimit limit(config());
  FakeDownstream downstream(limit);
  downstream.run(100);
  downstream.run(10, 1, 0, [&](int, uint64_t probes) {
    for (int k = 0; k < 4; ++k) downstream.alsoRecord(10'000, kAttacker, probes);
  });
  auto [low, high] = downstream.range(50);
  EXPECT_EQ(limit.noLoadLatencyNs(), 10 * kMs);
  EXPECT_GE(low, kKnee) << "the limit sank under no load";
  EXPECT_LE(high, 2 * kKnee);
}

// One slow request a window (a body trickled in, a client of its own stalling) would
// triple a 10 ms window's mean; the median does not move.
TEST(AdaptiveLimit, OneSlowRequestAWindowDoesNotShrinkIt) {
  AdaptiveLimit limit(config());
  FakeDownstream downstream(limit);
  downstream.run(100);
  downstream.run(50, 1, 0, [&](int i, uint64_t probes) {
    if (i == 25) downstream.alsoRecord(1'000 * kMs, kAttacker, probes);
  });
  auto [low, high] = downstream.range(50);
  EXPECT_GE(low, kKnee) << "a few slow requests shrank the limit";
  EXPECT_LE(high, 2 * kKnee);
  EXPECT_EQ(limit.noLoadLatencyNs(), 10 * kMs);
}

TEST(AdaptiveLimit, ErrorsShrinkItWhateverTheLatency) {
  AdaptiveLimit limit(config());
  FakeDownstream downstream(limit);
  downstream.run(100);
  const int64_t settled = limit.limit();
  downstream.run(10, 1.0, 5);  // one request in five fails, latency unchanged
  EXPECT_LT(limit.limit(), settled / 2);
}

TEST(AdaptiveLimit, StaysWithinFloorAndCeiling) {
  AdaptiveConcurrencyConfig c = config();
  c.floor = 6;  // above where ten times the latency would settle it (4: half plus its root)
  c.ceiling = 12;
  AdaptiveLimit limit(c);
  FakeDownstream downstream(limit);
  downstream.run(100);
  EXPECT_EQ(limit.limit(), 12);
  downstream.run(30, 10.0);
  EXPECT_EQ(limit.limit(), 6);
}

TEST(AdaptiveLimit, AProbeWindowAtTheFloorLearnsANewNormal) {
  AdaptiveConcurrencyConfig c = config();
  c.probe_every = 20;
  AdaptiveLimit limit(c);
  FakeDownstream downstream(limit);
  downstream.run(100);
  // The service's normal becomes twice as slow for good: without a probe the limit would
  // stay pressed down against the old 10 ms; the probe measures 20 ms at the floor and the
  // limit climbs back to the knee.
  downstream.run(200, 2.0);
  // measured at the floor, by the requests admitted there alone
  EXPECT_EQ(limit.noLoadLatencyNs(), 20 * kMs);
  std::vector<int64_t> limits;  // over two probe periods, a probe window or two among them
  for (int w = 0; w < 40; ++w) {
    downstream.run(1, 2.0);
    limits.push_back(limit.limit());
  }
  std::sort(limits.begin(), limits.end());
  EXPECT_GE(limits[limits.size() / 2], kKnee);
  EXPECT_LE(limits.back(), 2 * kKnee);
}

}  // namespace
}  // namespace floodgate::http
