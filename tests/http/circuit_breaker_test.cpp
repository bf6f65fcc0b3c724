// SPDX-License-Identifier: MIT
// The circuit breaker's states on a hand-stepped clock.
#include "floodgate/stores/circuit_breaker.h"

#include <gtest/gtest.h>

namespace floodgate::http {
namespace {

TEST(CircuitBreaker, OpensAfterConsecutiveFailuresAndProbesHalfOpen) {
  auto clock = std::make_shared<ManualClock>(0);
  CircuitBreaker breaker({3, 100}, clock);
  bool probe = true;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(breaker.allow(&probe));
    EXPECT_FALSE(probe);
    breaker.onFailure(probe);
  }
  ASSERT_TRUE(breaker.allow(&probe));
  breaker.onSuccess(probe);  // a success in between: the count starts again
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(breaker.allow(&probe));
    breaker.onFailure(probe);
  }
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.timesOpened(), 1);
  EXPECT_FALSE(breaker.allow(&probe));
  clock->advanceMs(99);
  EXPECT_FALSE(breaker.allow(&probe));
  clock->advanceMs(1);
  EXPECT_TRUE(breaker.allow(&probe));  // the probe
  EXPECT_TRUE(probe);
  EXPECT_EQ(breaker.state(), BreakerState::kHalfOpen);
  bool second = false;
  EXPECT_FALSE(breaker.allow(&second));  // only one probe at a time
  breaker.onFailure(probe);
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  EXPECT_EQ(breaker.timesOpened(), 2);
  clock->advanceMs(100);
  EXPECT_TRUE(breaker.allow(&probe));
  breaker.onSuccess(probe);
  EXPECT_EQ(breaker.state(), BreakerState::kClosed);
  EXPECT_TRUE(breaker.allow(&probe));
  EXPECT_FALSE(probe);
}

// Calls let through while closed that end after it opened (a degraded store answering some
// calls late) neither close it nor reopen it: only the probe moves it, so the callers are not
// sent back to a store that keeps timing out, each late answer paying a timeout again.
TEST(CircuitBreaker, ALateAnswerOfACallFromBeforeItOpenedMovesNothing) {
  auto clock = std::make_shared<ManualClock>(0);
  CircuitBreaker breaker({1, 100}, clock);
  bool early = true, failing = true;
  ASSERT_TRUE(breaker.allow(&early));
  ASSERT_TRUE(breaker.allow(&failing));
  breaker.onFailure(failing);  // opens
  ASSERT_EQ(breaker.state(), BreakerState::kOpen);
  breaker.onSuccess(early);  // the early call answers late
  EXPECT_EQ(breaker.state(), BreakerState::kOpen);
  bool probe = false;
  EXPECT_FALSE(breaker.allow(&probe)) << "still open until open_ms";
  clock->advanceMs(100);
  ASSERT_TRUE(breaker.allow(&probe));
  ASSERT_TRUE(probe);
  breaker.onFailure(false);  // another late call fails while the probe is out
  breaker.onSuccess(false);  // and another answers
  EXPECT_EQ(breaker.state(), BreakerState::kHalfOpen);
  EXPECT_EQ(breaker.timesOpened(), 1);
  bool second = false;
  EXPECT_FALSE(breaker.allow(&second)) << "the probe is still in flight";
  breaker.onSuccess(probe);
  EXPECT_EQ(breaker.state(), BreakerState::kClosed);
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
  bool failing = false;
  ASSERT_TRUE(breaker.allow(&failing));
  breaker.onFailure(failing);  // opens
  clock->advanceMs(100);
  bool probe = false;
  ASSERT_TRUE(breaker.allow(&probe));
  EXPECT_TRUE(probe);
  breaker.notAsked(early_probe);  // the early call, answered by a lease
  bool second = false;
  EXPECT_FALSE(breaker.allow(&second)) << "the probe is still in flight";
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
