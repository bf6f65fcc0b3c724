// SPDX-License-Identifier: MIT
// What `floodgate flood` asks of the interface it sends out of, through ethtool and
// interface ioctls in the caller's network namespace: its driver, MAC and veth counters.
#pragma once

#include <cstdint>
#include <string>

#include "flood/frame_builder.h"
#include "floodgate/common/result.h"

namespace floodgate::flood {

// The kernel driver of `interface` ("veth", "mlx5_core", ...).
Result<std::string> interfaceDriver(const std::string& interface);

// The hardware address of `interface`.
Result<MacAddress> interfaceMac(const std::string& interface);

// A veth's count of XDP frames handed to its peer (summed over the peer's queues): `xmit`
// went into the peer's queue, `errors` found it full. Both only count while the peer
// runs NAPI (an XDP program or GRO on it); without that the frames vanish uncounted.
struct VethXdpCounters {
  uint64_t xmit = 0;
  uint64_t errors = 0;
};
Result<VethXdpCounters> vethXdpCounters(const std::string& interface);

}  // namespace floodgate::flood
