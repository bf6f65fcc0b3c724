// SPDX-License-Identifier: MIT
// The limiting path of the real XDP program: buckets, prefixes, lists, monitor mode, bps
// and how several rules compose. Rates are 1 pps so no outcome depends on timing.
#include <sys/utsname.h>

#include <cstdio>
#include <cstring>

#include "bpf/xdp_fixture.h"
#include "floodgate/common/cidr.h"

namespace floodgate::test {
namespace {

class XdpLimiterTest : public XdpProgramTest {
 protected:
  static std::vector<Cidr> cidrs(std::initializer_list<const char*> texts) {
    std::vector<Cidr> out;
    for (const char* text : texts) out.push_back(*parseCidr(text));
    return out;
  }

  // A rule on DNS queries (UDP to port 53) alone.
  static RuleSpec dnsRule(const std::string& name, uint64_t pps, uint64_t burst) {
    RuleSpec rule = sourceRule(pps, burst);
    rule.name = name;
    rule.protocol = Protocol::kUdp;
    rule.dst_ports = {{53, 53}};
    return rule;
  }

  // Loads `rules` on the program's test clock, which moves only when a test moves it: no
  // bucket refills between two runs, however slow the machine.
  void loadOnTestClock(std::vector<RuleSpec> rules) {
    AttachOptions options;
    options.test_clock_hz = 1000;
    load(std::move(rules), options);
    setClock(100000);
  }
};

TEST_F(XdpLimiterTest, ASourceOverItsBurstIsDroppedAndOthersAreNot) {
  load({sourceRule(1, 3)});
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 10), 3);
  EXPECT_EQ(passes(udpFrom("192.0.2.2"), 2), 2);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 7u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_DEFAULT), 5u);
}

TEST_F(XdpLimiterTest, TwoIpv6SourcesInOneSlash64ShareABucket) {
  load({sourceRule(1, 4)});
  EXPECT_EQ(passes(udpFrom("2001:db8:1:2::1"), 2), 2);
  EXPECT_EQ(passes(udpFrom("2001:db8:1:2:ffff::9"), 4), 2);
  // the neighbouring /64 has its own bucket
  EXPECT_EQ(passes(udpFrom("2001:db8:1:3::1"), 4), 4);
}

// Every neighbour's link-local address is in fe80::/64, every duplicate-address probe comes
// from ::, and spoofed IPv4-mapped sources are in ::/64 as well: keyed at a rule's /64, one
// neighbour's flood would empty the router's bucket (its neighbour and router
// advertisements). Those sources are keyed as whole addresses whatever the rule's prefix.
TEST_F(XdpLimiterTest, LinkLocalUnspecifiedAndMappedSourcesAreEachKeyedWhole) {
  RuleSpec rule = sourceRule(1, 4);
  rule.ipv4_prefix = 24;
  load({rule});
  EXPECT_EQ(passes(udpFrom("fe80::bad:1"), 10), 4);
  EXPECT_EQ(passes(udpFrom("fe80::1"), 4), 4) << "the router's own bucket";
  EXPECT_EQ(passes(udpFrom("::ffff:203.0.113.9"), 10), 4);
  EXPECT_EQ(passes(udpFrom("::"), 4), 4) << "a duplicate-address probe's own bucket";
  EXPECT_EQ(passes(udpFrom("0.0.0.1"), 10), 4);
  EXPECT_EQ(passes(udpFrom("0.0.0.0"), 4), 4) << "a DHCP client's own bucket, not 0.0.0.0/24's";
  // and the rest of the address space still by the rule's prefixes
  EXPECT_EQ(passes(udpFrom("2001:db8:1:2::1"), 4), 4);
  EXPECT_EQ(passes(udpFrom("2001:db8:1:2::2"), 4), 0);
  EXPECT_EQ(passes(udpFrom("203.0.113.1"), 4), 4);
  EXPECT_EQ(passes(udpFrom("203.0.113.2"), 4), 0);
}

// Behind a NAT64 translator every IPv4 client is in 64:ff9b::/96, one /64: each is keyed as
// its whole address, whatever the rule's prefixes, and so whatever other rules the packet
// meets before (a rule keyed by another IPv4 prefix, the same IPv6 one, charges the same).
TEST_F(XdpLimiterTest, Nat64SourcesAreEachKeyedWhole) {
  RuleSpec first = sourceRule(1000, 1000);
  first.ipv4_prefix = 32;
  RuleSpec rule = sourceRule(1, 4);
  rule.ipv4_prefix = 24;
  load({first, rule});
  EXPECT_EQ(passes(udpFrom("64:ff9b::c000:201"), 10), 4);  // 192.0.2.1
  EXPECT_EQ(passes(udpFrom("64:ff9b::c000:202"), 4), 4);   // 192.0.2.2: its own
  EXPECT_EQ(passes(udpFrom("64:ff9b::c000:201"), 1), 0);
}

// A rule's ban of a link-local source bans that neighbour alone, not fe80::/64.
TEST_F(XdpLimiterTest, ABanOfALinkLocalSourceBansThatNeighbourAlone) {
  RuleSpec rule = sourceRule(1, 2);
  rule.action = ExceedAction::kBan;
  rule.ban_ns = 60'000'000'000ULL;
  load({rule});
  EXPECT_EQ(passes(udpFrom("fe80::bad:1"), 3), 2);
  EXPECT_EQ(run(udpFrom("fe80::bad:1")), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  ASSERT_EQ(bans->size(), 1u);
  EXPECT_EQ((*bans)[0].cidr.toString(), "fe80::bad:1");
  EXPECT_EQ(run(udpFrom("fe80::1")), XDP_PASS);
}

TEST_F(XdpLimiterTest, Ipv4PrefixKeysGroupSources) {
  RuleSpec rule = sourceRule(1, 2);
  rule.ipv4_prefix = 24;
  load({rule});
  EXPECT_EQ(run(udpFrom("203.0.113.1")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("203.0.113.200")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("203.0.113.77")), XDP_DROP);
  EXPECT_EQ(run(udpFrom("203.0.114.1")), XDP_PASS);
}

// Rules keyed by alternating prefixes: each keys the source by its own prefix, although a
// rule keyed by the prefix of the one before shares that rule's address hash.
TEST_F(XdpLimiterTest, RulesOfAlternatingPrefixesEachKeyByTheirOwn) {
  RuleSpec wide = sourceRule(1, 100);
  wide.name = "wide";
  RuleSpec shared = sourceRule(1, 3);  // one bucket per /24 (IPv4) or /64 (IPv6)
  shared.name = "shared";
  shared.ipv4_prefix = 24;
  shared.ipv6_prefix = 64;
  RuleSpec each = sourceRule(1, 1);  // one bucket per address
  each.name = "each";
  for (RuleSpec* rule : {&wide, &each}) {
    rule->ipv4_prefix = 32;
    rule->ipv6_prefix = 128;
  }
  load({wide, shared, each});
  for (const char* net : {"203.0.113.", "2001:db8:7::"}) {
    auto from = [&](int host) { return udpFrom(net + std::to_string(host)); };
    EXPECT_EQ(run(from(1)), XDP_PASS) << net;
    EXPECT_EQ(run(from(1)), XDP_DROP) << net;  // its own address's bucket, not the /24's
    EXPECT_EQ(run(from(2)), XDP_PASS) << net;
    EXPECT_EQ(run(from(3)), XDP_PASS) << net;
    EXPECT_EQ(run(from(4)), XDP_DROP) << net;  // the shared prefix's third was the last
  }
}

TEST_F(XdpLimiterTest, DenyDropsAndAllowBypassesTheLimit) {
  load({sourceRule(1, 1)});
  ASSERT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/24", "2001:db8:bad::/48"})), 2u);
  ASSERT_EQ(*limiter().listAdd(ListKind::kAllow, cidrs({"198.18.0.5", "2001:db8:600d::/48"})), 2u);
  EXPECT_EQ(passes(udpFrom("192.0.2.55"), 3), 0);
  EXPECT_EQ(passes(udpFrom("2001:db8:bad:1::1"), 3), 0);
  EXPECT_EQ(passes(udpFrom("198.18.0.5"), 5), 5);
  EXPECT_EQ(passes(udpFrom("2001:db8:600d:7::1"), 5), 5);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_DENY), 6u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_ALLOW), 10u);
  // lifting the deny entry lets the source through to its own limit
  ASSERT_EQ(*limiter().listRemove(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 1u);
  EXPECT_EQ(passes(udpFrom("192.0.2.55"), 3), 1);
  auto listed = limiter().listEntries(ListKind::kAllow);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 2u);
}

// An allowed source is spared the rules, not the frame policies: its address is as easily
// forged as any, so a flood of fragments or malformed frames sent from it is dropped where
// `fragments: drop` and `malformed: drop` say, counted under them.
TEST_F(XdpLimiterTest, AllowedSourcesStillMeetTheFramePolicies) {
  AttachOptions options;
  options.fragments = FramePolicy::kDrop;
  load({sourceRule(1, 1)}, options);
  ASSERT_EQ(*limiter().listAdd(ListKind::kAllow, cidrs({"198.18.0.5", "2001:db8:600d::/48"})), 2u);
  auto later_v4 = PacketBuilder()
                      .eth()
                      .ipv4("198.18.0.5", "198.51.100.1")
                      .ipv4Fragment(9, false)
                      .payload(64)
                      .build();
  auto later_v6 = PacketBuilder()
                      .eth()
                      .ipv6("2001:db8:600d::1", "2001:db8::2")
                      .ipv6Fragment(100, false)
                      .payload(64)
                      .build();
  auto bad_length = udpFrom("198.18.0.5");
  bad_length[14 + 3] = 200;  // a total length past the frame
  EXPECT_EQ(run(later_v4), XDP_DROP);
  EXPECT_EQ(run(later_v6), XDP_DROP);
  EXPECT_EQ(run(bad_length), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_FRAGMENT), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_MALFORMED), 1u);
  // whole datagrams pass past the rule's limit, as allowed
  EXPECT_EQ(passes(udpFrom("198.18.0.5"), 5), 5);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_ALLOW), 5u);
}

// Under `malformed: pass` an allowed source's malformed frames pass as allowed, spared the
// rule another source's meet (a frame passed by that policy still meets the rules that need
// no field the parser could not read).
TEST_F(XdpLimiterTest, UnderMalformedPassAnAllowedSourcesMalformedFramesPassAsAllowed) {
  AttachOptions options;
  options.malformed = FramePolicy::kPass;
  load({sourceRule(1, 1)}, options);
  ASSERT_EQ(*limiter().listAdd(ListKind::kAllow, cidrs({"198.18.0.5"})), 1u);
  auto bad_length = [](const std::string& src) {
    auto frame = udpFrom(src);
    frame[14 + 3] = 200;  // a total length past the frame
    return frame;
  };
  EXPECT_EQ(passes(bad_length("198.18.0.5"), 3), 3);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_ALLOW), 3u);
  EXPECT_EQ(passes(bad_length("198.18.0.6"), 3), 1) << "the rule's burst of one";
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_MALFORMED), 1u);
  EXPECT_EQ(counted(FG_VERDICT_PASS, FG_REASON_ALLOW), 3u);
}

// What escalation asks before it bans a reported client: whether the allow list overlaps
// it. An entry that holds the address or prefix (the trie's own lookup), and for a prefix
// wider than an address, an entry inside it too (a ban of the prefix would drop it).
TEST_F(XdpLimiterTest, TheAllowListIsFoundAroundAndInsideAReportedPrefix) {
  load({sourceRule(1, 1)});
  ASSERT_EQ(*limiter().listAdd(ListKind::kAllow,
                               cidrs({"198.18.0.0/24", "2001:db8:600d::/48", "2001:db8:1:2::5"})),
            3u);
  auto listed = [&](const char* text) { return limiter().allowListed(cidrs({text})[0]); };
  EXPECT_TRUE(listed("198.18.0.7"));
  EXPECT_FALSE(listed("198.18.1.7"));
  EXPECT_TRUE(listed("2001:db8:600d:7::/64"));  // inside an entry
  EXPECT_TRUE(listed("2001:db8:1:2::/64"));     // an entry (one address) inside it
  EXPECT_TRUE(listed("2001:db8:1:2::5"));
  EXPECT_FALSE(listed("2001:db8:1:3::/64"));
  EXPECT_FALSE(listed("2001:db8:1:2::6"));
}

// The program skips a list whose family's count is 0, so the count must never fall below
// the trie's entries: not after a list that fills up, nor after removing what went in. A
// list add is all or none: what a full list leaves half-done is taken out again.
TEST_F(XdpLimiterTest, AFullListSaysSoAndAddsNoneOfWhatWasGiven) {
  AttachOptions options;
  options.list_max_entries = 2;  // a trie each for IPv4 and IPv6
  load({sourceRule(100, 100)}, options);
  ASSERT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 1u);
  auto added = limiter().listAdd(ListKind::kDeny, cidrs({"2001:db8:bad::/48", "203.0.113.0/24",
                                                         "192.0.2.0/24", "198.51.100.0/24"}));
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.error().message,
            "the deny list is full: raise the list size at attach; none of the 4 given was added");
  auto settings = limiter().settings();
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->deny_entries[FG_FAMILY_V4], 1u);
  EXPECT_EQ(settings->deny_entries[FG_FAMILY_V6], 0u);
  EXPECT_EQ(run(udpFrom("192.0.2.55")), XDP_DROP) << "what was there before stays";
  EXPECT_EQ(run(udpFrom("203.0.113.9")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("2001:db8:bad::1")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("198.51.100.1")), XDP_PASS);
  auto listed = limiter().listEntries(ListKind::kDeny);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);
  // what fits goes in; again, with one already there: counted once
  ASSERT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"203.0.113.0/24", "2001:db8:bad::/48"})),
            2u);
  EXPECT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 0u);
  EXPECT_EQ(run(udpFrom("2001:db8:bad::1")), XDP_DROP);
  ASSERT_EQ(*limiter().listRemove(ListKind::kDeny,
                                  cidrs({"192.0.2.0/24", "203.0.113.0/24", "2001:db8:bad::/48"})),
            3u);
  settings = limiter().settings();
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->deny_entries[FG_FAMILY_V4], 0u);
  EXPECT_EQ(settings->deny_entries[FG_FAMILY_V6], 0u);
  EXPECT_EQ(run(udpFrom("192.0.2.55")), XDP_PASS);
}

// The IPv4 lists' filters mark /24s; the trie still decides within a marked one.
TEST_F(XdpLimiterTest, TheListFilterSkipsUnlistedSourcesAndNeverAListedOne) {
  load({sourceRule(100, 100)});
  ASSERT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/26", "10.0.0.0/8"})), 2u);
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_DROP);
  EXPECT_EQ(run(udpFrom("192.0.2.100")), XDP_PASS);  // the same /24, outside the /26
  EXPECT_EQ(run(udpFrom("10.200.3.4")), XDP_DROP);   // a /8 marks 65536 /24s
  EXPECT_EQ(run(udpFrom("11.0.0.1")), XDP_PASS);
  // a reload that drops one prefix rebuilds the filter, and the kept one still holds
  AttachOptions options;
  options.deny = cidrs({"192.0.2.0/26"});
  reload({sourceRule(100, 100)}, options);
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_DROP);
  EXPECT_EQ(run(udpFrom("10.200.3.4")), XDP_PASS);
}

// A program loaded over lists whose filter was never built (a limiter attached by a
// floodgate without filters, replaced) asks the trie until the filter is built from it.
TEST_F(XdpLimiterTest, AnUnbuiltListFilterIsNotTrustedAndALoadBuildsIt) {
  load({sourceRule(100, 100)});
  ASSERT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 1u);
  // what an older floodgate leaves: the prefix in the trie, no filter, no flag
  UniqueFd filter(bpf_obj_get(mapPinPath(pin_name_, "deny_filter_v4").c_str()));
  UniqueFd settings(bpf_obj_get(mapPinPath(pin_name_, "settings_map").c_str()));
  ASSERT_TRUE(filter.valid() && settings.valid());
  for (uint32_t word = 0; word < FG_LIST_FILTER_WORDS; word += 1) {
    uint64_t zero = 0;
    ASSERT_EQ(bpf_map_update_elem(filter.get(), &word, &zero, BPF_ANY), 0);
  }
  uint32_t key = 0;
  fg_settings value{};
  ASSERT_EQ(bpf_map_lookup_elem(settings.get(), &key, &value), 0);
  value.list_filters = 0;
  ASSERT_EQ(bpf_map_update_elem(settings.get(), &key, &value, BPF_ANY), 0);
  EXPECT_EQ(run(udpFrom("192.0.2.9")), XDP_DROP);

  AttachOptions replace;
  replace.interface = pin_name_;
  replace.rules = named({sourceRule(100, 100)});
  replace.table_slots = 1024;
  replace.test_older_program = olderProgramUnderTest();
  auto again = XdpLimiter::load(replace);
  ASSERT_TRUE(again.ok()) << again.error().message;
  loaded_.emplace(std::move(*again));
  ASSERT_EQ(bpf_map_lookup_elem(settings.get(), &key, &value), 0);
  EXPECT_EQ(value.list_filters, (1U << FG_LIST_ALLOW) | (1U << FG_LIST_DENY));
  EXPECT_EQ(run(udpFrom("192.0.2.9")), XDP_DROP);
  EXPECT_EQ(run(udpFrom("192.0.3.9")), XDP_PASS);
}

TEST_F(XdpLimiterTest, AddingAnEntryTwiceCountsItOnce) {
  load({sourceRule(1, 1)});
  EXPECT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 1u);
  EXPECT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 0u);
  EXPECT_EQ(*limiter().listRemove(ListKind::kDeny, cidrs({"192.0.2.0/24"})), 1u);
  // the list is empty again, so the program skips it: the source meets its bucket
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 2), 1);
}

TEST_F(XdpLimiterTest, MonitorModeCountsWhatItWouldDropAndPassesIt) {
  AttachOptions options;
  options.monitor = true;
  load({sourceRule(1, 2)}, options);
  ASSERT_EQ(*limiter().listAdd(ListKind::kDeny, cidrs({"192.0.2.99"})), 1u);
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 5), 5);
  EXPECT_EQ(passes(udpFrom("192.0.2.99"), 1), 1);
  EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_RATE), 3u);
  EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_DENY), 1u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 0u);
  // the rule's own counters agree: monitored, never dropped (`stats`, the rule metrics)
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ((*rules)[0].by_verdict[FG_VERDICT_MONITOR].packets, 3u);
  EXPECT_EQ((*rules)[0].by_verdict[FG_VERDICT_DROP].packets, 0u);
  EXPECT_EQ((*rules)[0].by_verdict[FG_VERDICT_PASS].packets, 2u);
}

TEST_F(XdpLimiterTest, BytesPerSecondChargesTheFrameLength) {
  RuleSpec rule;
  rule.limit.bits_per_s = 8;  // one byte per second: only the burst matters here
  rule.limit.burst_bytes = 3000;
  load({rule});
  auto big = udpFrom("192.0.2.1", 1000 - 42);  // 1000-byte frames
  ASSERT_EQ(big.size(), 1000u);
  EXPECT_EQ(passes(big, 5), 3);
  auto small = udpFrom("192.0.2.2", 64 - 42);
  EXPECT_EQ(passes(small, 50), 46);  // 3000 / 64
}

TEST_F(XdpLimiterTest, APpsChargeIsHandedBackWhenTheBpsLimitRefuses) {
  RuleSpec rule;
  rule.limit.pps = 1;
  rule.limit.burst = 3;
  rule.limit.bits_per_s = 8;
  rule.limit.burst_bytes = 2000;
  load({rule});
  auto big = udpFrom("192.0.2.1", 1500 - 42);
  auto tiny = udpFrom("192.0.2.1", 60 - 42);
  EXPECT_EQ(run(big), XDP_PASS);  // pps 1/3, bytes 1500/2000
  EXPECT_EQ(run(big), XDP_DROP);  // bytes refuse: the pps charge goes back
  EXPECT_EQ(run(big), XDP_DROP);
  EXPECT_EQ(passes(tiny, 3), 2);  // so two packets of pps remain, not zero
}

TEST_F(XdpLimiterTest, EveryMatchingRuleMustAdmitAndDropsAreRefunded) {
  RuleSpec per_source = sourceRule(1, 5);
  RuleSpec dns = sourceRule(1, 2);
  dns.protocol = Protocol::kUdp;
  dns.dst_ports = {{53, 53}};
  load({per_source, dns});
  auto query = udpFrom("192.0.2.1");
  auto other = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(123).build();
  EXPECT_EQ(passes(query, 4), 2);  // the DNS rule is the tighter one
  // the two refused queries were handed back to the per-source rule: 3 of 5 remain
  EXPECT_EQ(passes(other, 5), 3);
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[1].by_verdict[FG_VERDICT_DROP].packets, 2u);
  EXPECT_EQ((*rules)[1].by_verdict[FG_VERDICT_PASS].packets, 2u);
}

// A drop hands back the charges of every earlier rule: a per-source rule's untracked bucket
// for a source the new-source cap kept out of the table. A global rule ahead of them takes
// nothing until they have admitted (docs/config.md), so there is nothing to hand back to
// it. On the program's test clock: no refill between runs.
TEST_F(XdpLimiterTest, ADropHandsBackWhatTheUntrackedBucketTookAndTheGlobalRuleTookNothing) {
  RuleSpec global = dnsRule("global", 1, 3);  // every DNS query, one bucket
  global.key = KeyKind::kGlobal;
  RuleSpec capped = sourceRule(1, 100);  // every packet
  capped.name = "capped";
  capped.new_sources_per_s = 1;  // one new source, then the untracked bucket
  capped.untracked = {.pps = 1, .burst = 3};
  RuleSpec dns = dnsRule("dns", 1, 1);
  loadOnTestClock({global, capped, dns});
  auto ntp = [](const char* source) {
    return PacketBuilder().eth().ipv4(source, "198.51.100.1").udp(123).build();
  };
  ASSERT_EQ(run(ntp("192.0.2.1")), XDP_PASS);  // .1 takes capped's one new source
  // .2 is untracked by capped: global 1 of 3, untracked 1 of 3, its dns bucket 1 of 1
  ASSERT_EQ(run(udpFrom("192.0.2.2")), XDP_PASS);
  // dns refuses the next four: each hands back what untracked took (global took nothing)
  EXPECT_EQ(passes(udpFrom("192.0.2.2"), 4), 0);
  // two of the untracked bucket's three are left, for any source the cap keeps out
  EXPECT_EQ(passes(ntp("192.0.2.3"), 3), 2);
  // and two of global's three: .1's second query is refused by its dns bucket
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 3), 1);
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[0].by_verdict[FG_VERDICT_PASS].packets, 8u);  // each it had room for
  EXPECT_EQ((*rules)[2].by_verdict[FG_VERDICT_DROP].packets, 6u);
}

// A rule that refused a packet took nothing, so a later rule's drop hands nothing back to it:
// a monitor rule over its limit between a rule that passes and one that drops, and rules
// keyed by different prefixes, each of whose buckets is found again by its own key.
TEST_F(XdpLimiterTest, ADropHandsBackOnlyWhatEachEarlierRuleTook) {
  RuleSpec wide = sourceRule(1, 5);
  wide.name = "wide";
  wide.ipv4_prefix = 24;
  RuleSpec watch = sourceRule(1, 1);
  watch.name = "watch";
  watch.action = ExceedAction::kMonitor;
  RuleSpec dns = dnsRule("dns", 1, 2);
  loadOnTestClock({wide, watch, dns});
  // wide takes 2 of 5 for the /24; watch admits one and refuses the second; dns admits both
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 2), 2);
  // dns refuses three more: wide gets each back, and watch, which took none, gets nothing
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 3), 0);
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[1].by_verdict[FG_VERDICT_PASS].packets, 1u);
  EXPECT_EQ((*rules)[1].by_verdict[FG_VERDICT_MONITOR].packets, 4u);
  // three of wide's five left for the /24: another address of it, on another port
  auto ntp = PacketBuilder().eth().ipv4("192.0.2.200", "198.51.100.1").udp(123).build();
  EXPECT_EQ(passes(ntp, 4), 3);
}

// A source's first packet takes a slot under an earlier rule, and a later rule drops it: the
// refund finds the slot that packet just took, by the tag it just wrote.
class RefundTest : public XdpLimiterTest {
 protected:
  // `a` and `b` share the /24 or /48 of a DNS rule that admits one query between them.
  void expectFreshSlotRefunded(const char* a, const char* b, const char* to) {
    RuleSpec each = sourceRule(1, 2);  // every packet, one bucket per address
    each.name = "each";
    each.ipv6_prefix = 128;
    RuleSpec net = dnsRule("net", 1, 1);
    net.ipv4_prefix = 24;
    net.ipv6_prefix = 48;
    loadOnTestClock({each, net});
    ASSERT_EQ(run(udpFrom(a)), XDP_PASS);  // the network's one query
    // b's first query takes b's slot under "each" and is dropped by "net"; so are three more
    EXPECT_EQ(passes(udpFrom(b), 4), 0);
    // b's own bucket was handed back every time: both of its two are left
    PacketBuilder ntp;
    ntp.eth();
    if (std::strchr(b, ':')) {
      ntp.ipv6(b, to);
    } else {
      ntp.ipv4(b, to);
    }
    EXPECT_EQ(passes(ntp.udp(123).build(), 3), 2);
  }

  // A window algorithm's count goes down by what a later rule's drop hands back.
  void expectWindowRefunded(Algorithm algorithm) {
    RuleSpec each = sourceRule(1, 1);
    each.name = "each";
    each.algorithm = algorithm;
    each.window_ns = 60'000'000'000ULL;   // 60 packets a window
    RuleSpec dns = dnsRule("dns", 1, 1);  // one DNS query, shared by every source
    dns.key = KeyKind::kGlobal;
    loadOnTestClock({each, dns});
    ASSERT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);
    EXPECT_EQ(passes(udpFrom("192.0.2.2"), 10), 0);
    auto ntp = PacketBuilder().eth().ipv4("192.0.2.2", "198.51.100.1").udp(123).build();
    EXPECT_EQ(passes(ntp, 70), 60);
  }
};

TEST_F(RefundTest, AnIpv4SourcesFreshSlotIsHandedBackWhatTheSameFrameTook) {
  expectFreshSlotRefunded("192.0.2.1", "192.0.2.2", "198.51.100.1");
}

TEST_F(RefundTest, AnIpv6SourcesFreshSlotIsHandedBackWhatTheSameFrameTook) {
  expectFreshSlotRefunded("2001:db8:1::1", "2001:db8:1::2", "2001:db8:ffff::1");
}

TEST_F(RefundTest, AFixedWindowIsHandedBackWhatItCounted) {
  expectWindowRefunded(Algorithm::kFixedWindow);
}

TEST_F(RefundTest, ASlidingWindowIsHandedBackWhatItCounted) {
  expectWindowRefunded(Algorithm::kSlidingWindow);
}

TEST_F(XdpLimiterTest, AGlobalRuleSharesOneBucketAcrossSources) {
  RuleSpec global = sourceRule(1, 3);
  global.key = KeyKind::kGlobal;
  load({global});
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.2")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("2001:db8::3")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.4")), XDP_DROP);
}

TEST_F(XdpLimiterTest, PortRangesAndProtocolsSelectPackets) {
  RuleSpec games = sourceRule(1, 1);
  games.protocol = Protocol::kUdp;
  games.dst_ports = {{27015, 27030}, {7777, 7777}};
  RuleSpec pings = sourceRule(1, 2);
  pings.protocol = Protocol::kIcmp;
  load({games, pings});
  auto port = [](uint16_t p) {
    return PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(p).build();
  };
  EXPECT_EQ(passes(port(27015), 2), 1);
  EXPECT_EQ(passes(port(27030), 2), 0);  // same source, same rule, bucket already empty
  EXPECT_EQ(passes(port(27031), 3), 3);
  EXPECT_EQ(passes(port(7777), 1), 0);
  EXPECT_EQ(passes(port(7776), 2), 2);
  auto tcp = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").tcp(27020).build();
  EXPECT_EQ(passes(tcp, 3), 3);
  auto ping4 = PacketBuilder().eth().ipv4("192.0.2.9", "198.51.100.1").icmp().build();
  auto ping6 = PacketBuilder().eth().ipv6("2001:db8::9", "2001:db8::1").icmp().build();
  EXPECT_EQ(passes(ping4, 3), 2);
  EXPECT_EQ(passes(ping6, 3), 2);
}

// A config of one rule takes a path of its own (no rule index): the rule still selects by
// protocol, port and source set, alone as among others.
TEST_F(XdpLimiterTest, ARuleAloneSelectsPacketsAsAmongOthers) {
  load({dnsRule("dns", 1, 1)});
  auto tcp = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").tcp(53).build();
  auto other_port = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(54).build();
  auto ping = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").icmp().build();
  EXPECT_EQ(passes(tcp, 3), 3);
  EXPECT_EQ(passes(other_port, 3), 3);
  EXPECT_EQ(passes(ping, 3), 3);
  // a later fragment has no ports to read: a rule on a port never counts it
  auto later = PacketBuilder()
                   .eth()
                   .ipv4("192.0.2.1", "198.51.100.1")
                   .ipv4Fragment(9, false)
                   .payload(16)
                   .build();
  EXPECT_EQ(passes(later, 3), 3);
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 3), 1);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);

  RuleSpec listed = sourceRule(1, 1);
  listed.name = "listed";
  listed.sources = cidrs({"192.0.2.0/24", "2001:db8::/32"});
  reload({listed});
  EXPECT_EQ(passes(udpFrom("198.51.100.7"), 3), 3);
  EXPECT_EQ(passes(udpFrom("2001:db9::7"), 3), 3);
  EXPECT_EQ(passes(udpFrom("192.0.2.200"), 3), 1);
  EXPECT_EQ(passes(udpFrom("2001:db8:5::1"), 3), 1);
}

// The walk visits every rule a packet meets, up to the most a config may have: the last of
// FG_MAX_RULES rules still drops, and each earlier rule's charge is handed back. A walk cut
// short (a loop bound, a budget) would pass the packet and leave the charges taken.
TEST_F(XdpLimiterTest, TheWalkReachesTheLastOfTheMostRules) {
  std::vector<RuleSpec> rules;
  for (int i = 0; i + 1 < FG_MAX_RULES; ++i) rules.push_back(sourceRule(1, 3));
  rules.push_back(dnsRule("last", 1, 1));
  loadOnTestClock(rules);
  auto query = udpFrom("192.0.2.1");
  EXPECT_EQ(run(query), XDP_PASS);
  EXPECT_EQ(run(query), XDP_DROP);  // the last rule's burst of 1 is spent
  EXPECT_EQ(run(query), XDP_DROP);
  auto counters = limiter().ruleCounters();
  ASSERT_TRUE(counters.ok());
  ASSERT_EQ(counters->size(), static_cast<size_t>(FG_MAX_RULES));
  EXPECT_EQ(counters->back().by_verdict[FG_VERDICT_DROP].packets, 2u);
  // the two drops were handed back: every other rule has two of its three left
  auto other = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(123).build();
  EXPECT_EQ(passes(other, 3), 2);
}

// The walk visits the rules a packet meets among others it does not: UDP rules at positions
// 2, 9 and the last, TCP rules everywhere else. A UDP query is charged by those three alone,
// in order, and the last one's drop hands back what 2 and 9 took; no TCP rule is touched.
TEST_F(XdpLimiterTest, TheWalkVisitsOnlyTheRulesAPacketMeetsWithGapsBetween) {
  std::vector<RuleSpec> rules;
  for (int i = 0; i + 1 < FG_MAX_RULES; ++i) {
    RuleSpec rule = sourceRule(1, 3);
    rule.name = "r" + std::to_string(i);
    rule.protocol = (i == 2 || i == 9) ? Protocol::kUdp : Protocol::kTcp;
    rules.push_back(rule);
  }
  rules.push_back(dnsRule("last", 1, 1));
  loadOnTestClock(rules);
  auto query = udpFrom("192.0.2.1");
  EXPECT_EQ(run(query), XDP_PASS);
  EXPECT_EQ(passes(query, 2), 0);  // the last rule's burst of 1 is spent
  auto counters = limiter().ruleCounters();
  ASSERT_TRUE(counters.ok());
  ASSERT_EQ(counters->size(), static_cast<size_t>(FG_MAX_RULES));
  for (int i = 0; i < FG_MAX_RULES; ++i) {
    const auto& by_verdict = (*counters)[i].by_verdict;
    const bool met = i == 2 || i == 9 || i + 1 == FG_MAX_RULES;
    // 2 and 9 admit all three (their charges handed back); the last admits one, drops two
    EXPECT_EQ(by_verdict[FG_VERDICT_PASS].packets, met ? (i == 2 || i == 9 ? 3u : 1u) : 0u)
        << "position " << i;
    EXPECT_EQ(by_verdict[FG_VERDICT_DROP].packets, i + 1 == FG_MAX_RULES ? 2u : 0u)
        << "position " << i;
  }
  // 2 and 9 each have two of their three left, for any UDP packet of the source
  auto ntp = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(123).build();
  EXPECT_EQ(passes(ntp, 3), 2);
}

// The program loaded is the one for this kernel: floodgate_xdp where the kernel has
// may_goto (6.9 and later), floodgate_older where it has not or a test asks for it.
TEST_F(XdpLimiterTest, TheProgramForTheKernelIsLoaded) {
  utsname uts{};
  ASSERT_EQ(uname(&uts), 0);
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(uts.release, "%d.%d", &major, &minor), 2) << uts.release;
  // mainline has it from 6.9 (an older kernel may have it backported)
  if (major > 6 || (major == 6 && minor >= 9)) {
    EXPECT_TRUE(kernelHasMayGoto()) << uts.release;
  }
  auto loadedName = [&](bool older) {
    AttachOptions options;
    options.test_older_program = older;
    load({sourceRule(1, 1)}, options);
    return loadedProgramName();
  };
  const bool older = olderProgramUnderTest() || !kernelHasMayGoto();
  EXPECT_EQ(loadedName(false), older ? "floodgate_older" : "floodgate_xdp");
  EXPECT_EQ(loadedName(true), "floodgate_older");
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_DROP);
}

TEST_F(XdpLimiterTest, AMonitorRuleCountsButAStrictRuleStillDrops) {
  RuleSpec watch = sourceRule(1, 1);
  watch.action = ExceedAction::kMonitor;
  RuleSpec strict = sourceRule(1, 3);
  load({watch, strict});
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 5), 3);
  EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_RATE), 2u);  // packets 2 and 3
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ((*rules)[0].by_verdict[FG_VERDICT_MONITOR].packets, 4u);
  EXPECT_EQ((*rules)[0].by_verdict[FG_VERDICT_PASS].packets, 1u);
}

TEST_F(XdpLimiterTest, TcpFlagMatchingSelectsSyns) {
  RuleSpec syn = sourceRule(1, 1);
  syn.protocol = Protocol::kTcp;
  syn.tcp_flags_set = 0x02;
  syn.tcp_flags_clear = 0x10;
  load({syn});
  auto syn_frame = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").tcp(443, 0x02).build();
  auto ack_frame = PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").tcp(443, 0x10).build();
  EXPECT_EQ(passes(syn_frame, 3), 1);
  EXPECT_EQ(passes(ack_frame, 3), 3);
}

TEST_F(XdpLimiterTest, SourcesWithNoFreeSlotShareTheOverflowBucket) {
  AttachOptions options;
  options.table_slots = 4;  // one set of four ways
  load({sourceRule(1, 2)}, options);
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(run(udpFrom("192.0.2." + std::to_string(i))), XDP_PASS);
  }
  // every way holds a source that is not idle: newcomers share one bucket of 2
  EXPECT_EQ(run(udpFrom("192.0.2.10")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.11")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.12")), XDP_DROP);
  // a tracked source keeps its own bucket
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_DROP);
}

}  // namespace
}  // namespace floodgate::test
