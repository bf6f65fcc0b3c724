// SPDX-License-Identifier: MIT
// LogThrottle: one line per interval on a stepped clock, and the count of those held back.
#include "daemon/log_throttle.h"

#include <gtest/gtest.h>

namespace floodgate::daemon {
namespace {

using std::chrono::seconds;

TEST(LogThrottle, LetsTheFirstThroughThenOnePerIntervalWithTheCountHeldBack) {
  LogThrottle throttle(seconds(10));
  const LogThrottle::Clock::time_point start{};
  ASSERT_EQ(throttle.admit(start), std::optional<uint64_t>(0));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(throttle.admit(start + std::chrono::milliseconds(i))) << i;
  }
  EXPECT_FALSE(throttle.admit(start + seconds(10) - std::chrono::nanoseconds(1)));
  EXPECT_EQ(throttle.admit(start + seconds(10)), std::optional<uint64_t>(1001));
  EXPECT_FALSE(throttle.admit(start + seconds(11)));
  // a quiet spell: the next one goes through at once, having held back the one above
  EXPECT_EQ(throttle.admit(start + seconds(100)), std::optional<uint64_t>(1));
  EXPECT_EQ(throttle.admit(start + seconds(200)), std::optional<uint64_t>(0));
}

TEST(LogThrottle, HeldBackNoteSaysHowMany) {
  EXPECT_EQ(heldBackNote(0), "");
  EXPECT_EQ(heldBackNote(7), " (7 more like it held back)");
}

}  // namespace
}  // namespace floodgate::daemon
