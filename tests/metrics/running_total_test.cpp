// SPDX-License-Identifier: MIT
// RunningTotal: a counter from a sum whose terms go away never goes down.
#include "metrics/running_total.h"

#include <gtest/gtest.h>

namespace floodgate::metrics {
namespace {

TEST(RunningTotal, RisesWithTheSumAndNeverFallsWhenATermGoesAway) {
  RunningTotal total;
  EXPECT_EQ(total.read(0), 0u);
  EXPECT_EQ(total.read(5), 5u) << "what was there at the first reading counts";
  EXPECT_EQ(total.read(8), 8u);
  EXPECT_EQ(total.read(3), 8u) << "a rule of 5 removed: the total stays";
  EXPECT_EQ(total.read(3), 8u);
  EXPECT_EQ(total.read(6), 11u) << "and rises from the new start";
  EXPECT_EQ(total.read(0), 11u);
}

}  // namespace
}  // namespace floodgate::metrics
