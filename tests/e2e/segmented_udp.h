// SPDX-License-Identifier: MIT
// Sends UDP through the kernel's segmentation offload (UDP_SEGMENT): one send carries many
// datagrams, which a veth with tx-udp-segmentation on hands to its peer as one merged packet,
// and which the stack cuts into datagrams first when that is off. The way to put merged
// packets in front of a limiter on the far end of the veth.
#pragma once

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate::test {

// From namespace `netns`, `sends` sends to `destination`:`port`, each of `datagrams`
// datagrams of `payload` bytes; returns how many datagrams went out (all, or an error).
Result<uint64_t> sendSegmentedUdp(const std::string& netns, const std::string& destination,
                                  uint16_t port, uint32_t sends, uint32_t datagrams,
                                  uint16_t payload);

}  // namespace floodgate::test
