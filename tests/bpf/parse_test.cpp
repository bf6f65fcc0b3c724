// SPDX-License-Identifier: MIT
// The XDP parser through the real program: which frames are IP, which are malformed, and
// that VLAN tags, IPv6 extension headers and fragments still find the source.
#include "bpf/xdp_fixture.h"

namespace floodgate::test {
namespace {

constexpr uint16_t kArp = 0x0806;

class ParseTest : public XdpProgramTest {};

TEST_F(ParseTest, NonIpPassesAndIsCounted) {
  load({sourceRule(1, 1)});
  auto arp = PacketBuilder().eth().ethertype(kArp).build();
  EXPECT_EQ(passes(arp, 5), 5);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_NON_IP), 5u);
}

TEST_F(ParseTest, PlainIpv4UdpIsLimitedBySource) {
  load({sourceRule(1, 2)});
  auto frame = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(53).payload(32).build();
  EXPECT_EQ(passes(frame, 5), 2);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_DEFAULT), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 3u);
}

TEST_F(ParseTest, TruncatedAndBogusIpv4HeadersAreMalformedAndDroppedByDefault) {
  load({sourceRule(1, 100)});
  auto good = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(53).payload(8);
  std::vector<std::vector<uint8_t>> bad = {
      good.build(14 + 10),      // IPv4 header cut short
      good.build(14 + 20 + 4),  // UDP header cut short (total length now lies too)
  };
  auto wrong_ihl = good.build();
  wrong_ihl[14] = 0x43;  // IHL 3
  bad.push_back(wrong_ihl);
  auto wrong_version = good.build();
  wrong_version[14] = 0x55;
  bad.push_back(wrong_version);
  auto long_total = good.build();
  long_total[16] = 0x05;  // total length 1280+ > frame
  bad.push_back(long_total);
  for (const auto& frame : bad) EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), bad.size());
}

TEST_F(ParseTest, MalformedPolicyPassPassesThem) {
  AttachOptions options;
  options.malformed = FramePolicy::kPass;
  load({sourceRule(1, 100)}, options);
  auto cut = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(53).build(14 + 12);
  EXPECT_EQ(run(cut), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 1u);
  auto tcp_cut =
      PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").tcp(80).build(14 + 20 + 12);
  EXPECT_EQ(run(tcp_cut), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 2u);
}

TEST_F(ParseTest, VlanAndQinQFramesAreLimitedByTheirSource) {
  load({sourceRule(1, 2)});
  auto tagged = PacketBuilder().eth().vlan(10).ipv4("192.0.2.7", "198.51.100.1").udp(53).build();
  auto qinq = PacketBuilder()
                  .eth()
                  .vlan(100, 0x88a8)
                  .vlan(10)
                  .ipv4("192.0.2.7", "198.51.100.1")
                  .udp(53)
                  .build();
  EXPECT_EQ(run(tagged), XDP_PASS);
  EXPECT_EQ(run(qinq), XDP_PASS);
  // same source, so the bucket of 2 is now empty whichever encapsulation comes next
  EXPECT_EQ(run(qinq), XDP_DROP);
  EXPECT_EQ(run(tagged), XDP_DROP);
}

TEST_F(ParseTest, ThreeVlanTagsAreMalformed) {
  load({sourceRule(1, 2)});
  auto triple = PacketBuilder()
                    .eth()
                    .vlan(1, 0x88a8)
                    .vlan(2)
                    .vlan(3)
                    .ipv4("192.0.2.7", "198.51.100.1")
                    .udp(53)
                    .build();
  EXPECT_EQ(run(triple), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 1u);
}

TEST_F(ParseTest, Ipv4NonFirstFragmentsCarryNoPortsButKeepTheirSource) {
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  load({udp53, sourceRule(1, 3)});
  auto first = PacketBuilder()
                   .eth()
                   .ipv4("192.0.2.9", "198.51.100.1")
                   .ipv4Fragment(0, true)
                   .udp(53)
                   .payload(64)
                   .build();
  auto later = PacketBuilder()
                   .eth()
                   .ipv4("192.0.2.9", "198.51.100.1")
                   .ipv4Fragment(9, false)
                   .payload(64)
                   .build();
  EXPECT_EQ(run(first), XDP_PASS);  // both rules charged
  // the UDP rule cannot match a fragment without ports; the per-source rule still does
  EXPECT_EQ(run(later), XDP_PASS);
  EXPECT_EQ(run(later), XDP_PASS);
  EXPECT_EQ(run(later), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_FRAGMENT), 2u);
}

TEST_F(ParseTest, FragmentPolicyDropDropsNonFirstFragments) {
  AttachOptions options;
  options.fragments = FramePolicy::kDrop;
  load({sourceRule(1, 100)}, options);
  auto later = PacketBuilder()
                   .eth()
                   .ipv4("192.0.2.9", "198.51.100.1")
                   .ipv4Fragment(9, false)
                   .payload(64)
                   .build();
  auto first =
      PacketBuilder().eth().ipv4("192.0.2.9", "198.51.100.1").ipv4Fragment(0, true).udp(53).build();
  EXPECT_EQ(run(later), XDP_DROP);
  EXPECT_EQ(run(first), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_FRAGMENT), 1u);
}

TEST_F(ParseTest, Ipv6ExtensionHeadersAreWalkedToTheTransportHeader) {
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  load({udp53});
  auto chain = PacketBuilder()
                   .eth()
                   .ipv6("2001:db8::1", "2001:db8::2")
                   .ipv6Ext(0)       // hop-by-hop
                   .ipv6Ext(60, 16)  // destination options
                   .ipv6Ext(43, 24)  // routing
                   .ipv6Fragment(0, true)
                   .ipv6Ext(51, 24)  // AH
                   .ipv6Ext(60)
                   .udp(53)
                   .build();
  auto other_port =
      PacketBuilder().eth().ipv6("2001:db8::1", "2001:db8::2").ipv6Ext(0).udp(54).build();
  EXPECT_EQ(run(chain), XDP_PASS);
  EXPECT_EQ(run(chain), XDP_DROP);  // the rule saw UDP port 53 behind six headers
  EXPECT_EQ(run(other_port), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 1u);
}

TEST_F(ParseTest, Ipv4AuthenticationHeadersAreWalkedToTheTransportHeader) {
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  RuleSpec syn = sourceRule(1, 1);
  syn.protocol = Protocol::kTcp;
  syn.tcp_flags_set = 0x02;
  load({udp53, syn});
  auto under_ah = [](const std::string& src) {
    return PacketBuilder().eth().ipv4(src, "198.51.100.1").ipv6Ext(51, 24);
  };
  auto dns = under_ah("192.0.2.1").udp(53).build();
  EXPECT_EQ(run(dns), XDP_PASS);
  EXPECT_EQ(run(dns), XDP_DROP);  // the UDP rule saw port 53 behind AH
  EXPECT_EQ(run(under_ah("192.0.2.1").udp(54).build()), XDP_PASS);
  auto syns = under_ah("192.0.2.2").tcp(80, 0x02).build();
  EXPECT_EQ(run(syns), XDP_PASS);
  EXPECT_EQ(run(syns), XDP_DROP);  // and the SYN rule its flags
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 0u);
}

TEST_F(ParseTest, Ipv4AuthenticationHeadersThatLieAboutTheirLengthAreMalformed) {
  load({sourceRule(100, 100)});
  // AH claiming 1028 bytes in a datagram of 24 after the IP header
  auto long_ah =
      PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").ipv6Ext(51, 16).udp(53).build();
  long_ah[14 + 20 + 1] = 255;
  // AH whose length leaves the UDP header cut short within the IP length
  auto cut_udp =
      PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").ipv6Ext(51, 16).udp(53).build();
  cut_udp[14 + 20 + 1] = 3;  // 20 bytes of AH: 4 of the UDP header's 8 left
  // the IP length ends inside AH's first two bytes
  auto one_byte = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").ipv6Ext(51, 16).build();
  one_byte[14 + 2] = 0;
  one_byte[14 + 3] = 21;
  for (const auto& frame : {long_ah, cut_udp, one_byte}) EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 3u);
}

// AH behind IPv4 options is found where the options end, and walked as without them.
TEST_F(ParseTest, Ipv4AuthenticationHeadersBehindOptionsAreWalked) {
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  load({udp53});
  auto dns =
      PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").ipv6Ext(51, 16).udp(53).build();
  dns.insert(dns.begin() + 14 + 20, 8, 0x01);  // eight NOPs of options
  dns[14] = 0x47;
  dns[14 + 3] = static_cast<uint8_t>(dns[14 + 3] + 8);
  EXPECT_EQ(run(dns), XDP_PASS);
  EXPECT_EQ(run(dns), XDP_DROP);  // the UDP rule saw port 53 behind options and AH
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 1u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 0u);
}

// One AH is walked; a second behind it ends the parse there, as ESP does: the packet meets
// the rules without a protocol, and no port rule.
TEST_F(ParseTest, ASecondIpv4AuthenticationHeaderEndsTheParse) {
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  load({udp53, sourceRule(1, 3)});
  auto twice = PacketBuilder()
                   .eth()
                   .ipv4("192.0.2.1", "198.51.100.1")
                   .ipv6Ext(51, 16)
                   .ipv6Ext(51, 16)
                   .udp(53)
                   .build();
  EXPECT_EQ(passes(twice, 5), 3);  // the per-source rule's burst, not the UDP rule's one
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 0u);
}

// An AH that ends exactly where the datagram does is whole: with no next header it is not
// malformed; naming UDP, whose header is then missing, it is.
TEST_F(ParseTest, AnIpv4AuthenticationHeaderEndingTheDatagramIsWhole) {
  load({sourceRule(100, 100)});
  auto ends = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").ipv6Ext(51, 16).build();
  EXPECT_EQ(run(ends), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 0u);
  ends[14 + 20] = 17;  // UDP
  EXPECT_EQ(run(ends), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 1u);
}

// A chain of `headers` destination-options headers in front of UDP port 53 from `src`.
std::vector<uint8_t> longChainFrom(const std::string& src, int headers) {
  PacketBuilder frame = PacketBuilder().eth().ipv6(src, "2001:db8::2");
  for (int i = 0; i < headers; ++i) frame.ipv6Ext(60);
  return frame.udp(53).build();
}

TEST_F(ParseTest, Ipv6ChainsOfSixteenHeadersAreWalkedToThePorts) {
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  load({udp53});
  auto sixteen = longChainFrom("2001:db8::1", 16);
  EXPECT_EQ(run(sixteen), XDP_PASS);
  EXPECT_EQ(run(sixteen), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 1u);
}

TEST_F(ParseTest, Ipv6ChainsBeyondSixteenHeadersAreDroppedByDefault) {
  load({sourceRule(1, 100)});
  EXPECT_EQ(run(longChainFrom("2001:db8::1", 17)), XDP_DROP);
  auto mobility = PacketBuilder().eth().ipv6("2001:db8::1", "2001:db8::2").ipv6Ext(135).build();
  EXPECT_EQ(run(mobility), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 2u);
}

TEST_F(ParseTest, PassedUnknownChainsStillMeetTheRulesThatNeedNoPorts) {
  AttachOptions options;
  options.unknown_ext = FramePolicy::kPass;
  RuleSpec udp53 = sourceRule(1, 1);
  udp53.protocol = Protocol::kUdp;
  udp53.dst_ports = {{53, 53}};
  load({udp53, sourceRule(1, 3)}, options);
  auto hidden = longChainFrom("2001:db8::1", 17);
  // the port rule cannot see port 53 behind the chain; the per-source rule still counts
  EXPECT_EQ(passes(hidden, 5), 3);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 3u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
}

// A chain the parser gives up on may hide a Fragment header behind it, which the stack
// reassembles: `fragments: drop` is not walked around by `unknown_ipv6_ext: pass`.
TEST_F(ParseTest, AChainTooLongToFollowFollowsTheStricterOfItsPolicyAndTheFragments) {
  AttachOptions options;
  options.unknown_ext = FramePolicy::kPass;
  options.fragments = FramePolicy::kDrop;
  load({sourceRule(1000, 1000)}, options);
  PacketBuilder hidden = PacketBuilder().eth().ipv6("2001:db8::8", "2001:db8::2");
  for (int i = 0; i < 16; ++i) hidden.ipv6Ext(60);
  EXPECT_EQ(run(hidden.ipv6Fragment(100, false).payload(16).build()), XDP_DROP);
  EXPECT_EQ(run(longChainFrom("2001:db8::8", 17)), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 2u);
  // (with fragments passed, the chain's own policy decides: the tests above)
}

// A chain the parser gives up on hides its protocol: a rule on a protocol counts it, as it
// counts an IPv6 fragment, so a TCP flood behind 17 headers does not walk around it.
TEST_F(ParseTest, PassedUnknownChainsMeetEveryProtocolsRuleWithoutPorts) {
  AttachOptions options;
  options.unknown_ext = FramePolicy::kPass;
  RuleSpec tcp = sourceRule(1, 2);
  tcp.protocol = Protocol::kTcp;
  load({tcp}, options);
  PacketBuilder syn = PacketBuilder().eth().ipv6("2001:db8::7", "2001:db8::2");
  for (int i = 0; i < 17; ++i) syn.ipv6Ext(60);
  auto hidden = syn.tcp(80).build();
  EXPECT_EQ(passes(hidden, 6), 2);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 4u);
}

TEST_F(ParseTest, DenyAndBansJudgeTheSourceWhateverTheFrameHoldsOrLacks) {
  AttachOptions options;
  options.unknown_ext = FramePolicy::kPass;  // every odd frame would pass but for its source
  options.deny = std::vector<Cidr>{*parseCidr("2001:db8:bad::/48"), *parseCidr("192.0.2.66")};
  load({sourceRule(1000, 1000)}, options);
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.77"), 600'000'000'000ULL).ok());
  for (const char* v4 : {"192.0.2.66", "192.0.2.77"}) {
    auto good = PacketBuilder().eth().ipv4(v4, "198.51.100.1").udp(53).payload(8);
    std::vector<std::vector<uint8_t>> odd;
    auto bad_ihl = good.build();
    bad_ihl[14] = 0x43;  // IHL 3
    odd.push_back(bad_ihl);
    auto long_total = good.build();
    long_total[16] = 0x05;  // total length past the frame
    odd.push_back(long_total);
    odd.push_back(good.build(14 + 20));  // cut just after the addresses
    odd.push_back(
        PacketBuilder().eth().ipv4(v4, "198.51.100.1").ipv4Fragment(9, false).payload(16).build());
    for (const auto& frame : odd) EXPECT_EQ(run(frame), XDP_DROP) << v4;
  }
  auto chain = longChainFrom("2001:db8:bad::1", 17);
  EXPECT_EQ(run(chain), XDP_DROP);
  auto cut6 = longChainFrom("2001:db8:bad::1", 2);
  cut6.resize(14 + 40);  // the addresses, and nothing after them
  EXPECT_EQ(run(cut6), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_DENY), 6u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 4u);
  // from a source neither denied nor banned, the same chain passes by its policy
  EXPECT_EQ(run(longChainFrom("2001:db8:900d::1", 17)), XDP_PASS);
}

TEST_F(ParseTest, NonFirstFragmentsKeepTheirProtocolForTheRulesThatNeedNoPorts) {
  RuleSpec udp = sourceRule(1, 2);
  udp.protocol = Protocol::kUdp;
  load({udp});
  auto later = PacketBuilder()
                   .eth()
                   .ipv4("192.0.2.9", "198.51.100.1")
                   .ipv4Fragment(9, false)
                   .udp(53)  // sets the IP protocol; at offset 72 it is payload, not a header
                   .payload(64)
                   .build();
  EXPECT_EQ(passes(later, 4), 2);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  auto later6 = PacketBuilder()
                    .eth()
                    .ipv6("2001:db8::9", "2001:db8::2")
                    .ipv6Fragment(100, false)
                    .udp(53)
                    .payload(64)
                    .build();
  EXPECT_EQ(passes(later6, 4), 2);
  // an IPv6 fragment header's protocol is a claim reassembly ignores: a UDP flood whose
  // bulk claims TCP still meets the UDP rule
  auto claims_tcp = PacketBuilder()
                        .eth()
                        .ipv6("2001:db8:1::10", "2001:db8::2")  // a /64 of its own
                        .ipv6Fragment(100, false)
                        .tcp(80)
                        .payload(64)
                        .build();
  EXPECT_EQ(passes(claims_tcp, 4), 2);
  // the rule was charged with every fragment, passed or not (and so with their bytes)
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok());
  uint64_t charged = 0;
  for (const CounterRow& row : (*rules)[0].by_verdict) charged += row.packets;
  EXPECT_EQ(charged, 12u);
}

TEST_F(ParseTest, L4FieldsComeFromWithinTheIpLengthNeverFromPadding) {
  RuleSpec syn_only = sourceRule(1, 1);
  syn_only.protocol = Protocol::kTcp;
  syn_only.tcp_flags_set = 0x02;    // SYN
  syn_only.tcp_flags_clear = 0x10;  // not ACK
  AttachOptions options;
  options.malformed = FramePolicy::kPass;  // to see what the rules make of such frames
  load({syn_only}, options);
  // a first fragment whose IP length holds 8 bytes of TCP: the flags are not in it, and
  // the frame's zero padding must not be read as "no ACK"
  auto tiny = PacketBuilder()
                  .eth()
                  .ipv4("192.0.2.5", "198.51.100.1")
                  .ipv4Fragment(0, true)
                  .tcp(80, 0x02)
                  .build();
  tiny[14 + 2] = 0;
  tiny[14 + 3] = 28;               // total length: IP header + 8 bytes
  EXPECT_EQ(run(tiny), XDP_PASS);  // malformed, passed by the policy
  EXPECT_EQ(run(tiny), XDP_PASS);  // and never charged to the SYN rule
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 2u);
  // a UDP datagram whose IP length ends before the UDP header, padded to 60 bytes
  auto short_udp = PacketBuilder().eth().ipv4("192.0.2.5", "198.51.100.1").udp(53).build();
  short_udp.resize(60, 0);
  short_udp[14 + 2] = 0;
  short_udp[14 + 3] = 24;
  EXPECT_EQ(run(short_udp), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 3u);
}

// A TCP header whose data offset runs past the datagram: the kernel drops it (it cannot pull
// the header), so it is malformed here too, not a SYN to charge. A first fragment may end
// inside the options, which the kernel reassembles: that one is a SYN.
TEST_F(ParseTest, ATcpDataOffsetPastAWholeDatagramIsMalformed) {
  RuleSpec syn = sourceRule(1, 1);
  syn.protocol = Protocol::kTcp;
  syn.tcp_flags_set = 0x02;
  load({syn});
  const size_t v4_doff = 14 + 20 + 12, v6_doff = 14 + 40 + 8 + 12;
  auto v4 = PacketBuilder().eth().ipv4("192.0.2.7", "198.51.100.1").tcp(80, 0x02).build();
  v4[v4_doff] = 0xf0;  // 60 bytes of header in a datagram of 20 bytes of TCP
  auto v6 = PacketBuilder()
                .eth()
                .ipv6("2001:db8::7", "2001:db8::2")
                .ipv6Fragment(0, false)  // an atomic fragment: whole
                .tcp(80, 0x02)
                .build();
  v6[v6_doff] = 0xf0;
  // a plain IPv6 datagram (no fragment header) is whole too
  auto v6_plain = PacketBuilder().eth().ipv6("2001:db8::7", "2001:db8::2").tcp(80, 0x02).build();
  v6_plain[14 + 40 + 12] = 0xf0;
  EXPECT_EQ(run(v4), XDP_DROP);
  EXPECT_EQ(run(v6), XDP_DROP);
  EXPECT_EQ(run(v6_plain), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 3u);

  auto v4_first = PacketBuilder()
                      .eth()
                      .ipv4("192.0.2.8", "198.51.100.1")
                      .ipv4Fragment(0, true)
                      .tcp(80, 0x02)
                      .build();
  v4_first[v4_doff] = 0xf0;
  auto v6_first = PacketBuilder()
                      .eth()
                      .ipv6("2001:db8::8", "2001:db8::2")
                      .ipv6Fragment(0, true)
                      .tcp(80, 0x02)
                      .build();
  v6_first[v6_doff] = 0xf0;
  for (const auto& first : {v4_first, v6_first}) {
    EXPECT_EQ(run(first), XDP_PASS);
    EXPECT_EQ(run(first), XDP_DROP);  // the SYN rule charged it
  }
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 3u);
}

// RFC 1858's tiny fragment: the SYN split so its flags are in a second fragment. Linux
// reassembles it and delivers a SYN, so by default it is dropped at the first fragment.
TEST_F(ParseTest, ATinyFirstFragmentIsDroppedByDefault) {
  load({sourceRule(100, 100)});
  auto tiny = PacketBuilder()
                  .eth()
                  .ipv4("192.0.2.5", "198.51.100.1")
                  .ipv4Fragment(0, true)
                  .tcp(80, 0x02)
                  .build();
  tiny[14 + 2] = 0;
  tiny[14 + 3] = 28;
  EXPECT_EQ(run(tiny), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 1u);
}

TEST_F(ParseTest, Ipv6TruncatedExtensionHeaderIsMalformed) {
  load({sourceRule(1, 100)});
  auto cut =
      PacketBuilder().eth().ipv6("2001:db8::1", "2001:db8::2").ipv6Ext(0, 16).udp(53).build();
  cut.resize(14 + 40 + 8);  // the hop-by-hop header claims 16 bytes
  cut[14 + 4] = 0;
  cut[14 + 5] = 8;  // payload length consistent with the cut frame
  EXPECT_EQ(run(cut), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 1u);
}

TEST_F(ParseTest, Ipv6NonFirstFragmentIsAFragment) {
  load({sourceRule(1, 1)});
  auto later = PacketBuilder()
                   .eth()
                   .ipv6("2001:db8::1", "2001:db8::2")
                   .ipv6Fragment(100, false)
                   .payload(64)
                   .build();
  EXPECT_EQ(run(later), XDP_PASS);
  EXPECT_EQ(run(later), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_FRAGMENT), 1u);
}

}  // namespace
}  // namespace floodgate::test
