// SPDX-License-Identifier: MIT
// vlanCookieWarning: SYN cookies on an interface whose device takes VLAN tags off before XDP.
// The program then meets a VLAN client's SYN untagged and sends its SYN-ACK back untagged,
// which reaches no VLAN device of the client: under a cookie rule such clients never
// complete a handshake. With the offload off the tag stays in the frame, and the SYN-ACK
// keeps it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate {

// Whether the interface's XDP program meets 802.1Q frames untagged, and the 802.1Q VLAN
// devices that receive through it (802.1ad ones are not looked at).
struct VlanReceive {
  // a NIC's rx-vlan-hw-parse; a veth's peer's tx-vlan-hw-insert, or true when the peer is in
  // another namespace (it cannot be read from here: the line then says it may)
  bool tags_taken_off = false;
  bool veth = false;                      // the fix is on its peer
  std::string peer;                       // a veth's peer in this namespace; empty when elsewhere
  std::vector<std::string> vlan_devices;  // vlan links whose lower device it is
};

// One line when a rule of `options` sends cookies, the device takes tags off and VLAN
// devices receive through it, naming them and the command that keeps the tags; nullopt
// otherwise.
std::optional<std::string> vlanCookieWarning(const AttachOptions& options, const VlanReceive& vlan);

// vlanCookieWarning for what options.interface has now (nothing asked of the device when no
// rule sends cookies); a line saying what could not be read, and what to check by hand.
std::optional<std::string> vlanCookieWarning(const AttachOptions& options);

}  // namespace floodgate
