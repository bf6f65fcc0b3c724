// SPDX-License-Identifier: MIT
// The circuit breaker's states on a hand-stepped clock.
#include "floodgate/stores/circuit_breaker.h"

#include <gtest/gtest.h>

namespace floodgate::http {
namespace {

TEST(CircuitBreaker, OpensAfterConsecutiveFailuresAndProbesHalfOpen) {
  auto clock = std::make_shared<ManualClock>(0);
  CircuitBreaker breaker({3, 100}, clock);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(breaker.allow());
    breaker.onFailure();
  }
  ASSERT_TRUE(breaker.allow());
  breaker.onSuccess();  // a success in between: the count starts again
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(breaker.allow());
    breaker.onFailure();
  }
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.timesOpened(), 1);
  EXPECT_FALSE(breaker.allow());
  clock->advanceMs(99);
  EXPECT_FALSE(breaker.allow());
  clock->advanceMs(1);
  EXPECT_TRUE(breaker.allow());  // the probe
  EXPECT_EQ(breaker.state(), BreakerState::kHalfOpen);
  EXPECT_FALSE(breaker.allow());  // only one probe at a time
  breaker.onFailure();
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.timesOpened(), 2);
  clock->advanceMs(100);
  EXPECT_TRUE(breaker.allow());
  breaker.onSuccess();
  EXPECT_EQ(breaker.state(), BreakerState::kClosed);
  EXPECT_TRUE(breaker.allow());
}

// A call answered without the store (a lease, a share) hands back only a probe it held: one let
// through while the breaker was closed, ending after it turned half-open, does not free the
// probe another call holds, so no second probe goes to a store that may be dead.
TEST(CircuitBreaker, OnlyTheProbeIsHandedBackByACallThatDidNotAsk) {
  auto clock = std::make_shared<ManualClock>(0);
  CircuitBreaker breaker({1, 100}, clock);
  bool early_probe = true;
  ASSERT_TRUE(breaker.allow(&early_probe));  // closed: let through, no probe
  EXPECT_FALSE(early_probe);
  ASSERT_TRUE(breaker.allow());
  breaker.onFailure();  // opens
  clock->advanceMs(100);
  bool probe = false;
  ASSERT_TRUE(breaker.allow(&probe));
  EXPECT_TRUE(probe);
  breaker.notAsked(early_probe);  // the early call, answered by a lease
  EXPECT_FALSE(breaker.allow()) << "the probe is still in flight";
  breaker.notAsked(probe);  // the probe, answered without the store: the next call probes
  EXPECT_EQ(breaker.state(), BreakerState::kHalfOpen);
  bool next = false;
  EXPECT_TRUE(breaker.allow(&next));
  EXPECT_TRUE(next);
}

TEST(CircuitBreaker, ANameForEachState) {
  EXPECT_EQ(breakerStateName(BreakerState::kClosed), "closed");
  EXPECT_EQ(breakerStateName(BreakerState::kOpen), "open");
  EXPECT_EQ(breakerStateName(BreakerState::kHalfOpen), "half_open");
}

}  // namespace
}  // namespace floodgate::http
