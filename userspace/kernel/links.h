// SPDX-License-Identifier: MIT
// The network namespace's links as rtnetlink lists them: which device hands its received
// packets to which (a vlan's or macvlan's lower device, a bond's or bridge's ports) and a
// veth's peer. Read by netlink, not sysfs: /sys/class/net shows the namespace sysfs was
// mounted in, which under `nsenter --net` is not this one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate {

struct LinkEntry {
  int index = 0;
  std::string name;
  int link = 0;                 // IFLA_LINK: a vlan's or macvlan's lower, a veth's peer; 0: none
  bool link_elsewhere = false;  // IFLA_LINK names a device of another namespace
  int master = 0;               // IFLA_MASTER: the bond, team or bridge it is a port of
  // IFLA_INFO_KIND: "veth", "macvlan", "vlan", "bond", ...; empty for a driver's device (a NIC)
  std::string kind;
  // a vlan's IFLA_VLAN_PROTOCOL, host order: 0x8100 (802.1Q) or 0x88a8 (802.1ad); 0 else
  uint16_t vlan_protocol = 0;
};

// Every link of this process's network namespace.
Result<std::vector<LinkEntry>> listLinks();

}  // namespace floodgate
