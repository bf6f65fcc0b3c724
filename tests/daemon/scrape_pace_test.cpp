// SPDX-License-Identifier: MIT
// ScrapePace: fresh answers to /metrics at most 10 a second, as many at once after a pause;
// on a clock the test moves.
#include "daemon/scrape_pace.h"

#include <gtest/gtest.h>

namespace floodgate::daemon {
namespace {

using std::chrono::milliseconds;

TEST(ScrapePaceTest, TenAtOnceThenOneEveryTenthOfASecond) {
  ScrapePace pace;
  const auto t0 = ScrapePace::Clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < ScrapePace::kPerSecond; ++i) EXPECT_TRUE(pace.due(t0)) << i;
  EXPECT_FALSE(pace.due(t0)) << "a client asking without pause gets the last answer";
  EXPECT_FALSE(pace.due(t0 + milliseconds(99)));
  EXPECT_TRUE(pace.due(t0 + milliseconds(100)));
  EXPECT_FALSE(pace.due(t0 + milliseconds(150)));
  // asked every millisecond: after the burst, ten fresh answers a second
  int fresh = 0;
  for (int i = 1000; i < 2000; ++i) fresh += pace.due(t0 + milliseconds(i));
  EXPECT_LE(fresh, 2 * ScrapePace::kPerSecond) << "the burst and a second's pace";
  fresh = 0;
  for (int i = 2000; i < 3000; ++i) fresh += pace.due(t0 + milliseconds(i));
  EXPECT_EQ(fresh, ScrapePace::kPerSecond);
}

TEST(ScrapePaceTest, PrometheusIsNeverAnsweredFromTheLast) {
  ScrapePace pace;
  const auto t0 = ScrapePace::Clock::time_point{} + std::chrono::hours(1);
  // two servers scraping every second, a tenth of a second apart, and a health check
  for (int s = 0; s < 60; ++s) {
    EXPECT_TRUE(pace.due(t0 + std::chrono::seconds(s)));
    EXPECT_TRUE(pace.due(t0 + std::chrono::seconds(s) + milliseconds(1)));
    EXPECT_TRUE(pace.due(t0 + std::chrono::seconds(s) + milliseconds(100)));
  }
}

}  // namespace
}  // namespace floodgate::daemon
