// SPDX-License-Identifier: MIT
// Parsing and printing IP addresses and CIDR prefixes.
#include "floodgate/core/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "floodgate/common/cidr.h"

namespace floodgate::http {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buffer[INET6_ADDRSTRLEN];
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  IpAddress address;
  if (inet_pton(AF_INET, buffer, address.bytes.data()) == 1) return address;
  if (inet_pton(AF_INET6, buffer, address.bytes.data()) != 1) return std::nullopt;
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(address.bytes.data(), kMappedPrefix, sizeof kMappedPrefix) == 0) {
    std::memmove(address.bytes.data(), address.bytes.data() + 12, 4);
    std::memset(address.bytes.data() + 4, 0, 12);
    return address;
  }
  address.v4 = false;
  return address;
}

std::string IpAddress::toString() const {
  if (v4) {
    // by hand: glibc formats IPv4 through sprintf, a visible share of every decision's cost
    std::string text;
    text.reserve(15);
    for (size_t i = 0; i < 4; ++i) {
      const unsigned byte = bytes[i];
      if (i > 0) text += '.';
      if (byte >= 100) text += static_cast<char>('0' + byte / 100);
      if (byte >= 10) text += static_cast<char>('0' + byte / 10 % 10);
      text += static_cast<char>('0' + byte % 10);
    }
    return text;
  }
  char buffer[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, bytes.data(), buffer, sizeof buffer);
  return buffer;
}

std::optional<IpPrefix> IpPrefix::parse(std::string_view text) {
  size_t slash = text.find('/');
  auto address = IpAddress::parse(text.substr(0, slash));
  if (!address) return std::nullopt;
  int max_len = address->v4 ? 32 : 128;
  int len = max_len;
  if (slash != std::string_view::npos) {
    auto parsed = parsePrefixLength(text.substr(slash + 1), max_len);
    if (!parsed) return std::nullopt;
    len = *parsed;
  }
  return IpPrefix{*address, len};
}

IpPrefix IpPrefix::of(const IpAddress& address, int prefix_len) {
  IpPrefix prefix{address, prefix_len};
  const int bits = address.v4 ? 32 : 128;
  for (int bit = prefix_len; bit < bits; ++bit) {
    prefix.base.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return prefix;
}

std::string IpPrefix::toString() const {
  if (prefix_len == (base.v4 ? 32 : 128)) return base.toString();
  return base.toString() + "/" + std::to_string(prefix_len);
}

int keyPrefixLength(const IpAddress& address, int ipv4_prefix, int ipv6_prefix) {
  static constexpr uint8_t kNat64Prefix[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (address.v4) return ipv4_prefix;
  if (std::memcmp(address.bytes.data(), kNat64Prefix, sizeof kNat64Prefix) == 0) {
    return 96 + ipv4_prefix;
  }
  return ipv6_prefix;
}

std::string clientKey(const IpAddress& address, int ipv6_prefix) {
  if (address.v4) return address.toString();
  return IpPrefix::of(address, keyPrefixLength(address, 32, ipv6_prefix)).toString();
}

bool IpPrefix::contains(const IpAddress& address) const {
  if (address.v4 != base.v4) return false;
  int full_bytes = prefix_len / 8;
  if (std::memcmp(address.bytes.data(), base.bytes.data(), full_bytes) != 0) return false;
  int rest_bits = prefix_len % 8;
  if (rest_bits == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest_bits));
  return (address.bytes[full_bytes] & mask) == (base.bytes[full_bytes] & mask);
}

}  // namespace floodgate::http
