// SPDX-License-Identifier: MIT
// PacketBuilder: frames for tests, layer by layer, with lengths and next-header fields
// filled in by build(): PacketBuilder().eth().ipv4("192.0.2.1", "192.0.2.2").udp(53).build().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace floodgate::test {

class PacketBuilder {
 public:
  // Ethernet header; the ethertype is set by the next layer.
  PacketBuilder& eth();
  // An 802.1Q (0x8100) or 802.1ad (0x88a8) tag.
  PacketBuilder& vlan(uint16_t id, uint16_t tpid = 0x8100);
  // A frame of another ethertype (ARP is 0x0806), with `payload` zero bytes.
  PacketBuilder& ethertype(uint16_t type, size_t payload = 28);

  PacketBuilder& ipv4(const std::string& src, const std::string& dst);
  // IPv4 fragment fields: offset in 8-byte units, more-fragments flag.
  PacketBuilder& ipv4Fragment(uint16_t offset_units, bool more_fragments);
  // The IPv4 don't-fragment flag, as most senders set it (path MTU discovery).
  PacketBuilder& ipv4DontFragment();
  PacketBuilder& ipv6(const std::string& src, const std::string& dst);
  // IPv6 extension headers: 0 hop-by-hop, 43 routing, 60 destination options, 51 AH,
  // 44 fragment (use ipv6Fragment for that one). AH (51) goes behind IPv4 too.
  PacketBuilder& ipv6Ext(uint8_t type, size_t length_bytes = 8);
  PacketBuilder& ipv6Fragment(uint16_t offset_units, bool more_fragments);
  // The IPv6 hop limit, or the IPv4 TTL (64 unless set).
  PacketBuilder& hopLimit(uint8_t hops);

  PacketBuilder& udp(uint16_t dst_port, uint16_t src_port = 40000);
  // TCP flags byte: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10.
  PacketBuilder& tcp(uint16_t dst_port, uint8_t flags = 0x02, uint16_t src_port = 40000);
  // The last TCP header's sequence and acknowledgment numbers.
  PacketBuilder& tcpSeq(uint32_t seq, uint32_t ack = 0);
  // Appends an MSS option to the last TCP header (before any payload).
  PacketBuilder& tcpMss(uint16_t mss);
  // An echo request (ICMP or ICMPv6 by the IP layer).
  PacketBuilder& icmp();
  // An ICMP or ICMPv6 message of `type` and `code`, 8 bytes with the rest zero.
  PacketBuilder& icmp(uint8_t type, uint8_t code = 0);
  PacketBuilder& payload(size_t bytes);

  // Builds the frame, then cuts it to `length` bytes if given (for truncation tests).
  std::vector<uint8_t> build(size_t length = SIZE_MAX) const;

 private:
  void setNextHeader(uint8_t protocol);
  void put16(size_t at, uint16_t value);
  void put32(size_t at, uint32_t value);

  std::vector<uint8_t> bytes_;
  size_t ethertype_at_ = SIZE_MAX;    // where the next ethertype goes
  size_t next_header_at_ = SIZE_MAX;  // where the next IP protocol number goes
  size_t ipv4_at_ = SIZE_MAX;
  size_t ipv6_at_ = SIZE_MAX;
  size_t udp_at_ = SIZE_MAX;
  size_t tcp_at_ = SIZE_MAX;
};

}  // namespace floodgate::test
