// SPDX-License-Identifier: MIT
// Unit tests of `floodgate flood`'s template frames and of the source rotation the BPF
// generator runs (the same C code, run here on the host): checksums checked from scratch.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "flood/frame_builder.h"
#include "flood_rewrite.h"

namespace floodgate::flood {
namespace {

// An independent checksum: big-endian 16-bit words summed in 32 bits, folded.
uint32_t sumBigEndian(const uint8_t* bytes, size_t length) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < length; i += 2) sum += (uint32_t{bytes[i]} << 8) | bytes[i + 1];
  if (length % 2) sum += uint32_t{bytes[length - 1]} << 8;
  return sum;
}

uint16_t foldSum(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

uint16_t get16(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint16_t>((f[at] << 8) | f[at + 1]);
}

// True when every checksum of the frame verifies (a correct sum folds to 0xffff).
void expectChecksumsValid(const std::vector<uint8_t>& f) {
  const bool v4 = get16(f, 12) == 0x0800;
  const size_t l3 = 14, l4 = v4 ? 34 : 54;
  const uint8_t proto = v4 ? f[l3 + 9] : f[l3 + 6];
  const size_t l4_length = f.size() - l4;
  if (v4) {
    EXPECT_EQ(foldSum(sumBigEndian(&f[l3], 20)), 0xffff) << "IPv4 header checksum";
    EXPECT_EQ(get16(f, l3 + 2), f.size() - l3) << "IPv4 total length";
  } else {
    EXPECT_EQ(get16(f, l3 + 4), l4_length) << "IPv6 payload length";
  }
  uint64_t sum = sumBigEndian(&f[l4], l4_length);
  if (!(v4 && proto == 1)) {  // every L4 checksum but ICMPv4's covers a pseudo header
    const size_t addresses = v4 ? l3 + 12 : l3 + 8;
    sum += sumBigEndian(&f[addresses], v4 ? 8 : 32);
    sum += proto + l4_length;
  }
  EXPECT_EQ(foldSum(sum), 0xffff) << "L4 checksum of protocol " << int{proto};
  if (proto == 17) {
    EXPECT_EQ(get16(f, l4 + 4), l4_length) << "UDP length";
    EXPECT_NE(get16(f, l4 + 6), 0) << "a UDP checksum of 0 means none";
  }
}

FrameSpec spec(const std::string& src, const std::string& dst, Protocol protocol,
               uint32_t sources = 1) {
  FrameSpec out;
  out.source = *parseAddress(src);
  out.destination = *parseAddress(dst);
  out.protocol = protocol;
  out.sources = sources;
  out.src_mac = {0x02, 0, 0, 0, 0, 1};
  out.dst_mac = {0x02, 0, 0, 0, 0, 2};
  return out;
}

// The source written into a copy of the frame for `index`, as text.
std::string sourceAfterRewrite(const FrameTemplate& t, std::vector<uint8_t>& frame,
                               uint32_t index) {
  EXPECT_EQ(fl_rewrite(&t.settings, index, frame.data(), frame.data() + frame.size()), 0);
  const bool v4 = t.settings.family == FL_FAMILY_IPV4;
  return formatAddress(v4 ? Family::kV4 : Family::kV6,
                       &frame[v4 ? FL_IPV4_SRC_OFFSET : FL_IPV6_SRC_OFFSET]);
}

struct Case {
  const char* src;
  const char* dst;
  Protocol protocol;
  uint32_t size;
};

class EveryFrameKind : public ::testing::TestWithParam<Case> {};

TEST_P(EveryFrameKind, ChecksumsHoldForTheTemplateAndEveryRotatedSource) {
  const Case& c = GetParam();
  FrameSpec s = spec(c.src, c.dst, c.protocol, 100000);
  s.frame_bytes = c.size;
  auto t = buildFrame(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  if (c.size) {
    EXPECT_EQ(t->frame.size(), c.size);
  }
  EXPECT_GE(t->frame.size(), 60u);
  expectChecksumsValid(t->frame);
  // live-frame pages keep the previous rewrite: each index starts from another's frame
  std::vector<uint8_t> frame = t->frame;
  for (uint32_t index : {1u, 255u, 256u, 65535u, 99999u, 7u, 0u}) {
    SCOPED_TRACE("index " + std::to_string(index));
    sourceAfterRewrite(*t, frame, index);
    expectChecksumsValid(frame);
  }
  // rewriting index 0 gives the template back, byte for byte
  EXPECT_EQ(frame, t->frame);
}

INSTANTIATE_TEST_SUITE_P(
    Flood, EveryFrameKind,
    ::testing::Values(Case{"198.18.100.1", "198.18.0.1", Protocol::kUdp, 0},
                      Case{"198.18.100.1", "198.18.0.1", Protocol::kTcpSyn, 0},
                      Case{"198.18.100.1", "198.18.0.1", Protocol::kIcmp, 0},
                      Case{"198.18.100.1", "198.18.0.1", Protocol::kUdp, 1514},
                      Case{"198.18.100.1", "198.18.0.1", Protocol::kTcpSyn, 99},
                      Case{"2001:db8:100::1", "2001:db8::1", Protocol::kUdp, 0},
                      Case{"2001:db8:100::1", "2001:db8::1", Protocol::kTcpSyn, 0},
                      Case{"2001:db8:100::1", "2001:db8::1", Protocol::kIcmp, 0},
                      Case{"2001:db8:100::1", "2001:db8::1", Protocol::kUdp, 1001}));

TEST(FloodFrame, Ipv4UdpLayout) {
  auto t = buildFrame(spec("198.18.100.1", "198.18.0.1", Protocol::kUdp));
  ASSERT_TRUE(t.ok()) << t.error().message;
  const std::vector<uint8_t>& f = t->frame;
  ASSERT_EQ(f.size(), 60u);
  EXPECT_EQ(f[0], 0x02);  // destination MAC first
  EXPECT_EQ(f[11], 0x01);
  EXPECT_EQ(get16(f, 12), 0x0800);
  EXPECT_EQ(f[14], 0x45);
  EXPECT_EQ(f[23], 17);
  EXPECT_EQ(formatAddress(Family::kV4, &f[26]), "198.18.100.1");
  EXPECT_EQ(formatAddress(Family::kV4, &f[30]), "198.18.0.1");
  EXPECT_EQ(get16(f, 34), 40000);
  EXPECT_EQ(get16(f, 36), 9);
}

TEST(FloodFrame, TcpSynAndIcmpEchoHeaders) {
  auto syn = buildFrame(spec("198.18.100.1", "198.18.0.1", Protocol::kTcpSyn));
  ASSERT_TRUE(syn.ok());
  EXPECT_EQ(syn->frame[23], 6);
  EXPECT_EQ(syn->frame[34 + 13], 0x02) << "SYN alone";
  EXPECT_EQ(syn->frame[34 + 12], 0x50) << "a 20-byte header";
  auto syn6 = buildFrame(spec("2001:db8:100::1", "2001:db8::1", Protocol::kTcpSyn));
  ASSERT_TRUE(syn6.ok());
  EXPECT_EQ(syn6->frame.size(), 74u) << "IPv6 + TCP is longer than Ethernet's minimum";
  auto echo = buildFrame(spec("198.18.100.1", "198.18.0.1", Protocol::kIcmp));
  ASSERT_TRUE(echo.ok());
  EXPECT_EQ(echo->frame[23], 1);
  EXPECT_EQ(echo->frame[34], 8) << "echo request";
  auto echo6 = buildFrame(spec("2001:db8:100::1", "2001:db8::1", Protocol::kIcmp));
  ASSERT_TRUE(echo6.ok());
  EXPECT_EQ(echo6->frame[20], 58);
  EXPECT_EQ(echo6->frame[54], 128) << "ICMPv6 echo request";
}

TEST(FloodRotation, Ipv4CountsUpAcrossOctets) {
  auto t = buildFrame(spec("198.18.100.250", "198.18.0.1", Protocol::kUdp, 1000));
  ASSERT_TRUE(t.ok());
  std::vector<uint8_t> frame = t->frame;
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 0), "198.18.100.250");
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 5), "198.18.100.255");
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 6), "198.18.101.0");
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 999), "198.18.104.225");
}

TEST(FloodRotation, Ipv6InsideOneSlash64) {
  auto t = buildFrame(spec("2001:db8:100::1", "2001:db8::1", Protocol::kUdp, 70000));
  ASSERT_TRUE(t.ok());
  std::vector<uint8_t> frame = t->frame;
  std::set<std::string> sources;
  for (uint32_t index : {0u, 1u, 65535u, 65536u, 69999u}) {
    std::string source = sourceAfterRewrite(*t, frame, index);
    sources.insert(source);
    EXPECT_EQ(std::memcmp(&frame[FL_IPV6_SRC_OFFSET], t->frame.data() + FL_IPV6_SRC_OFFSET, 8), 0)
        << source << " left the base /64";
  }
  EXPECT_EQ(sources.size(), 5u);
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 65536), "2001:db8:100::1:1");
}

TEST(FloodRotation, Ipv6AcrossSlash64s) {
  FrameSpec s = spec("2001:db8:100::1", "2001:db8::1", Protocol::kUdp, 70000);
  s.across_64s = true;
  auto t = buildFrame(s);
  ASSERT_TRUE(t.ok());
  std::vector<uint8_t> frame = t->frame;
  std::set<std::string> prefixes;
  for (uint32_t index : {0u, 1u, 65535u, 65536u, 69999u}) {
    sourceAfterRewrite(*t, frame, index);
    prefixes.insert(
        std::string(frame.begin() + FL_IPV6_SRC_OFFSET, frame.begin() + FL_IPV6_SRC_OFFSET + 8));
    EXPECT_EQ(
        std::memcmp(&frame[FL_IPV6_SRC_OFFSET + 8], t->frame.data() + FL_IPV6_SRC_OFFSET + 8, 8), 0)
        << "the interface id stays";
  }
  EXPECT_EQ(prefixes.size(), 5u) << "each source in a /64 of its own";
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 1), "2001:db8:100:1::1");
  EXPECT_EQ(sourceAfterRewrite(*t, frame, 65536), "2001:db8:101::1");
}

TEST(FloodFrame, BadSpecsAreUsageErrorsThatSayWhatFits) {
  auto mixed = buildFrame(spec("198.18.100.1", "2001:db8::1", Protocol::kUdp));
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().kind, ErrorKind::kUsage);
  EXPECT_NE(mixed.error().message.find("different IP versions"), std::string::npos);

  FrameSpec small = spec("2001:db8:100::1", "2001:db8::1", Protocol::kTcpSyn);
  small.frame_bytes = 60;
  auto too_small = buildFrame(small);
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.error().message.find("74 to 1514"), std::string::npos)
      << too_small.error().message;

  FrameSpec big = spec("198.18.100.1", "198.18.0.1", Protocol::kUdp);
  big.frame_bytes = 9000;
  EXPECT_FALSE(buildFrame(big).ok());

  FrameSpec v4_spread = spec("198.18.100.1", "198.18.0.1", Protocol::kUdp);
  v4_spread.across_64s = true;
  auto spread = buildFrame(v4_spread);
  ASSERT_FALSE(spread.ok());
  EXPECT_NE(spread.error().message.find("--across-64s"), std::string::npos);

  auto overflow = buildFrame(spec("255.255.255.0", "198.18.0.1", Protocol::kUdp, 1000));
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().message.find("255.255.255.255"), std::string::npos);

  EXPECT_FALSE(buildFrame(spec("198.18.100.1", "198.18.0.1", Protocol::kUdp, 0)).ok());
}

TEST(FloodFrame, ParsesProtocolsAndMacs) {
  EXPECT_EQ(*parseProtocol("tcp-syn"), Protocol::kTcpSyn);
  EXPECT_EQ(*parseProtocol("icmp"), Protocol::kIcmp);
  EXPECT_FALSE(parseProtocol("sctp").ok());
  auto mac = parseMac("02:00:5e:10:00:ff");
  ASSERT_TRUE(mac.ok());
  EXPECT_EQ(formatMac(*mac), "02:00:5e:10:00:ff");
  EXPECT_FALSE(parseMac("02:00:5e:10:00").ok());
  EXPECT_FALSE(parseMac("02:00:5e:10:00:ff:11").ok());
}

}  // namespace
}  // namespace floodgate::flood
