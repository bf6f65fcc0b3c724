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

TEST(CircuitBreaker, ANameForEachState) {
  EXPECT_EQ(breakerStateName(BreakerState::kClosed), "closed");
  EXPECT_EQ(breakerStateName(BreakerState::kOpen), "open");
  EXPECT_EQ(breakerStateName(BreakerState::kHalfOpen), "half_open");
}

}  // namespace
}  // namespace floodgate::http
