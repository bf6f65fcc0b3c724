// SPDX-License-Identifier: MIT
// Unit tests of common/cidr: parsing addresses and prefixes, masking, formatting.
#include "floodgate/common/cidr.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

namespace floodgate {
namespace {

using Bytes = std::array<uint8_t, 16>;

TEST(ParseCidr, Ipv4NetworkWithPrefix) {
  auto cidr = parseCidr("192.0.2.0/24");
  ASSERT_TRUE(cidr.ok()) << cidr.error().message;
  EXPECT_EQ(cidr->family, Family::kV4);
  EXPECT_EQ(cidr->addr, (Bytes{192, 0, 2, 0}));
  EXPECT_EQ(cidr->prefix, 24);
  EXPECT_EQ(cidr->maxPrefix(), 32);
}

TEST(ParseCidr, BareIpv4AddressIsAHostPrefix) {
  auto cidr = parseCidr("198.51.100.7");
  ASSERT_TRUE(cidr.ok()) << cidr.error().message;
  EXPECT_EQ(cidr->family, Family::kV4);
  EXPECT_EQ(cidr->addr, (Bytes{198, 51, 100, 7}));
  EXPECT_EQ(cidr->prefix, 32);
}

TEST(ParseCidr, Ipv6NetworkWithPrefix) {
  auto cidr = parseCidr("2001:db8::/32");
  ASSERT_TRUE(cidr.ok()) << cidr.error().message;
  EXPECT_EQ(cidr->family, Family::kV6);
  EXPECT_EQ(cidr->addr, (Bytes{0x20, 0x01, 0x0d, 0xb8}));
  EXPECT_EQ(cidr->prefix, 32);
  EXPECT_EQ(cidr->maxPrefix(), 128);
}

TEST(ParseCidr, BareIpv6AddressIsAHostPrefix) {
  auto cidr = parseCidr("2001:db8::1");
  ASSERT_TRUE(cidr.ok()) << cidr.error().message;
  EXPECT_EQ(cidr->family, Family::kV6);
  EXPECT_EQ(cidr->addr, (Bytes{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(cidr->prefix, 128);
}

TEST(ParseCidr, ZeroAndFullPrefixesAreAccepted) {
  auto any4 = parseCidr("0.0.0.0/0");
  ASSERT_TRUE(any4.ok());
  EXPECT_EQ(any4->prefix, 0);
  auto any6 = parseCidr("::/0");
  ASSERT_TRUE(any6.ok());
  EXPECT_EQ(any6->family, Family::kV6);
  EXPECT_EQ(any6->prefix, 0);
  auto host4 = parseCidr("203.0.113.9/32");
  ASSERT_TRUE(host4.ok());
  EXPECT_EQ(host4->prefix, 32);
  auto host6 = parseCidr("2001:db8::9/128");
  ASSERT_TRUE(host6.ok());
  EXPECT_EQ(host6->prefix, 128);
}

TEST(ParseCidr, HostBitsSetIsAUsageErrorThatSuggestsTheNetwork) {
  auto v4 = parseCidr("10.0.0.1/8");
  ASSERT_FALSE(v4.ok());
  EXPECT_EQ(v4.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(v4.error().message, "'10.0.0.1/8' has host bits set; did you mean 10.0.0.0/8?");

  auto v6 = parseCidr("2001:db8::1/32");
  ASSERT_FALSE(v6.ok());
  EXPECT_EQ(v6.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(v6.error().message, "'2001:db8::1/32' has host bits set; did you mean 2001:db8::/32?");

  // A host bit in the middle of a byte: /23 keeps only the top 7 bits of the third byte.
  auto mid = parseCidr("192.0.3.0/23");
  ASSERT_FALSE(mid.ok());
  EXPECT_EQ(mid.error().message, "'192.0.3.0/23' has host bits set; did you mean 192.0.2.0/23?");
}

TEST(ParseCidr, PrefixOutOfRangeNamesTheFamilyLimit) {
  auto v4 = parseCidr("192.0.2.0/33");
  ASSERT_FALSE(v4.ok());
  EXPECT_EQ(v4.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(v4.error().message, "'192.0.2.0/33' has a bad prefix length (expected 0 to 32)");

  auto v6 = parseCidr("2001:db8::/129");
  ASSERT_FALSE(v6.ok());
  EXPECT_EQ(v6.error().message, "'2001:db8::/129' has a bad prefix length (expected 0 to 128)");
}

TEST(ParseCidr, MalformedPrefixesAreRejected) {
  for (const char* text : {"192.0.2.0/", "192.0.2.0/-1", "192.0.2.0/+8", "192.0.2.0/24x",
                           "192.0.2.0/ 24", "192.0.2.0/24/24", "192.0.2.0/99999999999",
                           // A sign or leading zero is a typo, not a /0 or a /24.
                           "0.0.0.0/-0", "192.0.2.0/024", "::/-0", "2001:db8::/032"}) {
    auto cidr = parseCidr(text);
    ASSERT_FALSE(cidr.ok()) << text;
    EXPECT_EQ(cidr.error().kind, ErrorKind::kUsage) << text;
    EXPECT_NE(cidr.error().message.find("bad prefix length"), std::string::npos) << text;
  }
}

TEST(ParseCidr, MalformedAddressesAreRejected) {
  for (const char* text :
       {"", "/24", "300.1.1.1", "300.1.1.1/8", "1.2.3", "1.2.3.4.5", " 192.0.2.1", "192.0.2.1 ",
        "2001:db8:::1", "2001:db8::g", "example.com", "192.0.2.0\\24"}) {
    auto cidr = parseCidr(text);
    ASSERT_FALSE(cidr.ok()) << "'" << text << "'";
    EXPECT_EQ(cidr.error().kind, ErrorKind::kUsage);
    EXPECT_EQ(cidr.error().message,
              "'" + std::string(text) +
                  "' is not a CIDR (expected an address or address/prefix, e.g. 192.0.2.0/24 or "
                  "2001:db8::/32)");
  }
}

TEST(ParseAddress, AnEmbeddedNulDoesNotHideTrailingText) {
  using namespace std::string_view_literals;
  EXPECT_FALSE(parseAddress("192.0.2.1\0garbage"sv).ok());
  EXPECT_FALSE(parseAddress("2001:db8::1\0"sv).ok());
  EXPECT_FALSE(parseCidr("192.0.2.0\0/24"sv).ok());
  EXPECT_FALSE(parseCidr("192.0.2.0/24\0"sv).ok());
}

TEST(ParseAddress, RejectsAPrefix) {
  auto address = parseAddress("192.0.2.0/24");
  ASSERT_FALSE(address.ok());
  EXPECT_EQ(address.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(address.error().message,
            "'192.0.2.0/24' is not an IP address (expected e.g. 192.0.2.1 or 2001:db8::1)");
}

TEST(ParseAddress, ParsesBothFamilies) {
  auto v4 = parseAddress("192.0.2.255");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->family, Family::kV4);
  EXPECT_EQ(v4->addr, (Bytes{192, 0, 2, 255}));
  EXPECT_EQ(v4->prefix, 32);

  auto mapped = parseAddress("::ffff:192.0.2.1");
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(mapped->family, Family::kV6);
  EXPECT_EQ(mapped->addr, (Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1}));
  EXPECT_EQ(mapped->prefix, 128);
}

TEST(MappedIpv4, IsTheIpv4PrefixInsideTheMappedBlockOnly) {
  auto v4 = [](const char* text) { return mappedIpv4(*parseCidr(text)); };
  ASSERT_TRUE(v4("::ffff:192.0.2.1").has_value());
  EXPECT_EQ(v4("::ffff:192.0.2.1")->toString(), "192.0.2.1");
  EXPECT_EQ(v4("::ffff:192.0.2.0/120")->toString(), "192.0.2.0/24");
  EXPECT_EQ(v4("::ffff:0.0.0.0/96")->toString(), "0.0.0.0/0");
  // wider than the block, next to it, or IPv4 already: not a mapped prefix
  EXPECT_FALSE(v4("::fffe:0:0/95").has_value());  // holds the block
  EXPECT_FALSE(v4("::fffe:c000:201").has_value());
  EXPECT_FALSE(v4("1::ffff:c000:201").has_value());
  EXPECT_FALSE(v4("::c000:201").has_value());
  EXPECT_FALSE(v4("192.0.2.1").has_value());
}

TEST(MaskAddress, ClearsEverythingBelowThePrefix) {
  Bytes ones;
  ones.fill(0xff);

  Bytes addr = ones;
  maskAddress(addr, 0);
  EXPECT_EQ(addr, Bytes{});

  addr = ones;
  maskAddress(addr, 1);
  EXPECT_EQ(addr, (Bytes{0x80}));

  addr = ones;
  maskAddress(addr, 12);
  EXPECT_EQ(addr, (Bytes{0xff, 0xf0}));

  addr = ones;
  maskAddress(addr, 32);  // an IPv4 host prefix keeps the 4 address bytes
  EXPECT_EQ(addr, (Bytes{0xff, 0xff, 0xff, 0xff}));

  addr = ones;
  maskAddress(addr, 127);
  Bytes all_but_last_bit = ones;
  all_but_last_bit[15] = 0xfe;
  EXPECT_EQ(addr, all_but_last_bit);

  addr = ones;
  maskAddress(addr, 128);
  EXPECT_EQ(addr, ones);
}

TEST(MaskAddress, KeepsTheBitsAboveThePrefix) {
  Bytes addr{198, 51, 100, 77};  // 77 = 0b0100'1101
  maskAddress(addr, 28);         // keeps the top nibble of the last byte: 0b0100'0000
  EXPECT_EQ(addr, (Bytes{198, 51, 100, 64}));
}

TEST(CidrToString, OmitsTheHostPrefixLength) {
  EXPECT_EQ(parseCidr("192.0.2.0/24")->toString(), "192.0.2.0/24");
  EXPECT_EQ(parseCidr("192.0.2.1")->toString(), "192.0.2.1");
  EXPECT_EQ(parseCidr("192.0.2.1/32")->toString(), "192.0.2.1");
  EXPECT_EQ(parseCidr("0.0.0.0/0")->toString(), "0.0.0.0/0");
  EXPECT_EQ(parseCidr("2001:db8::/32")->toString(), "2001:db8::/32");
  EXPECT_EQ(parseCidr("2001:0db8:0000:0000:0000:0000:0000:0001")->toString(), "2001:db8::1");
  EXPECT_EQ(parseCidr("::/0")->toString(), "::/0");
}

TEST(CidrToString, RoundTripsThroughParseCidr) {
  for (const char* text : {"192.0.2.0/24", "10.0.0.0/8", "203.0.113.77", "0.0.0.0/0",
                           "2001:db8::/32", "2001:db8:1:2::/64", "fe80::1", "::/0"}) {
    auto cidr = parseCidr(text);
    ASSERT_TRUE(cidr.ok()) << text;
    EXPECT_EQ(cidr->toString(), text);
    auto again = parseCidr(cidr->toString());
    ASSERT_TRUE(again.ok()) << text;
    EXPECT_EQ(*again, *cidr) << text;
  }
}

TEST(FormatAddress, FormatsNetworkOrderBytes) {
  const uint8_t v4[4] = {192, 0, 2, 1};
  EXPECT_EQ(formatAddress(Family::kV4, v4), "192.0.2.1");
  const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x2a};
  EXPECT_EQ(formatAddress(Family::kV6, v6), "2001:db8::2a");
}

}  // namespace
}  // namespace floodgate

namespace floodgate {
namespace {

TEST(CidrCovers, APrefixCoversItsAddressesAndLongerPrefixesOfItsFamily) {
  EXPECT_TRUE(covers(*parseCidr("192.0.2.0/24"), *parseCidr("192.0.2.7")));
  EXPECT_TRUE(covers(*parseCidr("192.0.2.0/24"), *parseCidr("192.0.2.128/25")));
  EXPECT_TRUE(covers(*parseCidr("192.0.2.7"), *parseCidr("192.0.2.7")));
  EXPECT_FALSE(covers(*parseCidr("192.0.2.0/25"), *parseCidr("192.0.2.0/24")));
  EXPECT_FALSE(covers(*parseCidr("192.0.2.0/24"), *parseCidr("192.0.3.1")));
  EXPECT_TRUE(covers(*parseCidr("2001:db8::/32"), *parseCidr("2001:db8:1::1")));
  EXPECT_FALSE(covers(*parseCidr("::/0"), *parseCidr("192.0.2.1"))) << "families differ";
}

}  // namespace
}  // namespace floodgate
