// SPDX-License-Identifier: MIT
// ReplayMemory: entries remembered until their copies would be stale, at most its bound, and
// past the bound no copy of a dropped entry passes.
#include "daemon/replay_memory.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate::daemon {
namespace {

TEST(ReplayMemory, RemembersUntilACopyWouldBeStaleAnyway) {
  ReplayMemory memory(10);
  memory.remember("a", 1000, 0);
  EXPECT_TRUE(memory.remembers("a"));
  EXPECT_FALSE(memory.remembers("b"));
  EXPECT_FALSE(memory.pastDropped(1000));
  // at 1001 a copy of "a" is refused by the time check: nothing to hold it for
  memory.remember("b", 2000, 1001);
  EXPECT_FALSE(memory.remembers("a"));
  EXPECT_FALSE(memory.pastDropped(1000)) << "forgotten as stale, not dropped for room";
  EXPECT_EQ(memory.size(), 1u);
}

// Whoever can add signed entries can add them without end: the memory stays at its bound,
// and an entry that would be forgotten no later than one dropped for room may be a copy of
// it, so it counts as read.
TEST(ReplayMemory, StaysAtItsBoundAndTakesWhatItDroppedAsRead) {
  ReplayMemory memory(3);
  for (int i = 0; i < 1000; ++i) memory.remember("m" + std::to_string(i), 5000 + i, 0);
  EXPECT_EQ(memory.size(), 3u);
  EXPECT_TRUE(memory.remembers("m999"));
  EXPECT_FALSE(memory.remembers("m0"));
  EXPECT_TRUE(memory.pastDropped(5000)) << "a copy of m0 must not pass";
  EXPECT_TRUE(memory.pastDropped(5996));
  EXPECT_FALSE(memory.pastDropped(5997)) << "later than anything dropped";
}

}  // namespace
}  // namespace floodgate::daemon
