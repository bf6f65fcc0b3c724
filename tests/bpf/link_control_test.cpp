// SPDX-License-Identifier: MIT
// Neighbour Discovery and MLD from this link pass every rule within the link's budget (a
// drained `protocol: icmp` cap must not take IPv6 neighbour resolution down), and nothing
// else a sender makes does; past the budget they meet the rules.
#include <utility>

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

  // Loads the cap and drains it with echo requests from an off-link source (at 1000 of a
  // test clock, which stays there).
  void loadDrainedCap(AttachOptions options = {}) {
    const bool test_clock = options.test_clock_hz != 0;
    load({pingCap()}, std::move(options));
    if (test_clock) setClock(1000);
    auto echo = PacketBuilder().eth().ipv6("2001:db8:66::1", "2001:db8::2").icmp().build();
    ASSERT_EQ(passes(echo, 10), 3);
  }

  static std::vector<uint8_t> icmp6(const std::string& src, uint8_t hops, uint8_t type,
                                    uint8_t code = 0, const std::string& dst = "ff02::1") {
    return PacketBuilder().eth().ipv6(src, dst).hopLimit(hops).icmp(type, code).build();
  }

  // The drained cap with a link-control budget of `budget`, on a test clock.
  void loadDrainedCapWithBudget(LinkControlBudget budget) {
    AttachOptions options;
    options.test_clock_hz = 250;
    options.link_control = budget;
    loadDrainedCap(options);
  }

  // Link-control frames counted past the budget: packets, bytes.
  std::pair<uint64_t, uint64_t> overBudget() {
    auto over = limiter().linkControlOverBudget();
    EXPECT_TRUE(over.ok()) << over.error().message;
    EXPECT_TRUE(over.ok() && over->has_value()) << "this program counts them";
    if (!over.ok() || !over->has_value()) return {0, 0};
    return {(*over)->packets, (*over)->bytes};
  }

  // Runs `frame` `times` times in one test run (its verdicts are read from the counters).
  void runRepeated(const std::vector<uint8_t>& frame, uint32_t times) {
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<uint32_t>(frame.size());
    opts.repeat = times;
    ASSERT_EQ(bpf_prog_test_run_opts(loaded_->programFd(), &opts), 0) << strerror(errno);
  }

  // A Neighbour Solicitation from a global source of the link to any address behind it:
  // what a neighbour that forges a new source for every frame sends through a router.
  static std::vector<uint8_t> forgedSolicitation(int n) {
    return icmp6("2001:db8:77::" + std::to_string(n), 255, kNeighbourSolicitation, 0,
                 "2001:db8:99::1");
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
  EXPECT_EQ(overBudget().first, 0u) << "within the budget";
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

// An allowed neighbour's pass as allowed, spending nothing of the link's budget: with the
// budget spent, its NDP still passes and no frame of it is counted past the budget.
TEST_F(LinkControlTest, AnAllowedNeighboursPassAsAllowedOutsideTheBudget) {
  AttachOptions options;
  options.test_clock_hz = 250;
  options.link_control = LinkControlBudget{2, 2};
  options.allow = std::vector<Cidr>{*parseCidr("fe80::a11/128")};
  loadDrainedCap(options);
  const auto allowed = icmp6("fe80::a11", 255, kNeighbourAdvertisement);
  EXPECT_EQ(passes(allowed, 4), 4);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_ALLOW), 4u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
  // the budget is whole for the others: two pass by no rule, the third meets the drained cap
  EXPECT_EQ(passes(forgedSolicitation(1), 3), 2);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 2u);
  EXPECT_EQ(passes(allowed, 2), 2);
  EXPECT_EQ(overBudget().first, 1u) << "only the other source's frame past the budget";
}

// In monitor mode too, an allowed neighbour's pass as allowed and spend nothing of the
// budget, which the others' then spend as before (monitor mode drops nothing past it).
TEST_F(LinkControlTest, InMonitorModeAnAllowedNeighboursStillSpendNothingOfTheBudget) {
  AttachOptions options;
  options.test_clock_hz = 250;
  options.monitor = true;
  options.link_control = LinkControlBudget{2, 2};
  options.allow = std::vector<Cidr>{*parseCidr("fe80::a11/128")};
  load({pingCap()}, options);
  setClock(1000);
  EXPECT_EQ(passes(icmp6("fe80::a11", 255, kNeighbourAdvertisement), 4), 4);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_ALLOW), 4u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 0u);
  EXPECT_EQ(passes(forgedSolicitation(1), 3), 3);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 2u) << "the budget was whole";
  EXPECT_EQ(overBudget().first, 1u) << "only the other source's frame past the budget";
}

// A neighbour that changes its source with every frame is held by no deny or ban: past the
// link's budget, its NDP and MLD meet the rules as any ICMPv6 does.
TEST_F(LinkControlTest, PastTheLinksBudgetTheyMeetTheRules) {
  loadDrainedCapWithBudget({2, 5});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(run(forgedSolicitation(i)), XDP_PASS) << i;
  EXPECT_EQ(overBudget().first, 0u);
  EXPECT_EQ(run(forgedSolicitation(5)), XDP_DROP);  // the drained cap's now
  const auto mld = icmp6("fe80::9", 1, kMldv2Report);
  EXPECT_EQ(run(mld), XDP_DROP);  // MLD shares the budget
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 5u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 7u + 2u);
  // the two past the budget are counted so, whatever the rules made of them
  EXPECT_EQ(overBudget(), std::make_pair(uint64_t{2}, forgedSolicitation(5).size() + mld.size()));
  // the budget refills at its rate: 2 a second, one in half a second (the cap half a packet)
  setClock(1000 + 125);
  EXPECT_EQ(passes(forgedSolicitation(6), 3), 1);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 6u);
  EXPECT_EQ(overBudget().first, 4u);
}

TEST_F(LinkControlTest, PastTheBudgetARuleWithRoomStillPassesThem) {
  AttachOptions options;
  options.test_clock_hz = 250;
  options.link_control = {1, 1};
  load({sourceRule(100, 100)}, options);
  setClock(1000);
  EXPECT_EQ(passes(forgedSolicitation(1), 3), 3);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 1u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_DEFAULT), 2u);
  EXPECT_EQ(overBudget().first, 2u) << "past the budget, though the rule passed them";
}

// In monitor mode past the budget, the rules' refusals are counted as `monitor` and passed,
// as for any frame: nothing is dropped, and the over-budget count still shows the neighbour.
TEST_F(LinkControlTest, InMonitorModePastTheBudgetTheRulesOnlyCount) {
  AttachOptions options;
  options.test_clock_hz = 250;
  options.link_control = {1, 2};
  options.monitor = true;
  load({pingCap()}, options);
  setClock(1000);
  EXPECT_EQ(passes(forgedSolicitation(1), 8), 8);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 2u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_DEFAULT), 3u) << "the cap's burst";
  EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_RATE), 3u);
  EXPECT_EQ(overBudget().first, 6u);
}

TEST_F(LinkControlTest, TheDefaultBudgetIsAThousandAtOnce) {
  loadDrainedCapWithBudget(LinkControlBudget{});
  runRepeated(forgedSolicitation(1), 1001);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 1000u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 7u + 1u);
  EXPECT_EQ(overBudget().first, 1u);
}

TEST_F(LinkControlTest, AnUnlimitedBudgetPassesThemAll) {
  loadDrainedCapWithBudget({0, 0});
  runRepeated(forgedSolicitation(1), 2000);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 2000u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 7u);
  EXPECT_EQ(overBudget().first, 0u);
}

// A reload keeps what the budget had spent (a neighbour cannot refill it by a reload it
// makes happen) and runs the new rate and burst from there.
TEST_F(LinkControlTest, AReloadKeepsWhatTheBudgetSpent) {
  loadDrainedCapWithBudget({1, 3});
  EXPECT_EQ(passes(forgedSolicitation(1), 4), 3);
  AttachOptions options;
  options.link_control = {1, 3};
  reload({pingCap()}, options);
  EXPECT_EQ(run(forgedSolicitation(2)), XDP_DROP);
  options.link_control = {1, 5};  // a larger burst: two more at once
  reload({pingCap()}, options);
  EXPECT_EQ(passes(forgedSolicitation(3), 3), 2);
  options.link_control = {0, 0};
  reload({pingCap()}, options);
  EXPECT_EQ(passes(forgedSolicitation(4), 3), 3);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 8u);
}

// A smaller burst over a spent budget leaves it spent: its old debt, further ahead than the
// new burst reaches, is not taken for an old, idle time.
TEST_F(LinkControlTest, ABudgetLoweredWhileSpentIsNotRefilled) {
  loadDrainedCapWithBudget({1, 100});
  runRepeated(forgedSolicitation(1), 101);
  ASSERT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 100u);
  AttachOptions options;
  options.link_control = {2, 1};
  reload({pingCap()}, options);
  EXPECT_EQ(passes(forgedSolicitation(2), 3), 0);
  // from empty, the new rate: one in half a second (the cap has half a packet then)
  setClock(1000 + 125);
  EXPECT_EQ(passes(forgedSolicitation(3), 3), 1);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_LINK_CONTROL), 101u);
}

}  // namespace
}  // namespace floodgate::test
