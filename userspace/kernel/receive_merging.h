// SPDX-License-Identifier: MIT
// What an interface merges a TCP flow's segments with before generic XDP sees them: the
// kernel's GRO, the NIC's LRO or hardware GRO, and (for a veth) segments its peer sends merged.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

struct ReceiveMerging {
  bool gro = false;     // rx-gro: the kernel merges in-order segments of a flow
  bool lro = false;     // rx-lro: the NIC does, by its own rules
  bool gro_hw = false;  // rx-gro-hw: the NIC does, as GRO would
  bool veth = false;    // a veth, whose peer hands over what its stack sent merged (TSO, GSO)
};

// The features of `interface` in this network namespace that merge segments, as ethtool -k
// shows them active; an error when the interface's features cannot be read.
Result<ReceiveMerging> receiveMerging(const std::string& interface);

}  // namespace floodgate
