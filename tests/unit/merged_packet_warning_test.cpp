// SPDX-License-Identifier: MIT
// mergedPacketWarning: one line naming what merges on the way to the interface and the
// command that turns each off.
#include "controller/merged_packet_warning.h"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

DeviceFeatures device(const std::string& name, const std::string& driver = "") {
  DeviceFeatures out;
  out.name = name;
  out.driver = driver;
  return out;
}

ReceiveMerging of(std::vector<MergingDevice> devices) { return ReceiveMerging{std::move(devices)}; }

// The kernel skips GRO on the device that runs a generic program: its own GRO is no warning.
TEST(MergedPacketWarningTest, NothingThatMergesAndTheDevicesOwnGroGiveNoWarning) {
  EXPECT_FALSE(mergedPacketWarning("eth0", of({{device("eth0"), std::nullopt}})).has_value());
  DeviceFeatures gro = device("eth0");
  gro.gro = true;
  EXPECT_FALSE(mergedPacketWarning("eth0", of({{gro, std::nullopt}})).has_value());
}

TEST(MergedPacketWarningTest, LroLeftOnTheDeviceIsNamedWithItsCommand) {
  DeviceFeatures nic = device("eth0");
  nic.gro = true;
  nic.lro = true;
  nic.gro_hw = true;
  auto line = mergedPacketWarning("eth0", of({{nic, std::nullopt}}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line,
                  "generic mode on 'eth0' meets a flow's segments merged: 'eth0' merges "
                  "with its lro and rx-gro-hw:"))
      << *line;
  EXPECT_TRUE(has(*line, "counts once against pps limits")) << *line;
  EXPECT_TRUE(has(*line, "turn that off: 'ethtool -K eth0 lro off rx-gro-hw off'")) << *line;
  EXPECT_FALSE(has(*line, "\n")) << *line;
}

// A vlan or macvlan meets what its lower device's GRO merged.
TEST(MergedPacketWarningTest, ALowerDevicesMergingIsNamedWithItsCommand) {
  DeviceFeatures lower = device("eth0");
  lower.gro = true;
  lower.lro = true;
  auto line =
      mergedPacketWarning("eth0.5", of({{device("eth0.5"), std::nullopt}, {lower, std::nullopt}}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "'eth0' merges with its gro and lro")) << *line;
  EXPECT_TRUE(has(*line, "'ethtool -K eth0 gro off lro off'")) << *line;
  EXPECT_FALSE(has(*line, "native")) << *line;
}

TEST(MergedPacketWarningTest, AVethPeerInTheNamespaceIsReadAndNamed) {
  DeviceFeatures peer = device("veth1", "veth");
  peer.tso = true;
  peer.udp_segmentation = true;
  auto line = mergedPacketWarning("veth0", of({{device("veth0", "veth"), peer}}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line,
                  "its veth peer 'veth1' sends them to 'veth0' merged (tso and "
                  "tx-udp-segmentation)"))
      << *line;
  EXPECT_TRUE(has(*line,
                  "'ethtool -K veth1 tso off tx-udp-segmentation off' (or attach in "
                  "native mode, which keeps them off)"))
      << *line;
  // its segmentation off, nothing is left to warn of
  peer.tso = peer.udp_segmentation = false;
  EXPECT_FALSE(mergedPacketWarning("veth0", of({{device("veth0", "veth"), peer}})).has_value());
}

// A peer in another namespace cannot be read: always warned of, with every feature to turn off.
TEST(MergedPacketWarningTest, AVethPeerElsewhereIsWarnedOfWithEveryFeature) {
  auto line = mergedPacketWarning("veth0", of({{device("veth0", "veth"), std::nullopt}}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "the veth peer of 'veth0' (in another namespace) may send them merged"))
      << *line;
  EXPECT_TRUE(has(*line,
                  "'ethtool -K PEER tso off tx-udp-segmentation off tx-gso-list off "
                  "tx-sctp-segmentation off' there (or attach in native mode"))
      << *line;
  // a bridge's veth port: native mode on the bridge is no fix
  auto bridge = mergedPacketWarning("br0", of({{device("br0", "bridge"), std::nullopt},
                                               {device("veth0", "veth"), std::nullopt}}));
  ASSERT_TRUE(bridge.has_value());
  EXPECT_TRUE(has(*bridge, "the veth peer of 'veth0'")) << *bridge;
  EXPECT_FALSE(has(*bridge, "native")) << *bridge;
}

TEST(MergedPacketWarningTest, ATapAndSeveralFindingsMakeOneLine) {
  DeviceFeatures lower = device("eth0");
  lower.gro = true;
  auto line = mergedPacketWarning("br0", of({{device("br0", "bridge"), std::nullopt},
                                             {device("tap0", "tun"), std::nullopt},
                                             {lower, std::nullopt}}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line,
                  "what writes to 'tap0' may write them merged (a VM's TSO or UDP GSO); "
                  "'eth0' merges with its gro:"))
      << *line;
  EXPECT_TRUE(has(*line,
                  "turn that off: turn TSO and UDP GSO off where it is written (a VM's "
                  "virtio-net offloads); 'ethtool -K eth0 gro off'"))
      << *line;
  EXPECT_FALSE(has(*line, "\n")) << *line;
}

}  // namespace
}  // namespace floodgate
