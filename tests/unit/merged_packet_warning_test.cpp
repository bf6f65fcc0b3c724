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

DeviceFeatures device(const std::string& name) {
  DeviceFeatures out;
  out.name = name;
  return out;
}

MergingDevice at(DeviceFeatures features, const std::string& kind = "") {
  MergingDevice out;
  out.features = std::move(features);
  out.kind = kind;
  return out;
}

ReceiveMerging of(std::vector<MergingDevice> devices) {
  ReceiveMerging out;
  out.devices = std::move(devices);
  return out;
}

// The kernel skips GRO on the device that runs a generic program: its own GRO is no warning.
TEST(MergedPacketWarningTest, NothingThatMergesAndTheDevicesOwnGroGiveNoWarning) {
  EXPECT_FALSE(mergedPacketWarning("eth0", of({at(device("eth0"))})).has_value());
  DeviceFeatures gro = device("eth0");
  gro.gro = true;
  EXPECT_FALSE(mergedPacketWarning("eth0", of({at(gro)})).has_value());
}

TEST(MergedPacketWarningTest, LroLeftOnTheDeviceIsNamedWithItsCommand) {
  DeviceFeatures nic = device("eth0");
  nic.gro = true;
  nic.lro = true;
  nic.gro_hw = true;
  auto line = mergedPacketWarning("eth0", of({at(nic)}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line,
                  "generic mode on 'eth0' meets a flow's segments merged: 'eth0' merges "
                  "with its lro and rx-gro-hw:"))
      << *line;
  EXPECT_TRUE(has(*line, "counts once against pps limits")) << *line;
  EXPECT_TRUE(has(*line, "turn that off: 'ethtool -K eth0 lro off rx-gro-hw off'")) << *line;
  EXPECT_FALSE(has(*line, "\n")) << *line;
}

// A vlan or macvlan meets what its lower device's GRO merged; the devices between (a bond
// under a vlan) have GRO on too but merge nothing of their own, and are not named.
TEST(MergedPacketWarningTest, TheGroOfTheDevicesAtTheBottomIsNamedWithItsCommand) {
  DeviceFeatures vlan = device("bond0.5"), bond = device("bond0"), eth0 = device("eth0"),
                 eth1 = device("eth1");
  vlan.gro = bond.gro = eth0.gro = true;
  eth1.lro = true;
  MergingDevice between = at(bond);
  between.leaf = false;
  MergingDevice top = at(vlan);
  top.leaf = false;
  auto line = mergedPacketWarning("bond0.5", of({top, between, at(eth0), at(eth1)}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "merged: 'eth0' merges with its gro; 'eth1' merges with its lro:"))
      << *line;
  EXPECT_TRUE(has(*line, "turn that off: 'ethtool -K eth0 gro off'; 'ethtool -K eth1 lro off'"))
      << *line;
  EXPECT_FALSE(has(*line, "'bond0' merges")) << *line;
  EXPECT_FALSE(has(*line, "'bond0.5' merges")) << *line;
  EXPECT_FALSE(has(*line, "native")) << *line;
}

// A macvlan in a container over the host's NIC: the NIC cannot be read from here.
TEST(MergedPacketWarningTest, ALowerDeviceElsewhereIsWarnedOf) {
  MergingDevice macvlan = at(device("mv0"));
  macvlan.leaf = false;
  macvlan.lower_elsewhere = true;
  auto line = mergedPacketWarning("mv0", of({macvlan}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "the device below 'mv0' (in another namespace) may merge with its GRO"))
      << *line;
  EXPECT_TRUE(has(*line, "'ethtool -K LOWER gro off' there")) << *line;
}

TEST(MergedPacketWarningTest, AVethPeerInTheNamespaceIsReadAndNamed) {
  DeviceFeatures peer = device("veth1");
  peer.tso = true;
  peer.udp_segmentation = true;
  MergingDevice veth = at(device("veth0"), "veth");
  veth.veth_peer = peer;
  auto line = mergedPacketWarning("veth0", of({veth}));
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
  veth.veth_peer->tso = veth.veth_peer->udp_segmentation = false;
  EXPECT_FALSE(mergedPacketWarning("veth0", of({veth})).has_value());
}

// A peer in another namespace cannot be read: always warned of, with every feature to turn
// off; a bridge of containers' veths makes one finding, not one a port.
TEST(MergedPacketWarningTest, VethPeersElsewhereAreWarnedOfWithEveryFeatureOnce) {
  MergingDevice veth = at(device("veth0"), "veth");
  veth.peer_elsewhere = true;
  auto line = mergedPacketWarning("veth0", of({veth}));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line, "the veth peer of 'veth0' (in another namespace) may send them merged"))
      << *line;
  EXPECT_TRUE(has(*line,
                  "'ethtool -K PEER tso off tx-udp-segmentation off tx-gso-list off "
                  "tx-sctp-segmentation off' there (or attach in native mode"))
      << *line;

  MergingDevice bridge = at(device("br0"), "bridge");
  bridge.leaf = false;
  MergingDevice other = veth;
  other.features.name = "veth1";
  auto ports = mergedPacketWarning("br0", of({bridge, veth, other}));
  ASSERT_TRUE(ports.has_value());
  EXPECT_TRUE(has(*ports,
                  "the veth peers of 'veth0' and 'veth1' (in other namespaces) may send "
                  "them merged"))
      << *ports;
  EXPECT_EQ(ports->find("PEER"), ports->rfind("PEER")) << *ports;
  // native mode on the bridge is no fix
  EXPECT_FALSE(has(*ports, "native")) << *ports;
}

TEST(MergedPacketWarningTest, ATapDevicesNotReadAndSeveralFindingsMakeOneLine) {
  DeviceFeatures lower = device("eth0");
  lower.gro = true;
  MergingDevice bridge = at(device("br0"), "bridge");
  bridge.leaf = false;
  MergingDevice tap = at(device("tap0"), "tun");
  ReceiveMerging merging = of({bridge, tap, at(lower)});
  merging.unread = 3;
  auto line = mergedPacketWarning("br0", merging);
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(has(*line,
                  "what writes to 'tap0' may write them merged (a VM's TSO or UDP GSO); "
                  "'eth0' merges with its gro; 3 more devices below it were not read:"))
      << *line;
  EXPECT_TRUE(has(*line,
                  "turn that off: turn TSO and UDP GSO off where it is written (a VM's "
                  "virtio-net offloads); 'ethtool -K eth0 gro off'; check 'ethtool -k' of "
                  "those"))
      << *line;
  EXPECT_FALSE(has(*line, "\n")) << *line;
}

}  // namespace
}  // namespace floodgate
