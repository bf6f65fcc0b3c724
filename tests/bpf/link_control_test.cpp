// SPDX-License-Identifier: MIT
// Neighbour Discovery and MLD from this link pass every rule (a drained `protocol: icmp` cap
// must not take IPv6 neighbour resolution down), and nothing else a sender makes does.
#include "bpf/xdp_fixture.h"

namespace floodgate::test {
namespace {

constexpr uint8_t kRouterSolicitation = 133, kRouterAdvertisement = 134,
                  kNeighbourSolicitation = 135, kNeighbourAdvertisement = 136, kRedirect = 137;
constexpr uint8_t kMldQuery = 130, kMldReport = 131, kMldDone = 132, kMldv2Report = 143;
constexpr uint8_t kHopByHop = 0, kDestinationOptions = 60;

class LinkControlTest : public XdpProgramTest {
 protected:
  // The rule every operator writes: all ICMP and ICMPv6 together at 1 pps, a burst of 3.
  static RuleSpec pingCap() {
    RuleSpec rule = sourceRule(1, 3);
    rule.name = "ping_cap";
    rule.protocol = Protocol::kIcmp;
    rule.key = KeyKind::kGlobal;
    return rule;
  }

  // Loads the cap and drains it with echo requests from an off-link source.
  void loadDrainedCap(AttachOptions options = {}) {
    load({pingCap()}, std::move(options));
    auto echo = PacketBuilder().eth().ipv6("2001:db8:66::1", "2001:db8::2").icmp().build();
    ASSERT_EQ(passes(echo, 10), 3);
  }

  static std::vector<uint8_t> icmp6(const std::string& src, uint8_t hops, uint8_t type,
                                    uint8_t code = 0) {
    return PacketBuilder().eth().ipv6(src, "ff02::1").hopLimit(hops).icmp(type, code).build();
  }
};

TEST_F(LinkControlTest, NeighbourDiscoveryWithHopLimit255PassesADrainedCap) {
  loadDrainedCap();
  const uint8_t types[] = {kRouterSolicitation, kRouterAdvertisement, kNeighbourSolicitation,
                           kNeighbourAdvertisement, kRedirect};
  for (uint8_t type : types) {
    EXPECT_EQ(run(icmp6("fe80::1", 255, type)), XDP_PASS) << int(type);
    // an NA or NS may come from a global address of the link too: the hop limit decides
    EXPECT_EQ(run(icmp6("2001:db8::1", 255, type)), XDP_PASS) << int(type);
  }
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 10u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 7u);  // the echo flood's only
}

TEST_F(LinkControlTest, NeighbourDiscoveryARouterForwardedIsLimited) {
  loadDrainedCap();
  const uint8_t types[] = {kRouterSolicitation, kRouterAdvertisement, kNeighbourSolicitation,
                           kNeighbourAdvertisement, kRedirect};
  for (uint8_t type : types) {
    for (uint8_t hops : {uint8_t{254}, uint8_t{64}, uint8_t{1}}) {
      EXPECT_EQ(run(icmp6("fe80::1", hops, type)), XDP_DROP) << int(type) << " " << int(hops);
    }
    // a code other than 0 is no NDP message (the kernel drops it): not one to exempt
    EXPECT_EQ(run(icmp6("fe80::1", 255, type, 1)), XDP_DROP) << int(type);
  }
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
}

TEST_F(LinkControlTest, NeighbourDiscoveryBehindAnExtensionHeaderOrFragmentedIsLimited) {
  loadDrainedCap();
  for (uint8_t ext : {kHopByHop, kDestinationOptions}) {
    auto frame = PacketBuilder()
                     .eth()
                     .ipv6("fe80::1", "ff02::1")
                     .hopLimit(255)
                     .ipv6Ext(ext)
                     .icmp(kNeighbourSolicitation)
                     .build();
    EXPECT_EQ(run(frame), XDP_DROP) << int(ext);
  }
  auto first = PacketBuilder()
                   .eth()
                   .ipv6("fe80::1", "ff02::1")
                   .hopLimit(255)
                   .ipv6Fragment(0, true)
                   .icmp(kNeighbourAdvertisement)
                   .build();
  EXPECT_EQ(run(first), XDP_DROP);
  // a later fragment is any protocol's (its fragment policy passes it to the rules)
  auto later = PacketBuilder()
                   .eth()
                   .ipv6("fe80::1", "ff02::1")
                   .hopLimit(255)
                   .ipv6Fragment(1, false)
                   .icmp(kNeighbourAdvertisement)
                   .build();
  EXPECT_EQ(run(later), XDP_DROP);
  // the ICMPv6 header cut short within the frame
  EXPECT_EQ(run(PacketBuilder()
                    .eth()
                    .ipv6("fe80::1", "ff02::1")
                    .hopLimit(255)
                    .icmp(kNeighbourSolicitation)
                    .build(14 + 40 + 2)),
            XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
}

TEST_F(LinkControlTest, MldFromALinkLocalSourceWithHopLimit1PassesADrainedCap) {
  loadDrainedCap();
  for (uint8_t type : {kMldQuery, kMldReport, kMldDone, kMldv2Report}) {
    EXPECT_EQ(run(icmp6("fe80::1", 1, type)), XDP_PASS) << int(type);
    // as sent: behind the hop-by-hop header of its Router Alert
    auto alert = PacketBuilder()
                     .eth()
                     .ipv6("fe80::1", "ff02::16")
                     .hopLimit(1)
                     .ipv6Ext(kHopByHop)
                     .icmp(type)
                     .build();
    EXPECT_EQ(run(alert), XDP_PASS) << int(type);
    EXPECT_EQ(run(icmp6("febf:ffff::1", 1, type)), XDP_PASS) << int(type);  // still fe80::/10
  }
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 12u);
}

TEST_F(LinkControlTest, MldAnyoneCouldSendIsLimited) {
  loadDrainedCap();
  for (uint8_t type : {kMldQuery, kMldReport, kMldDone, kMldv2Report}) {
    EXPECT_EQ(run(icmp6("2001:db8::1", 1, type)), XDP_DROP) << int(type);  // a global source
    EXPECT_EQ(run(icmp6("fec0::1", 1, type)), XDP_DROP) << int(type);      // past fe80::/10
    EXPECT_EQ(run(icmp6("fe80::1", 2, type)), XDP_DROP) << int(type);
    EXPECT_EQ(run(icmp6("fe80::1", 255, type)), XDP_DROP) << int(type);
    auto chain = PacketBuilder()
                     .eth()
                     .ipv6("fe80::1", "ff02::16")
                     .hopLimit(1)
                     .ipv6Ext(kHopByHop)
                     .ipv6Ext(kDestinationOptions)
                     .icmp(type)
                     .build();
    EXPECT_EQ(run(chain), XDP_DROP) << int(type);
    auto not_hop_by_hop = PacketBuilder()
                              .eth()
                              .ipv6("fe80::1", "ff02::16")
                              .hopLimit(1)
                              .ipv6Ext(kDestinationOptions)
                              .icmp(type)
                              .build();
    EXPECT_EQ(run(not_hop_by_hop), XDP_DROP) << int(type);
    auto fragment = PacketBuilder()
                        .eth()
                        .ipv6("fe80::1", "ff02::16")
                        .hopLimit(1)
                        .ipv6Fragment(0, true)
                        .icmp(type)
                        .build();
    EXPECT_EQ(run(fragment), XDP_DROP) << int(type);
  }
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
}

TEST_F(LinkControlTest, EchoAndErrorsStayLimitedFromTheLinkToo) {
  loadDrainedCap();
  const uint8_t types[] = {1, 2, 3, 4, 128, 129};  // unreachable, too big, time, param, echo
  for (uint8_t type : types) {
    for (uint8_t hops : {uint8_t{255}, uint8_t{1}}) {
      EXPECT_EQ(run(icmp6("fe80::1", hops, type)), XDP_DROP) << int(type) << " " << int(hops);
    }
  }
  // ICMPv4 has no such messages: types 133 to 137 with TTL 255 are just ICMP
  for (uint8_t type : {kRouterAdvertisement, kNeighbourSolicitation, uint8_t{9}}) {
    auto v4 = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").hopLimit(255).icmp(type);
    EXPECT_EQ(run(v4.build()), XDP_DROP) << int(type);
  }
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
}

TEST_F(LinkControlTest, AProtocolAnyRulePassesThemToo) {
  load({sourceRule(1, 1)});
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(run(icmp6("fe80::1", 255, kNeighbourSolicitation)), XDP_PASS);
    EXPECT_EQ(run(icmp6("fe80::1", 1, kMldv2Report)), XDP_PASS);
  }
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 10u);
  EXPECT_EQ(passes(udpFrom("fe80::1"), 3), 1);  // the rule still holds the source
}

TEST_F(LinkControlTest, DenyAndBansStillDropThem) {
  AttachOptions options;
  options.deny = std::vector<Cidr>{*parseCidr("fe80::bad/128")};
  loadDrainedCap(options);
  ASSERT_TRUE(limiter().banAdd(*parseCidr("fe80::77/128"), 600'000'000'000ULL).ok());
  for (const char* src : {"fe80::bad", "fe80::77"}) {
    EXPECT_EQ(run(icmp6(src, 255, kNeighbourAdvertisement)), XDP_DROP) << src;
    EXPECT_EQ(run(icmp6(src, 1, kMldv2Report)), XDP_DROP) << src;
  }
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_DENY), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 2u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
  // from a source on neither
  EXPECT_EQ(run(icmp6("fe80::1", 255, kNeighbourAdvertisement)), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 1u);
}

}  // namespace
}  // namespace floodgate::test
