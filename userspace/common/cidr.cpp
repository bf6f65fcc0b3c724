// SPDX-License-Identifier: MIT
// IP address and CIDR parsing with inet_pton, and strict checks on the prefix.
#include "floodgate/common/cidr.h"

#include <arpa/inet.h>

#include <algorithm>

namespace floodgate {

void maskAddress(std::array<uint8_t, 16>& addr, int prefix) {
  for (int byte = 0; byte < 16; ++byte) {
    int keep = prefix - byte * 8;
    if (keep >= 8) continue;
    addr[byte] = keep <= 0 ? 0 : static_cast<uint8_t>(addr[byte] & (0xff << (8 - keep)));
  }
}

std::string formatAddress(Family family, const uint8_t* bytes) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family == Family::kV4 ? AF_INET : AF_INET6, bytes, text, sizeof(text));
  return text;
}

std::string Cidr::toString() const {
  std::string text = formatAddress(family, addr.data());
  if (prefix != maxPrefix()) text += "/" + std::to_string(prefix);
  return text;
}

Result<Cidr> parseAddress(std::string_view text) {
  std::string copy(text);
  Cidr cidr;
  // inet_pton stops at a NUL, so one inside the text would hide whatever follows it.
  const bool one_string = copy.find('\0') == std::string::npos;
  if (one_string && inet_pton(AF_INET, copy.c_str(), cidr.addr.data()) == 1) {
    cidr.family = Family::kV4;
    cidr.prefix = 32;
    return cidr;
  }
  if (one_string && inet_pton(AF_INET6, copy.c_str(), cidr.addr.data()) == 1) {
    cidr.family = Family::kV6;
    cidr.prefix = 128;
    return cidr;
  }
  return Error::usage("'" + copy +
                      "' is not an IP address (expected e.g. 192.0.2.1 or 2001:db8::1)");
}

std::optional<int> parsePrefixLength(std::string_view digits, int max_prefix) {
  // from_chars alone takes "-0" and "024": a sign or a leading zero is no prefix length here.
  if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  int prefix = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    prefix = prefix * 10 + (c - '0');
  }
  if (prefix > max_prefix) return std::nullopt;
  return prefix;
}

Result<Cidr> parseCidr(std::string_view text) {
  auto slash = text.find('/');
  auto address = parseAddress(text.substr(0, slash));
  if (!address) {
    return Error::usage("'" + std::string(text) +
                        "' is not a CIDR (expected an address or address/prefix, e.g. "
                        "192.0.2.0/24 or 2001:db8::/32)");
  }
  Cidr cidr = *address;
  if (slash == std::string_view::npos) return cidr;

  auto prefix = parsePrefixLength(text.substr(slash + 1), cidr.maxPrefix());
  if (!prefix) {
    return Error::usage("'" + std::string(text) + "' has a bad prefix length (expected 0 to " +
                        std::to_string(cidr.maxPrefix()) + ")");
  }
  cidr.prefix = static_cast<uint8_t>(*prefix);
  auto masked = cidr.addr;
  maskAddress(masked, *prefix);
  if (masked != cidr.addr) {
    Cidr network = cidr;
    network.addr = masked;
    return Error::usage("'" + std::string(text) + "' has host bits set; did you mean " +
                        network.toString() + "?");
  }
  return cidr;
}

Result<std::vector<Cidr>> parseCidrs(const std::vector<std::string>& texts) {
  std::vector<Cidr> out;
  out.reserve(texts.size());
  for (const std::string& text : texts) {
    auto cidr = parseCidr(text);
    if (!cidr) return cidr.error();
    out.push_back(*cidr);
  }
  return out;
}

bool covers(const Cidr& prefix, const Cidr& inner) {
  if (prefix.family != inner.family || prefix.prefix > inner.prefix) return false;
  std::array<uint8_t, 16> masked = inner.addr;
  maskAddress(masked, prefix.prefix);
  return masked == prefix.addr;
}

std::optional<Cidr> mappedIpv4(const Cidr& cidr) {
  static constexpr std::array<uint8_t, 12> kMappedBlock = {0, 0, 0, 0, 0,    0,
                                                           0, 0, 0, 0, 0xff, 0xff};
  if (cidr.family != Family::kV6 || cidr.prefix < 96) return std::nullopt;
  if (!std::equal(kMappedBlock.begin(), kMappedBlock.end(), cidr.addr.begin())) return std::nullopt;
  Cidr v4;
  v4.family = Family::kV4;
  v4.prefix = static_cast<uint8_t>(cidr.prefix - 96);
  std::copy(cidr.addr.begin() + 12, cidr.addr.end(), v4.addr.begin());
  return v4;
}

}  // namespace floodgate
