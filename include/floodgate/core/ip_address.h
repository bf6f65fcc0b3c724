// SPDX-License-Identifier: MIT
// IP addresses and CIDR prefixes as the trusted-proxy list and the client-IP walk need them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate::http {

// An IPv4 or IPv6 address. IPv4-mapped IPv6 (::ffff:a.b.c.d) is stored as IPv4, so one
// client has one key however the socket reports it.
struct IpAddress {
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4
  bool v4 = true;

  // Plain address text: "192.0.2.1", "2001:db8::1". No brackets, ports or zone ids.
  static std::optional<IpAddress> parse(std::string_view text);
  // Canonical text (inet_ntop).
  std::string toString() const;
  bool operator==(const IpAddress&) const = default;
};

// A prefix of IpAddress, such as 10.0.0.0/8 or 2001:db8::/32; a bare address is a /32 or
// /128. (floodgate::Cidr, include/floodgate/common/cidr.h, is the packet side's prefix.)
struct IpPrefix {
  IpAddress base;
  int prefix_len = 0;

  static std::optional<IpPrefix> parse(std::string_view text);
  // The prefix of `address` of `prefix_len` bits (host bits cleared).
  static IpPrefix of(const IpAddress& address, int prefix_len);
  bool contains(const IpAddress& address) const;
  // "192.0.2.0/24", "2001:db8::/64"; a whole address prints as the address alone.
  std::string toString() const;
};

// IpPrefix's former name, kept so that services that name it still build.
using Cidr [[deprecated("floodgate::http::Cidr is now IpPrefix")]] = IpPrefix;

// The prefix length a client is keyed by: `ipv4_prefix` of an IPv4 address, `ipv6_prefix`
// of an IPv6 one, and 96 + `ipv4_prefix` of an address of the NAT64 well-known prefix
// 64:ff9b::/96 (RFC 6052), which holds one IPv4 client in its last 32 bits: a service
// behind a NAT46 translator sees every IPv4 client there, and a /64 of them would be one key
// (and one report, one ban) for all of them.
int keyPrefixLength(const IpAddress& address, int ipv4_prefix, int ipv6_prefix);

// What a client is keyed (and reported) by: an IPv4 address, an IPv6 address's prefix of
// `ipv6_prefix` bits ("2001:db8:1:2::/64"; the address alone at 128), the whole address of
// one in 64:ff9b::/96. A client rotating addresses inside its prefix is one client.
std::string clientKey(const IpAddress& address, int ipv6_prefix);

}  // namespace floodgate::http
