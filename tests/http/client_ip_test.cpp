// SPDX-License-Identifier: MIT
// Client IP through trusted proxies only: forged headers must not choose the key.
#include "floodgate/core/client_ip.h"

#include <gtest/gtest.h>

namespace floodgate::http {
namespace {

TrustedProxies proxies(std::initializer_list<const char*> prefixes) {
  std::vector<IpPrefix> parsed;
  for (const char* p : prefixes) {
    auto prefix = IpPrefix::parse(p);
    EXPECT_TRUE(prefix.has_value()) << p;
    if (prefix) parsed.push_back(*prefix);
  }
  return TrustedProxies(std::move(parsed));
}

TEST(IpPrefix, ContainsByPrefix) {
  auto ten = IpPrefix::parse("10.0.0.0/8");
  ASSERT_TRUE(ten);
  EXPECT_TRUE(ten->contains(*IpAddress::parse("10.255.1.2")));
  EXPECT_FALSE(ten->contains(*IpAddress::parse("11.0.0.1")));
  EXPECT_FALSE(ten->contains(*IpAddress::parse("::ffff:11.0.0.1")));
  EXPECT_TRUE(ten->contains(*IpAddress::parse("::ffff:10.0.0.1")));  // mapped is IPv4
  auto odd = IpPrefix::parse("192.168.4.0/22");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->contains(*IpAddress::parse("192.168.7.255")));
  EXPECT_FALSE(odd->contains(*IpAddress::parse("192.168.8.0")));
  auto v6 = IpPrefix::parse("2001:db8::/32");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->contains(*IpAddress::parse("2001:db8:1::5")));
  EXPECT_FALSE(v6->contains(*IpAddress::parse("2001:db9::5")));
  EXPECT_FALSE(IpPrefix::parse("10.0.0.0/33"));
  EXPECT_FALSE(IpPrefix::parse("10.0.0/8"));
  EXPECT_FALSE(IpPrefix::parse("10.0.0.0/"));
  // A sign or leading zero is a typo in a trusted-proxy list, not a /0 or a /8.
  EXPECT_FALSE(IpPrefix::parse("0.0.0.0/-0"));
  EXPECT_FALSE(IpPrefix::parse("10.0.0.0/08"));
  EXPECT_FALSE(IpPrefix::parse("::/+0"));
  ASSERT_TRUE(IpPrefix::parse("0.0.0.0/0"));
}

TEST(IpAddress, PrintsAsInetNtopDoes) {
  for (const char* text : {"0.0.0.0", "1.2.3.4", "10.0.0.255", "192.168.100.9", "255.255.255.255",
                           "::1", "2001:db8::5", "fe80::1:2"}) {
    auto address = IpAddress::parse(text);
    ASSERT_TRUE(address) << text;
    EXPECT_EQ(address->toString(), text);
  }
  EXPECT_EQ(IpAddress::parse("::ffff:10.0.0.1")->toString(), "10.0.0.1");  // mapped is IPv4
  EXPECT_EQ(clientKey(*IpAddress::parse("203.0.113.7"), 64), "203.0.113.7");
  EXPECT_EQ(clientKey(*IpAddress::parse("2001:db8:1:2:3::4"), 64), "2001:db8:1:2::/64");
}

// The client as text, or "?" when it cannot be told.
std::string client(std::string_view peer, ClientHeader header, std::vector<std::string_view> values,
                   const TrustedProxies& trusted) {
  auto address = clientAddress(peer, header, values, trusted);
  return address ? address->toString() : "?";
}

constexpr ClientHeader kXff = ClientHeader::kXForwardedFor;
constexpr ClientHeader kFwd = ClientHeader::kForwarded;
constexpr ClientHeader kReal = ClientHeader::kXRealIp;

TEST(ClientIp, UntrustedPeerIgnoresEveryHeader) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("203.0.113.9", kXff, {"1.2.3.4"}, trusted), "203.0.113.9");
  EXPECT_EQ(client("203.0.113.9", kFwd, {"for=1.2.3.4"}, trusted), "203.0.113.9");
}

TEST(ClientIp, NoTrustedProxiesMeansThePeer) {
  EXPECT_EQ(client("203.0.113.9", ClientHeader::kNone, {}, TrustedProxies()), "203.0.113.9");
}

TEST(ClientIp, WalksRightToLeftPastTrustedHops) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  // The client forged "6.6.6.6"; the first proxy appended the real client 198.51.100.7.
  EXPECT_EQ(client("10.0.0.2", kXff, {"6.6.6.6, 198.51.100.7, 10.0.0.1"}, trusted), "198.51.100.7");
}

TEST(ClientIp, ForgedHeaderFromAClientBehindOneProxyDoesNotChooseTheKey) {
  TrustedProxies trusted = proxies({"10.0.0.1"});
  EXPECT_EQ(client("10.0.0.1", kXff, {"127.0.0.1, 203.0.113.50"}, trusted), "203.0.113.50");
}

TEST(ClientIp, SeveralHeaderLinesAreOneList) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("10.0.0.2", kXff, {"6.6.6.6", "198.51.100.7, 10.1.1.1"}, trusted),
            "198.51.100.7");
}

TEST(ClientIp, ATrustedProxyIsNeverTheClient) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("10.0.0.2", kXff, {"10.9.9.9, 10.0.0.1"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kXff, {}, trusted), "?");  // a proxy that named nobody
}

TEST(ClientIp, AHopThatIsNotAnAddressLeavesTheClientUnknown) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("10.0.0.2", kXff, {"1.2.3.4, not-an-ip, 10.0.0.1"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kXff, {"1.2.3.4, unknown"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kFwd, {"for=1.2.3.4, for=_hidden, for=10.0.0.3"}, trusted), "?");
  EXPECT_EQ(client("a-unix-socket", kXff, {"1.2.3.4"}, trusted), "?");
}

TEST(ClientIp, ForwardedHeaderWithQuotesPortsAndIpv6) {
  TrustedProxies trusted = proxies({"10.0.0.0/8", "2001:db8:ffff::/48"});
  EXPECT_EQ(client("10.0.0.2", kFwd, {R"(for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https)"},
                   trusted),
            "2001:db8:cafe::17");
  EXPECT_EQ(client("10.0.0.2", kFwd, {"For=\"192.0.2.43:47011\";by=10.0.0.2"}, trusted),
            "192.0.2.43");
  EXPECT_EQ(client("10.0.0.2", kFwd, {"proto=https;for=198.51.100.1, for=10.0.0.5"}, trusted),
            "198.51.100.1");
}

TEST(ClientIp, XRealIpHoldsOneAddressOrNothingIsBelieved) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("10.0.0.2", kReal, {"198.51.100.9"}, trusted), "198.51.100.9");
  // a client's own line beside the proxy's, or a list: which is whose cannot be told
  EXPECT_EQ(client("10.0.0.2", kReal, {"6.6.6.6", "198.51.100.9"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kReal, {"6.6.6.6, 198.51.100.9"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kReal, {"10.0.0.7"}, trusted), "?");
}

// nginx ($proxy_add_x_forwarded_for), Envoy and cloud balancers append the peer to the
// client's own header on the same line: a quote or bracket the client put there must not
// swallow or disguise what the proxy appended.
TEST(ClientIp, QuotesAndBracketsTheClientSentCannotHideTheProxysHop) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("10.0.0.2", kXff, {R"([198.51.100.7]", 203.0.113.5)"}, trusted), "203.0.113.5");
  EXPECT_EQ(client("10.0.0.2", kXff, {R"(", 203.0.113.5)"}, trusted), "203.0.113.5");
  EXPECT_EQ(client("10.0.0.2", kXff, {"[198.51.100.7]x"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kXff, {"198.51.100.7:"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kXff, {"198.51.100.7:8o"}, trusted), "?");
  EXPECT_EQ(client("10.0.0.2", kXff, {"[198.51.100.7]:80, 203.0.113.5:443"}, trusted),
            "203.0.113.5");
  // nginx: proxy_set_header Forwarded "$http_forwarded, for=$remote_addr"
  EXPECT_EQ(client("10.0.0.2", kFwd, {R"(for=198.51.100.7;x=", for=203.0.113.5)"}, trusted),
            "203.0.113.5");
  EXPECT_EQ(client("10.0.0.2", kFwd, {R"(for="198.51.100.7, for=203.0.113.5)"}, trusted),
            "203.0.113.5");
  EXPECT_EQ(
      client("10.0.0.2", kFwd, {R"(for="[2001:db8::7]:1";a=b, for="[2001:db8::9]")"}, trusted),
      "2001:db8::9");
}

TEST(ClientIp, PeerWithPortAndMappedAddressesAreNormalised) {
  TrustedProxies trusted = proxies({"10.0.0.0/8"});
  EXPECT_EQ(client("::ffff:203.0.113.9", kXff, {}, trusted), "203.0.113.9");
  EXPECT_EQ(client("10.0.0.2", kXff, {"[2001:db8::1]:8080"}, trusted), "2001:db8::1");
  EXPECT_EQ(client("10.0.0.2", kXff, {"198.51.100.3:5555"}, trusted), "198.51.100.3");
}

// A server's socket names a link-local peer with the zone of its own interface: such a
// client is its address (keyed by its /64 as any IPv6 client: a host of the link chooses
// its addresses), not "unknown". A zoned peer is never a trusted proxy: the same address is
// another host on each link, so it is the client, whatever it sends.
TEST(ClientIp, ALinkLocalPeerIsItsAddressAndNeverATrustedProxy) {
  EXPECT_EQ(client("fe80::1%eth0", kXff, {}, TrustedProxies()), "fe80::1");
  EXPECT_EQ(client("[fe80::3%2]:4433", kXff, {}, TrustedProxies()), "fe80::3");
  EXPECT_EQ(clientKey(*peerAddress("fe80::1%eth0"), 64), "fe80::/64");
  TrustedProxies trusted = proxies({"fe80::/64"});
  EXPECT_EQ(client("fe80::9%eth0", kXff, {"198.51.100.7"}, trusted), "fe80::9");
  EXPECT_FALSE(trustedPeer("fe80::9%eth1", trusted));
  EXPECT_TRUE(trustedPeer("fe80::9", trusted)) << "a peer named without a zone is as written";
  EXPECT_FALSE(peerAddress("192.0.2.1%eth0").has_value()) << "IPv4 has no zones";
  EXPECT_FALSE(peerAddress("%eth0").has_value());
}

TEST(ClientIp, HeaderNamesParseAsTheConfigSpellsThem) {
  EXPECT_EQ(parseClientHeader("x-forwarded-for"), kXff);
  EXPECT_EQ(parseClientHeader("X-Real-IP"), kReal);
  EXPECT_EQ(parseClientHeader("forwarded"), kFwd);
  EXPECT_EQ(parseClientHeader("none"), ClientHeader::kNone);
  EXPECT_FALSE(parseClientHeader("true-client-ip"));
}

TEST(ClientKey, Ipv6ClientsAreKeyedByTheirPrefix) {
  auto a = *IpAddress::parse("2001:db8:1:2:aaaa::1");
  auto b = *IpAddress::parse("2001:db8:1:2:ffff::9");
  EXPECT_EQ(clientKey(a, 64), "2001:db8:1:2::/64");
  EXPECT_EQ(clientKey(a, 64), clientKey(b, 64));
  EXPECT_EQ(clientKey(a, 128), "2001:db8:1:2:aaaa::1");
  EXPECT_EQ(clientKey(a, 48), "2001:db8:1::/48");
  EXPECT_EQ(clientKey(*IpAddress::parse("2001:db8:1:2:aaaa::1"), 60), "2001:db8:1::/60");
  EXPECT_EQ(clientKey(*IpAddress::parse("198.51.100.7"), 64), "198.51.100.7");
}

// Behind a NAT46 translator every IPv4 client is an address of 64:ff9b::/96, all in one /64:
// each is keyed (and reported, and banned) by its whole address, never by that /64.
TEST(ClientKey, Nat64AddressesAreKeyedByTheWholeAddress) {
  auto a = *IpAddress::parse("64:ff9b::198.51.100.7");
  auto b = *IpAddress::parse("64:ff9b::198.51.100.8");
  EXPECT_FALSE(a.v4);
  EXPECT_EQ(clientKey(a, 64), a.toString());
  EXPECT_NE(clientKey(a, 64), clientKey(b, 64));
  EXPECT_EQ(keyPrefixLength(a, 24, 64), 120);
  EXPECT_EQ(IpPrefix::of(a, 120).toString(), IpPrefix::of(b, 120).toString());
  // only the well-known prefix: a neighbour of it is an IPv6 client as any other
  EXPECT_EQ(clientKey(*IpAddress::parse("64:ff9b:1::1"), 64), "64:ff9b:1::/64");
}

}  // namespace
}  // namespace floodgate::http
