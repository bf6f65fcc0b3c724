// SPDX-License-Identifier: MIT
// The adaptive concurrency limit on a stepped clock, against a fake downstream whose
// latency rises with the requests in flight past its knee.
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

  // Runs `windows` windows of 50 requests, each window at the concurrency the limit allows,
  // 2 ms of clock apart; the latency is 10 ms up to the knee, then grows with the queue,
  // times `slowdown`. Every `error_every`th request fails (0: none).
  void run(int windows, double slowdown = 1, int error_every = 0) {
    for (int w = 0; w < windows; ++w) {
      const int64_t concurrency = limit_.limit();
      const double queue = std::max(1.0, static_cast<double>(concurrency) / kKnee);
      const auto latency = static_cast<int64_t>(10 * kMs * queue * slowdown);
      for (int i = 0; i < 50; ++i) {
        now_ += 2 * kMs;
        ++n_;
        limit_.record(latency, error_every > 0 && n_ % error_every == 0, now_);
      }
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
  int64_t n_ = 0;
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
  // measured at the floor, give or take the one request of the window before it
  EXPECT_NEAR(static_cast<double>(limit.noLoadLatencyNs()), 20.0 * kMs, 0.05 * 20 * kMs);
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
