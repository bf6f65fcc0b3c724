// SPDX-License-Identifier: MIT
// The template frame of `floodgate flood`: Ethernet + IPv4/IPv6 + UDP, TCP SYN or ICMP echo,
// with correct checksums, and the settings the generator needs to rotate its source.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "flood_shared.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"

namespace floodgate::flood {

using MacAddress = std::array<uint8_t, 6>;

enum class Protocol : uint8_t {
  kUdp = FL_PROTO_UDP,
  kTcpSyn = FL_PROTO_TCP_SYN,
  kIcmp = FL_PROTO_ICMP,
};

// What to build. The family is the destination's; the source must be of the same family.
struct FrameSpec {
  MacAddress src_mac{};
  MacAddress dst_mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  Cidr source;       // the first source address (a host address)
  Cidr destination;  // a host address
  Protocol protocol = Protocol::kUdp;
  uint16_t src_port = 40000;
  uint16_t dst_port = 9;
  uint32_t frame_bytes = 0;  // Ethernet frame without FCS; 0: the smallest that fits (≥ 60)
  uint32_t sources = 1;      // distinct sources to rotate through
  bool across_64s = false;   // IPv6: each source in its own /64 (default: all in the base /64)
};

// The frame with the first source, and the generator's settings for rotating it.
struct FrameTemplate {
  std::vector<uint8_t> frame;
  fl_template settings{};
};

inline constexpr uint32_t kMaxFrameBytes = 1514;  // a 1500-byte MTU frame without FCS

// The smallest frame for `family` and `protocol`: headers, padded to Ethernet's 60 bytes.
uint32_t minimumFrameBytes(Family family, Protocol protocol);

// Checks `spec` (sizes, families, counts) and builds the frame; a bad spec is a usage error.
Result<FrameTemplate> buildFrame(const FrameSpec& spec);

// "udp", "tcp-syn", "icmp".
const char* protocolName(Protocol protocol);
Result<Protocol> parseProtocol(const std::string& text);

// "aa:bb:cc:dd:ee:ff".
Result<MacAddress> parseMac(const std::string& text);
std::string formatMac(const MacAddress& mac);

}  // namespace floodgate::flood
