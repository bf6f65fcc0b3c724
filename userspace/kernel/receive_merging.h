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

// One device's features that merge packets it receives, or send them merged, as ethtool -k
// shows them active.
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
};

// One device on the way to the interface, and for a veth its peer.
struct MergingDevice {
  DeviceFeatures features;
  // a veth's peer when it is in this namespace (nullopt: not a veth, or its peer elsewhere)
  std::optional<DeviceFeatures> veth_peer;
};

struct ReceiveMerging {
  // the interface first, then the devices whose received packets reach it: a vlan's or
  // macvlan's lower device, a bond's, team's or bridge's ports, and theirs in turn
  std::vector<MergingDevice> devices;
};

// The features of `interface`, in this network namespace, as ethtool reads them; an error
// when they cannot be read.
Result<DeviceFeatures> deviceFeatures(const std::string& interface);

// What merges before generic XDP on `interface`; an error when it cannot be read.
Result<ReceiveMerging> receiveMerging(const std::string& interface);

}  // namespace floodgate
