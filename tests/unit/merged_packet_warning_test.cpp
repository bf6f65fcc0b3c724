// SPDX-License-Identifier: MIT
// mergedPacketWarning: one line naming what merges and the command that turns each off.
#include "controller/merged_packet_warning.h"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MergedPacketWarningTest, NothingThatMergesGivesNoWarning) {
  EXPECT_FALSE(mergedPacketWarning("eth0", ReceiveMerging{}).has_value());
}

TEST(MergedPacketWarningTest, GroAloneIsNamedWithItsCommand) {
  auto line = mergedPacketWarning("eth0", ReceiveMerging{.gro = true});
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "generic mode on 'eth0' meets packets after its gro merged")) << *line;
  EXPECT_TRUE(has(*line, "counts once against pps limits")) << *line;
  EXPECT_TRUE(has(*line, "'ethtool -K eth0 gro off'")) << *line;
  EXPECT_FALSE(has(*line, "veth")) << *line;
  EXPECT_FALSE(has(*line, "\n")) << *line;
}

TEST(MergedPacketWarningTest, EveryMergingFeatureIsNamedAndTurnedOffInOneCommand) {
  auto line = mergedPacketWarning("eth1", ReceiveMerging{.gro = true, .lro = true, .gro_hw = true});
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "its gro, lro and rx-gro-hw merged")) << *line;
  EXPECT_TRUE(has(*line, "'ethtool -K eth1 gro off lro off rx-gro-hw off'")) << *line;
  auto two = mergedPacketWarning("eth1", ReceiveMerging{.lro = true, .gro_hw = true});
  ASSERT_TRUE(two.has_value());
  EXPECT_TRUE(has(*two, "its lro and rx-gro-hw merged")) << *two;
  EXPECT_TRUE(has(*two, "'ethtool -K eth1 lro off rx-gro-hw off'")) << *two;
}

// A veth's peer may be in another namespace: whether it segments cannot be read, so a veth
// is always warned of, with native mode (exact there) and the peer's command as the fixes.
TEST(MergedPacketWarningTest, AVethIsWarnedOfItsPeer) {
  auto line = mergedPacketWarning("veth0", ReceiveMerging{.veth = true});
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "meets packets as its veth peer sends them (merged by TSO or UDP GSO)"))
      << *line;
  EXPECT_TRUE(has(*line, "attach in native mode")) << *line;
  EXPECT_TRUE(has(*line, "'ethtool -K PEER tso off tx-udp-segmentation off' on the peer")) << *line;
  EXPECT_FALSE(has(*line, "gro off")) << *line;

  auto both = mergedPacketWarning("veth0", ReceiveMerging{.gro = true, .veth = true});
  ASSERT_TRUE(both.has_value());
  EXPECT_TRUE(has(*both, "'ethtool -K veth0 gro off', and attach in native mode")) << *both;
  EXPECT_FALSE(has(*both, "\n")) << *both;
}

}  // namespace
}  // namespace floodgate
