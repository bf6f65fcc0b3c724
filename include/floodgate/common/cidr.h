// SPDX-License-Identifier: MIT
// IP addresses and CIDR prefixes: parsing user input, masking, formatting.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate {

enum class Family : uint8_t { kV4 = 0, kV6 = 1 };

// An address and prefix length; IPv4 uses the first 4 bytes of `addr`.
struct Cidr {
  Family family = Family::kV4;
  std::array<uint8_t, 16> addr{};
  uint8_t prefix = 32;

  int maxPrefix() const { return family == Family::kV4 ? 32 : 128; }
  std::string toString() const;
  bool operator==(const Cidr&) const = default;
};

// Parses "192.0.2.1", "192.0.2.0/24", "2001:db8::/32". A bare address is a host prefix.
// Host bits set below the prefix are an error: "10.0.0.1/8" is a typo more often than not.
Result<Cidr> parseCidr(std::string_view text);

// The prefix length after a '/': decimal digits only, at most `max_prefix`, and no sign or
// leading zero, so "-0" and "024" are refused rather than read as 0 and 24.
std::optional<int> parsePrefixLength(std::string_view digits, int max_prefix);

// Parses every entry of `texts` with parseCidr; the first bad one is the error.
Result<std::vector<Cidr>> parseCidrs(const std::vector<std::string>& texts);

// Parses an address only (no prefix).
Result<Cidr> parseAddress(std::string_view text);

// Formats 4 or 16 bytes in network order as an address.
std::string formatAddress(Family family, const uint8_t* bytes);

// Clears the bits of `addr` below `prefix`.
void maskAddress(std::array<uint8_t, 16>& addr, int prefix);

// Whether `prefix` covers `inner` (an address or a longer prefix of the same family).
bool covers(const Cidr& prefix, const Cidr& inner);

// The IPv4 prefix an IPv4-mapped IPv6 prefix (inside ::ffff:0:0/96) stands for:
// ::ffff:192.0.2.0/120 is 192.0.2.0/24. No packet carries a mapped address as its source,
// so an address a peer names this way (a service on a dual-stack socket) means the IPv4
// one. nullopt for any other prefix.
std::optional<Cidr> mappedIpv4(const Cidr& cidr);

}  // namespace floodgate
