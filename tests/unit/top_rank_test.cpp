// SPDX-License-Identifier: MIT
// rankTop: who is flooding between two samples of the table, and whether it is limited now.
#include <gtest/gtest.h>

#include "controller/top.h"

namespace floodgate {
namespace {

constexpr uint32_t kHz = 250;

fg_slot slotOf(uint8_t last_octet, uint32_t packets, uint32_t drops, uint32_t last_drop) {
  fg_slot slot{};
  slot.fingerprint = 0x1000 + last_octet;
  slot.family = FG_FAMILY_V4;
  slot.prefix = 32;
  slot.addr[0] = 198;
  slot.addr[1] = 51;
  slot.addr[2] = 100;
  slot.addr[3] = last_octet;
  slot.packets = packets;
  slot.drops = drops;
  slot.last_drop = last_drop;
  return slot;
}

TopSample sampleOf(std::vector<fg_slot> slots, uint64_t jiffies) {
  TopSample sample;
  sample.slots = std::move(slots);
  RuleCounters rule;
  rule.name = "default";
  sample.rules.push_back(rule);
  sample.jiffies = jiffies;
  return sample;
}

TEST(TopRank, ARefusalStampedInTheSampleTickCountsAsNow) {
  // the program stamps jiffies | 1: a refusal in even tick 1000 reads as 1001
  EXPECT_TRUE(refusedWithin(1001, 1000, kHz));
  EXPECT_TRUE(refusedWithin(1001, 1001, kHz));
  EXPECT_TRUE(refusedWithin(1001, 1001 + kHz, kHz));
  EXPECT_FALSE(refusedWithin(1001, 1002 + kHz, kHz));
  EXPECT_FALSE(refusedWithin(0, 1000, kHz));
  // across the 32-bit wrap of the stamp
  EXPECT_TRUE(refusedWithin(0xffffffffu, 0x100000005ULL, kHz));
}

TEST(TopRank, TheFlooderRanksFirstAndIsLimitedWhateverTheTicksParity) {
  for (uint64_t now : {4'000'000'000ULL, 4'000'000'001ULL}) {
    const auto stamp = static_cast<uint32_t>(now) | 1;
    TopSample before = sampleOf({slotOf(1, 100, 0, 0), slotOf(2, 1000, 500, stamp)}, now - kHz);
    TopSample after = sampleOf({slotOf(1, 200, 0, 0), slotOf(2, 21000, 19500, stamp)}, now);
    auto rows = rankTop(before, after, 1.0, kHz, {}, 5);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].source, "198.51.100.2");
    EXPECT_TRUE(rows[0].limited) << "now " << now;
    EXPECT_DOUBLE_EQ(rows[0].drops_per_s, 19000);
    EXPECT_EQ(rows[1].source, "198.51.100.1");
    EXPECT_FALSE(rows[1].limited);
    EXPECT_DOUBLE_EQ(rows[1].packets_per_s, 100);
  }
}

}  // namespace
}  // namespace floodgate
