// SPDX-License-Identifier: MIT
// What merges a flow's segments before generic XDP meets them on an interface. The kernel
// skips GRO on a device with a generic XDP program and turns its LRO and hardware GRO off,
// so what is left is elsewhere: the devices that hand it their packets (a vlan's or
// macvlan's lower device, a bond's ports) merge with their own GRO, a veth's peer sends TCP
// and UDP merged (TSO, UDP GSO), and what writes to a tap writes them merged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate {

// One device's features that change what its XDP program meets, as ethtool -k shows them
// active: those that merge packets it receives or send them merged, and the VLAN offload.
struct DeviceFeatures {
  std::string name;
  std::string driver;              // ethtool -i's: "veth", "tun", ...
  bool gro = false;                // rx-gro
  bool lro = false;                // rx-lro
  bool gro_hw = false;             // rx-gro-hw
  bool tso = false;                // tx-tcp-segmentation or tx-tcp6-segmentation
  bool udp_segmentation = false;   // tx-udp-segmentation
  bool gso_list = false;           // tx-gso-list
  bool sctp_segmentation = false;  // tx-sctp-segmentation
  // rx-vlan-hw-parse: the device takes an 802.1Q tag off a received frame into the
  // packet's metadata, so XDP sees the frame untagged
  bool vlan_tags_taken_off = false;
  // tx-vlan-hw-insert: an 802.1Q tag it sends stays in the metadata (a veth's peer then
  // meets the frame untagged)
  bool vlan_tags_inserted = false;
};

// One device on the way to the interface, where it and its neighbours are.
struct MergingDevice {
  DeviceFeatures features;
  // a veth's (or netkit's) peer when it is in this namespace
  std::optional<DeviceFeatures> veth_peer;
  std::string kind;              // rtnetlink's: "veth", "macvlan", "bond", ...; empty for a NIC
  bool peer_elsewhere = false;   // a veth whose peer is in another namespace (cannot be read)
  bool lower_elsewhere = false;  // a macvlan, ipvlan or vlan whose lower device is elsewhere
  // no lower device or ports here: it receives from a wire or a peer, and its GRO merges (a
  // vlan's, bond's or bridge's GRO feature is on, but merges nothing of its own)
  bool leaf = true;
};

struct ReceiveMerging {
  // the interface first, then the devices whose received packets reach it: a vlan's or
  // macvlan's lower device, a bond's, team's or bridge's ports, and theirs in turn
  std::vector<MergingDevice> devices;
  size_t unread = 0;  // devices below past the most read (kMaxMergingDevices)
};

// The most devices receiveMerging reads, the interface among them.
inline constexpr size_t kMaxMergingDevices = 64;

// The features of `interface`, in this network namespace, as ethtool reads them; an error
// when they cannot be read.
Result<DeviceFeatures> deviceFeatures(const std::string& interface);

// What merges before generic XDP on `interface`; an error when it cannot be read.
Result<ReceiveMerging> receiveMerging(const std::string& interface);

}  // namespace floodgate
