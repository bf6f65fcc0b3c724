// SPDX-License-Identifier: MIT
// PacketBuilder: appends headers and fixes up length, checksum and next-header fields.
#include "common/packet_builder.h"

#include <arpa/inet.h>

#include <cstring>
#include <stdexcept>

namespace floodgate::test {

void PacketBuilder::put16(size_t at, uint16_t value) {
  bytes_[at] = static_cast<uint8_t>(value >> 8);
  bytes_[at + 1] = static_cast<uint8_t>(value);
}

void PacketBuilder::put32(size_t at, uint32_t value) {
  put16(at, static_cast<uint16_t>(value >> 16));
  put16(at + 2, static_cast<uint16_t>(value));
}

void PacketBuilder::setNextHeader(uint8_t protocol) {
  if (next_header_at_ == SIZE_MAX) throw std::logic_error("L4 or extension header without IP");
  bytes_[next_header_at_] = protocol;
}

PacketBuilder& PacketBuilder::eth() {
  static const uint8_t kHeader[14] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0, 0};
  bytes_.insert(bytes_.end(), kHeader, kHeader + 14);
  ethertype_at_ = 12;
  return *this;
}

PacketBuilder& PacketBuilder::vlan(uint16_t id, uint16_t tpid) {
  put16(ethertype_at_, tpid);
  size_t at = bytes_.size();
  bytes_.resize(at + 4);
  put16(at, id & 0x0fff);
  ethertype_at_ = at + 2;
  return *this;
}

PacketBuilder& PacketBuilder::ethertype(uint16_t type, size_t payload) {
  put16(ethertype_at_, type);
  bytes_.resize(bytes_.size() + payload);
  return *this;
}

PacketBuilder& PacketBuilder::ipv4(const std::string& src, const std::string& dst) {
  put16(ethertype_at_, 0x0800);
  ipv4_at_ = bytes_.size();
  bytes_.resize(ipv4_at_ + 20);
  uint8_t* ip = &bytes_[ipv4_at_];
  ip[0] = 0x45;
  ip[8] = 64;
  if (inet_pton(AF_INET, src.c_str(), ip + 12) != 1 ||
      inet_pton(AF_INET, dst.c_str(), ip + 16) != 1) {
    throw std::invalid_argument("bad IPv4 address in test");
  }
  next_header_at_ = ipv4_at_ + 9;
  return *this;
}

PacketBuilder& PacketBuilder::ipv4Fragment(uint16_t offset_units, bool more_fragments) {
  put16(ipv4_at_ + 6,
        static_cast<uint16_t>((more_fragments ? 0x2000 : 0) | (offset_units & 0x1fff)));
  return *this;
}

PacketBuilder& PacketBuilder::ipv4DontFragment() {
  bytes_[ipv4_at_ + 6] |= 0x40;
  return *this;
}

PacketBuilder& PacketBuilder::ipv6(const std::string& src, const std::string& dst) {
  put16(ethertype_at_, 0x86dd);
  ipv6_at_ = bytes_.size();
  bytes_.resize(ipv6_at_ + 40);
  uint8_t* ip = &bytes_[ipv6_at_];
  ip[0] = 0x60;
  ip[6] = 59;  // no next header until a layer says otherwise
  ip[7] = 64;
  if (inet_pton(AF_INET6, src.c_str(), ip + 8) != 1 ||
      inet_pton(AF_INET6, dst.c_str(), ip + 24) != 1) {
    throw std::invalid_argument("bad IPv6 address in test");
  }
  next_header_at_ = ipv6_at_ + 6;
  return *this;
}

PacketBuilder& PacketBuilder::ipv6Ext(uint8_t type, size_t length_bytes) {
  setNextHeader(type);
  size_t at = bytes_.size();
  bytes_.resize(at + length_bytes);
  bytes_[at] = 59;
  // hop-by-hop, routing and destination options count 8-byte units beyond the first;
  // AH counts 4-byte units beyond the first two
  bytes_[at + 1] = static_cast<uint8_t>(type == 51 ? length_bytes / 4 - 2 : length_bytes / 8 - 1);
  next_header_at_ = at;
  return *this;
}

PacketBuilder& PacketBuilder::ipv6Fragment(uint16_t offset_units, bool more_fragments) {
  setNextHeader(44);
  size_t at = bytes_.size();
  bytes_.resize(at + 8);
  bytes_[at] = 59;
  put16(at + 2, static_cast<uint16_t>((offset_units << 3) | (more_fragments ? 1 : 0)));
  next_header_at_ = at;
  return *this;
}

PacketBuilder& PacketBuilder::hopLimit(uint8_t hops) {
  if (ipv6_at_ != SIZE_MAX) {
    bytes_[ipv6_at_ + 7] = hops;
  } else {
    bytes_[ipv4_at_ + 8] = hops;
  }
  return *this;
}

PacketBuilder& PacketBuilder::udp(uint16_t dst_port, uint16_t src_port) {
  setNextHeader(17);
  udp_at_ = bytes_.size();
  bytes_.resize(udp_at_ + 8);
  put16(udp_at_, src_port);
  put16(udp_at_ + 2, dst_port);
  return *this;
}

PacketBuilder& PacketBuilder::tcp(uint16_t dst_port, uint8_t flags, uint16_t src_port) {
  setNextHeader(6);
  size_t at = bytes_.size();
  bytes_.resize(at + 20);
  put16(at, src_port);
  put16(at + 2, dst_port);
  bytes_[at + 12] = 5 << 4;
  bytes_[at + 13] = flags;
  put16(at + 14, 65535);
  tcp_at_ = at;
  return *this;
}

PacketBuilder& PacketBuilder::tcpSeq(uint32_t seq, uint32_t ack) {
  put32(tcp_at_ + 4, seq);
  put32(tcp_at_ + 8, ack);
  return *this;
}

PacketBuilder& PacketBuilder::tcpMss(uint16_t mss) {
  size_t at = bytes_.size();
  bytes_.resize(at + 4);
  bytes_[at] = 2;  // kind MSS, length 4
  bytes_[at + 1] = 4;
  put16(at + 2, mss);
  bytes_[tcp_at_ + 12] = static_cast<uint8_t>(bytes_[tcp_at_ + 12] + (1 << 4));
  return *this;
}

PacketBuilder& PacketBuilder::icmp() {
  return icmp(ipv6_at_ != SIZE_MAX ? 128 : 8);  // echo request
}

PacketBuilder& PacketBuilder::icmp(uint8_t type, uint8_t code) {
  setNextHeader(ipv6_at_ != SIZE_MAX ? 58 : 1);
  size_t at = bytes_.size();
  bytes_.resize(at + 8);
  bytes_[at] = type;
  bytes_[at + 1] = code;
  return *this;
}

PacketBuilder& PacketBuilder::payload(size_t bytes) {
  bytes_.resize(bytes_.size() + bytes, 0xab);
  return *this;
}

std::vector<uint8_t> PacketBuilder::build(size_t length) const {
  PacketBuilder copy = *this;
  std::vector<uint8_t>& out = copy.bytes_;
  if (ipv4_at_ != SIZE_MAX) {
    copy.put16(ipv4_at_ + 2, static_cast<uint16_t>(out.size() - ipv4_at_));
    uint32_t sum = 0;
    copy.put16(ipv4_at_ + 10, 0);
    for (size_t i = 0; i < 20; i += 2) sum += (out[ipv4_at_ + i] << 8) | out[ipv4_at_ + i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    copy.put16(ipv4_at_ + 10, static_cast<uint16_t>(~sum));
  }
  if (ipv6_at_ != SIZE_MAX)
    copy.put16(ipv6_at_ + 4, static_cast<uint16_t>(out.size() - ipv6_at_ - 40));
  if (udp_at_ != SIZE_MAX) copy.put16(udp_at_ + 4, static_cast<uint16_t>(out.size() - udp_at_));
  if (length < out.size()) out.resize(length);
  return out;
}

}  // namespace floodgate::test
