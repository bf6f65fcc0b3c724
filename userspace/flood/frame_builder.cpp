// SPDX-License-Identifier: MIT
// Builds the template frame and the checksum sums the generator completes per source.
#include "flood/frame_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "flood_rewrite.h"

namespace floodgate::flood {
namespace {

constexpr uint32_t kEthernetMinimum = 60;
constexpr size_t kIpv4Header = 20, kIpv6Header = 40;
constexpr size_t kUdpHeader = 8, kTcpHeader = 20, kIcmpHeader = 8;
constexpr uint8_t kIpProtoTcp = 6, kIpProtoUdp = 17, kIpProtoIcmp = 1, kIpProtoIcmpV6 = 58;

size_t l4HeaderBytes(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcpSyn:
      return kTcpHeader;
    case Protocol::kIcmp:
      return kIcmpHeader;
    case Protocol::kUdp:
      break;
  }
  return kUdpHeader;
}

uint8_t ipProtocol(Family family, Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcpSyn:
      return kIpProtoTcp;
    case Protocol::kIcmp:
      return family == Family::kV4 ? kIpProtoIcmp : kIpProtoIcmpV6;
    case Protocol::kUdp:
      break;
  }
  return kIpProtoUdp;
}

// Offset of the checksum inside the L4 header.
size_t l4ChecksumAt(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcpSyn:
      return 16;
    case Protocol::kIcmp:
      return 2;
    case Protocol::kUdp:
      break;
  }
  return 6;
}

void put16(std::vector<uint8_t>& bytes, size_t at, uint16_t value) {
  bytes[at] = static_cast<uint8_t>(value >> 8);
  bytes[at + 1] = static_cast<uint8_t>(value);
}

void put32(std::vector<uint8_t>& bytes, size_t at, uint32_t value) {
  put16(bytes, at, static_cast<uint16_t>(value >> 16));
  put16(bytes, at + 2, static_cast<uint16_t>(value));
}

// One's complement sum of `length` bytes (an odd last byte padded with zero).
uint32_t sumBytes(const uint8_t* bytes, size_t length) {
  uint32_t sum = fl_sum_words(bytes, static_cast<int>(length / 2));
  if (length % 2) {
    uint8_t last[2] = {bytes[length - 1], 0};
    sum += fl_sum_words(last, 1);
  }
  return fl_fold(sum);
}

// The room of the source addresses must not overlap the span the IPv4 source may take.
Status checkRotation(const FrameSpec& spec) {
  if (spec.sources == 0) return Error::usage("--sources must be at least 1");
  if (spec.source.family == Family::kV4) {
    if (spec.across_64s) {
      return Error::usage("--across-64s is for IPv6 sources: drop it or flood an IPv6 --dst");
    }
    uint32_t first = 0;
    std::memcpy(&first, spec.source.addr.data(), 4);
    uint64_t last = static_cast<uint64_t>(fl_be32(first)) + spec.sources - 1;
    if (last > 0xffffffffULL) {
      return Error::usage("--src " + spec.source.toString() + " plus " +
                          std::to_string(spec.sources) +
                          " sources runs past 255.255.255.255: start lower or use fewer");
    }
  }
  return okStatus();
}

}  // namespace

uint32_t minimumFrameBytes(Family family, Protocol protocol) {
  size_t headers =
      FL_ETH_LEN + (family == Family::kV4 ? kIpv4Header : kIpv6Header) + l4HeaderBytes(protocol);
  return std::max<uint32_t>(kEthernetMinimum, static_cast<uint32_t>(headers));
}

Result<FrameTemplate> buildFrame(const FrameSpec& spec) {
  const Family family = spec.destination.family;
  if (spec.source.family != family) {
    return Error::usage("--src " + spec.source.toString() + " and --dst " +
                        spec.destination.toString() +
                        " are of different IP versions: give both IPv4 or both IPv6");
  }
  if (Status rotation = checkRotation(spec); !rotation) return rotation.error();
  const uint32_t minimum = minimumFrameBytes(family, spec.protocol);
  const uint32_t size = spec.frame_bytes == 0 ? minimum : spec.frame_bytes;
  if (size < minimum || size > kMaxFrameBytes) {
    return Error::usage("--size " + std::to_string(size) + " does not fit: a " +
                        protocolName(spec.protocol) + (family == Family::kV4 ? " IPv4" : " IPv6") +
                        " frame is " + std::to_string(minimum) + " to " +
                        std::to_string(kMaxFrameBytes) + " bytes (without FCS)");
  }

  FrameTemplate out;
  std::vector<uint8_t>& f = out.frame;
  f.assign(size, 0);
  std::memcpy(&f[0], spec.dst_mac.data(), 6);
  std::memcpy(&f[6], spec.src_mac.data(), 6);
  put16(f, 12, family == Family::kV4 ? 0x0800 : 0x86dd);

  const size_t l3 = FL_ETH_LEN;
  const size_t l4 = l3 + (family == Family::kV4 ? kIpv4Header : kIpv6Header);
  const size_t l4_length = size - l4;  // L4 header + payload (padding included)
  const uint8_t proto = ipProtocol(family, spec.protocol);
  const size_t address_bytes = family == Family::kV4 ? 4 : 16;
  if (family == Family::kV4) {
    f[l3] = 0x45;                                        // version 4, 5 words
    put16(f, l3 + 2, static_cast<uint16_t>(size - l3));  // total length
    put16(f, l3 + 6, 0x4000);                            // don't fragment
    f[l3 + 8] = 64;                                      // TTL
    f[l3 + 9] = proto;
    std::memcpy(&f[l3 + 12], spec.source.addr.data(), 4);
    std::memcpy(&f[l3 + 16], spec.destination.addr.data(), 4);
  } else {
    f[l3] = 0x60;
    put16(f, l3 + 4, static_cast<uint16_t>(l4_length));  // payload length
    f[l3 + 6] = proto;
    f[l3 + 7] = 64;  // hop limit
    std::memcpy(&f[l3 + 8], spec.source.addr.data(), 16);
    std::memcpy(&f[l3 + 24], spec.destination.addr.data(), 16);
  }

  switch (spec.protocol) {
    case Protocol::kUdp:
      put16(f, l4, spec.src_port);
      put16(f, l4 + 2, spec.dst_port);
      put16(f, l4 + 4, static_cast<uint16_t>(l4_length));
      break;
    case Protocol::kTcpSyn:
      put16(f, l4, spec.src_port);
      put16(f, l4 + 2, spec.dst_port);
      put32(f, l4 + 4, 0x5eed0001);  // sequence number
      f[l4 + 12] = 0x50;             // 5 words, no options
      f[l4 + 13] = 0x02;             // SYN
      put16(f, l4 + 14, 64240);      // window
      break;
    case Protocol::kIcmp:
      f[l4] = family == Family::kV4 ? 8 : 128;  // echo request
      put16(f, l4 + 4, 0xf100);                 // identifier
      put16(f, l4 + 6, 1);                      // sequence
      break;
  }
  // a recognisable payload pattern, after the headers
  for (size_t i = l4 + l4HeaderBytes(spec.protocol); i < size; ++i) f[i] = 0x5a;

  fl_template& t = out.settings;
  std::memcpy(t.base_source, spec.source.addr.data(), address_bytes);
  t.sources = spec.sources;
  t.family = family == Family::kV4 ? FL_FAMILY_IPV4 : FL_FAMILY_IPV6;
  t.protocol = static_cast<uint8_t>(spec.protocol);
  t.spread = spec.across_64s ? FL_SPREAD_PREFIX : FL_SPREAD_HOST;
  t.l4_csum_offset = static_cast<uint16_t>(l4 + l4ChecksumAt(spec.protocol));
  // ICMPv4 alone has no pseudo header, so its checksum does not change with the source
  t.l4_covers_source = !(family == Family::kV4 && spec.protocol == Protocol::kIcmp);

  const size_t source_at = family == Family::kV4 ? FL_IPV4_SRC_OFFSET : FL_IPV6_SRC_OFFSET;
  if (family == Family::kV4) {
    // the header without its checksum and without the source
    uint32_t sum = sumBytes(&f[l3], 10) + sumBytes(&f[l3 + 16], 4);
    t.ip_rest_sum = fl_fold(sum);
  }
  uint32_t l4_sum = sumBytes(&f[l4], l4_length);
  if (t.l4_covers_source) {
    std::vector<uint8_t> pseudo(address_bytes + 4 + 4, 0);  // destination, protocol, length
    std::memcpy(pseudo.data(), &f[source_at + address_bytes], address_bytes);
    pseudo[address_bytes + 3] = proto;
    pseudo[address_bytes + 6] = static_cast<uint8_t>(l4_length >> 8);
    pseudo[address_bytes + 7] = static_cast<uint8_t>(l4_length);
    l4_sum += sumBytes(pseudo.data(), pseudo.size());
  }
  t.l4_rest_sum = fl_fold(l4_sum);

  // the template itself carries source 0, checksums and all
  if (fl_rewrite(&t, 0, f.data(), f.data() + f.size()) != 0) {
    return Error::failure("internal error: the template frame is shorter than its offsets");
  }
  if (!t.l4_covers_source) {
    // ICMPv4's checksum is fixed: write it once here
    uint16_t csum = static_cast<uint16_t>(~fl_fold(t.l4_rest_sum));
    std::memcpy(&f[t.l4_csum_offset], &csum, 2);
  }
  t.head_len = static_cast<uint32_t>(std::min<size_t>(f.size(), FL_HEAD_BYTES));
  std::memcpy(t.head, f.data(), t.head_len);
  return out;
}

const char* protocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::kTcpSyn:
      return "tcp-syn";
    case Protocol::kIcmp:
      return "icmp";
    case Protocol::kUdp:
      break;
  }
  return "udp";
}

Result<Protocol> parseProtocol(const std::string& text) {
  if (text == "udp") return Protocol::kUdp;
  if (text == "tcp-syn" || text == "syn" || text == "tcp") return Protocol::kTcpSyn;
  if (text == "icmp") return Protocol::kIcmp;
  return Error::usage("--protocol '" + text + "' is not one of udp, tcp-syn, icmp");
}

Result<MacAddress> parseMac(const std::string& text) {
  MacAddress mac{};
  unsigned parts[6];
  char tail = 0;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &parts[0], &parts[1], &parts[2],
                  &parts[3], &parts[4], &parts[5], &tail) != 6) {
    return Error::usage("'" + text + "' is not a MAC address: write it as aa:bb:cc:dd:ee:ff");
  }
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(parts[i]);
  return mac;
}

std::string formatMac(const MacAddress& mac) {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

}  // namespace floodgate::flood
