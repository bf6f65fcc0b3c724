// SPDX-License-Identifier: MIT
// Rule changes on a loaded program: reloads keep the state of unchanged rules, re-keyed
// rules start afresh, `set` changes a threshold in place, and a bad config changes nothing.
#include <chrono>

#include "bpf/xdp_fixture.h"
#include "controller/rule_compiler.h"
#include "floodgate/common/cidr.h"
#include "kernel/bpf_map.h"
#include "kernel/pins.h"

namespace floodgate::test {
namespace {

class ReloadTest : public XdpProgramTest {
 protected:
  std::vector<uint8_t> from(const std::string& src) {
    return PacketBuilder().eth().ipv4(src, "198.51.100.1").udp(53).build();
  }

  // What `floodgate reload` hands the limiter for `rules` (and, set by the caller, lists).
  AttachOptions reloadOf(std::vector<RuleSpec> rules) {
    AttachOptions options;
    options.interface = pin_name_;
    options.rules = named(std::move(rules));
    return options;
  }

  // Loads `rule` on lists of two entries a family.
  void loadWithListsOfTwo(const RuleSpec& rule) {
    AttachOptions small;
    small.list_max_entries = 2;
    load({rule}, small);
  }

  static std::vector<Cidr> cidrs(std::initializer_list<const char*> texts) {
    std::vector<Cidr> out;
    for (const char* text : texts) out.push_back(*parseCidr(text));
    return out;
  }
};

TEST_F(ReloadTest, AnUnchangedRuleKeepsItsBucketsAcrossAReload) {
  load({sourceRule(1, 3)});
  EXPECT_EQ(passes(from("192.0.2.1"), 2), 2);
  RuleSpec added = sourceRule(1, 100);
  added.name = "added";
  reload({sourceRule(1, 3), added});
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 1);  // one token left, as before the reload
}

TEST_F(ReloadTest, ChangingHowARuleKeysStartsItAfresh) {
  load({sourceRule(1, 3)});
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 3);
  RuleSpec wider = sourceRule(1, 3);
  wider.ipv4_prefix = 24;
  reload({wider});
  EXPECT_EQ(passes(from("192.0.2.1"), 4), 3);
}

TEST_F(ReloadTest, SetChangesOneThresholdLiveAndKeepsTheBucket) {
  load({sourceRule(1, 3)});
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 3);
  LimitChange change;
  change.burst = 5;
  ASSERT_TRUE(limiter().setLimits("rule0", change).ok());
  // the bucket kept its three charges: two more fit under the new burst of five
  EXPECT_EQ(passes(from("192.0.2.1"), 4), 2);
  auto rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0]).burst, 5u);
  Status unknown = limiter().setLimits("nope", change);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("no rule named 'nope' (rules: rule0)"), std::string::npos);
}

// An untracked bucket with a pps of its own keeps the rule's bps, and a `set` of the rule's
// bps moves that one with it while the untracked pps stays its own.
TEST_F(ReloadTest, SetMovesTheUntrackedRatesThatFollowTheRulesAndNoOther) {
  RuleSpec rule = sourceRule(10, 20);
  rule.limit.bits_per_s = 1'000'000;
  rule.limit.burst_bytes = 10'000;
  rule.untracked = {.pps = 500, .burst = 1000};
  load({rule});
  LimitChange change;
  change.bits_per_s = 2'000'000;
  change.pps = 40;
  ASSERT_TRUE(limiter().setLimits("rule0", change).ok());
  auto rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  const fg_rule& running = (*rules)[0];
  EXPECT_EQ(describeLimits(running).bits_per_s, 2'000'000u);
  EXPECT_EQ(describeLimits(running, running.untracked).bits_per_s, 2'000'000u) << "follows";
  EXPECT_EQ(describeLimits(running, running.untracked).pps, 500u) << "its own";
  EXPECT_EQ(running.untracked[FG_LIMIT_BPS].capacity, running.limits[FG_LIMIT_BPS].capacity);
}

// A rule an older floodgate wrote has untracked_own 1 for "both rates its own": a `set` of the
// rule's bps then leaves an untracked bps that differs from the rule's as it is, rather than
// taking it for one that follows.
TEST_F(ReloadTest, SetLeavesAnUntrackedBpsOfItsOwnThatAnOlderFloodgateWrote) {
  RuleSpec rule = sourceRule(10, 20);
  rule.limit.bits_per_s = 1'000'000;
  rule.limit.burst_bytes = 10'000;
  rule.untracked = {.pps = 500, .burst = 1000, .bits_per_s = 50'000'000, .burst_bytes = 100'000};
  load({rule});
  auto rules_map = BpfMap<uint32_t, fg_rule>::openPinned(mapPinPath(pin_name_, "rules"), "rules");
  ASSERT_TRUE(rules_map.ok()) << rules_map.error().message;
  auto active = limiter().activeRules();
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 1u);
  for (uint32_t pos : {0u, static_cast<uint32_t>(FG_MAX_RULES)}) {  // whichever set is active
    auto written = rules_map->lookup(pos);
    ASSERT_TRUE(written.ok());
    if (std::string(written->name) != "rule0") continue;
    written->untracked_own = 1;  // as an older floodgate wrote it
    ASSERT_TRUE(rules_map->update(pos, *written).ok());
  }
  LimitChange change;
  change.bits_per_s = 2'000'000;
  ASSERT_TRUE(limiter().setLimits("rule0", change).ok());
  active = limiter().activeRules();
  ASSERT_TRUE(active.ok());
  const fg_rule& running = (*active)[0];
  EXPECT_EQ(describeLimits(running).bits_per_s, 2'000'000u);
  EXPECT_EQ(describeLimits(running, running.untracked).bits_per_s, 50'000'000u) << "its own";
}

// A rate so high that one tick of it is more than the burst gets a burst of a tick's worth;
// a rate set back without a burst gets the least burst again (a tick's worth of it), and is
// not refused for the burst of the mistake (10G for 10k: a burst of 40M packets).
TEST_F(ReloadTest, ARateSetBackDropsTheBurstTheMistakenRateWasGiven) {
  AttachOptions options;
  options.test_clock_hz = 250;
  load({sourceRule(10000, 1000)}, options);
  LimitChange typo;
  typo.pps = 10'000'000'000ULL;
  ASSERT_TRUE(limiter().setLimits("rule0", typo).ok());
  auto rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_GE(describeLimits((*rules)[0]).burst, 39'000'000u) << "about a tick's worth of 10G";
  LimitChange back;
  back.pps = 10000;
  Status fixed = limiter().setLimits("rule0", back);
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0]).pps, 10000u);
  EXPECT_EQ(describeLimits((*rules)[0]).burst, 41u) << "a tick of 10k at 250 Hz, and one";
  // a burst the operator chose stays through a change of rate (above a tick's worth of both)
  LimitChange chosen;
  chosen.burst = 100;
  ASSERT_TRUE(limiter().setLimits("rule0", chosen).ok());
  back.pps = 20000;
  ASSERT_TRUE(limiter().setLimits("rule0", back).ok());
  rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0]).burst, 100u);
}

// A debt run up under a larger burst is more than the new capacity plus a second ahead of
// now, which a bucket read as a wrapped (idle) time would hand the source a full bucket at
// once: lowering a limit under a flood must hold the flooders, not refill them.
TEST_F(ReloadTest, LoweringABurstKeepsASourceInDebtHeld) {
  AttachOptions options;
  options.test_clock_hz = 250;
  load({sourceRule(1, 100)}, options);
  setClock(100000);
  EXPECT_EQ(passes(from("192.0.2.1"), 120), 100);  // its bucket 100 s ahead of now
  LimitChange change;
  change.burst = 3;
  ASSERT_TRUE(limiter().setLimits("rule0", change).ok());
  EXPECT_EQ(passes(from("192.0.2.1"), 5), 0) << "the debt stands";
  // forgiven down to an empty bucket under the new burst: a token a second from here
  setClock(100000 + 250);
  EXPECT_EQ(passes(from("192.0.2.1"), 5), 1);
  EXPECT_EQ(passes(from("192.0.2.2"), 5), 3) << "a new source gets the new burst";
}

// A bucket time of 0 was never written (a slot just taken): idle, also in the last hour
// before the unit clock wraps, where 0 is less than the largest capacity ahead of now.
// The test clock's last tick before the unit clock wraps, at 250 Hz.
constexpr uint64_t kLastTickBeforeTheWrap = UINT64_MAX / ((1000000000ULL / 250) << FG_TIME_SHIFT);

TEST_F(ReloadTest, ANewSourceGetsItsBurstJustBeforeTheUnitClockWraps) {
  AttachOptions options;
  options.test_clock_hz = 250;
  load({sourceRule(1, 3)}, options);
  uint64_t sources = 0;
  for (uint64_t ticks_left : {250ULL * 60, 1ULL}) {  // the clock moves on
    setClock(kLastTickBeforeTheWrap - ticks_left);
    const std::string src = "192.0.2." + std::to_string(10 + ticks_left % 200);
    EXPECT_EQ(passes(from(src), 5), 3) << ticks_left << " ticks before the wrap";
    auto rules = limiter().ruleCounters();
    ASSERT_TRUE(rules.ok());
    EXPECT_EQ((*rules)[0].table[FG_TABLE_NEW_SOURCE], ++sources) << "in a slot of its own";
  }
}

// A rule's state reset to 0 (a new rule's global or untracked bucket) is full there too.
TEST_F(ReloadTest, ANewGlobalBucketIsFullJustBeforeTheUnitClockWraps) {
  AttachOptions options;
  options.test_clock_hz = 250;
  RuleSpec rule = sourceRule(1, 3);
  rule.key = KeyKind::kGlobal;
  load({rule}, options);
  setClock(kLastTickBeforeTheWrap - 250 * 60);
  EXPECT_EQ(passes(from("192.0.2.1"), 5), 3);
}

// Packets in flight at a flip may still read the set it left (a drop reads its earlier rules
// there again, to hand their charges back), so two changes in a row leave that set alone
// for 10 ms before rewriting it: a lower bound, which no machine's speed can break.
TEST_F(ReloadTest, ChangesInARowRewriteTheSetAFlipLeftOnlyAfterAMargin) {
  load({sourceRule(1, 3)});
  const auto start = std::chrono::steady_clock::now();
  LimitChange change;
  for (uint64_t burst : {4, 5, 6}) {
    change.burst = burst;
    ASSERT_TRUE(limiter().setLimits("rule0", change).ok());
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
  auto rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0]).burst, 6u);
}

TEST_F(ReloadTest, ASetOverLimitsThatAreNoLongerRunningChangesNothing) {
  load({sourceRule(1, 3)});
  LimitChange by_hand;
  by_hand.pps = 7;
  by_hand.burst = 4;
  ASSERT_TRUE(limiter().setLimits("rule0", by_hand).ok());
  // a writer that still believes the rule runs 1/3 (what it set last) changes nothing
  LimitChange squeeze;
  squeeze.pps = 1;
  squeeze.burst = 2;
  auto stale = limiter().setLimitsIfRunning("rule0", {1, 3, 0, 0}, squeeze);
  ASSERT_TRUE(stale.ok()) << stale.error().message;
  EXPECT_FALSE(*stale);
  auto rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0]), (LimitSpec{7, 4, 0, 0})) << "the hand-set limits stay";
  // over the limits that do run, it applies
  auto current = limiter().setLimitsIfRunning("rule0", {7, 4, 0, 0}, squeeze);
  ASSERT_TRUE(current.ok()) << current.error().message;
  EXPECT_TRUE(*current);
  rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0]), (LimitSpec{1, 2, 0, 0}));
  EXPECT_FALSE(limiter().setLimitsIfRunning("nope", {1, 2, 0, 0}, squeeze).ok());
}

TEST_F(ReloadTest, AnInvalidReloadChangesNothing) {
  load({sourceRule(1, 2)});
  RuleSpec broken = sourceRule(1, 0);  // burst below 1
  broken.name = "broken";
  RuleSpec fine = sourceRule(1000, 1000);
  fine.name = "rule0";
  EXPECT_FALSE(limiter().reload(reloadOf({fine, broken})).ok());
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 2);  // still the old rule
}

// A reload keeps the running list size: a list larger than it fails the reload before any
// of it applies, rules included, rather than half way through the list.
TEST_F(ReloadTest, AListTheRunningLimiterCannotHoldChangesNothing) {
  loadWithListsOfTwo(sourceRule(1, 2));
  AttachOptions options = reloadOf({sourceRule(1000, 1000)});
  options.deny = cidrs({"192.0.2.0/24", "203.0.113.0/24", "198.51.100.0/24", "2001:db8::/32"});
  Status status = limiter().reload(options);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "the deny list holds 3 IPv4 prefixes, more than the 2 a list of the running limiter "
            "on '" +
                pin_name_ + "' holds: shorten it, or 'floodgate detach " + pin_name_ +
                "' and attach with a larger defaults.list_size (bucket state starts over)");
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 2) << "still the old rule";
  auto denied = limiter().listEntries(ListKind::kDeny);
  ASSERT_TRUE(denied.ok());
  EXPECT_TRUE(denied->empty());
}

// Old and new lists that fit only one at a time: the old entries go first, then the new.
TEST_F(ReloadTest, ANewListThatFitsOnlyWithoutTheOldOneReplacesIt) {
  loadWithListsOfTwo(sourceRule(1000, 1000));
  AttachOptions options = reloadOf({sourceRule(1000, 1000)});
  options.deny = cidrs({"192.0.2.0/24", "203.0.113.0/24"});
  ASSERT_TRUE(limiter().reload(options).ok());
  options.deny = cidrs({"192.0.2.0/24", "198.51.100.0/24"});
  Status status = limiter().reload(options);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(run(from("192.0.2.9")), XDP_DROP);
  EXPECT_EQ(run(from("198.51.100.9")), XDP_DROP);
  EXPECT_EQ(run(from("203.0.113.9")), XDP_PASS);
  auto settings = limiter().settings();
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->deny_entries[FG_FAMILY_V4], 2u);
}

// The rules' source sets share one pair of tries per rule set: more prefixes than they hold
// fail the reload before anything changes (the config check says so first).
TEST_F(ReloadTest, SourceSetsLargerThanTheirTriesChangeNothing) {
  load({sourceRule(1, 2)});
  RuleSpec sets = sourceRule(1000, 1000);
  for (uint32_t i = 0; i <= FG_LIST_MAX_ENTRIES; ++i) {
    Cidr cidr = *parseCidr("10.0.0.0");
    cidr.addr[1] = static_cast<uint8_t>(i >> 16);
    cidr.addr[2] = static_cast<uint8_t>(i >> 8);
    cidr.addr[3] = static_cast<uint8_t>(i);
    sets.sources.push_back(cidr);
  }
  Status status = limiter().reload(reloadOf({sets}));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "the rules' match.src sets hold 262145 IPv4 prefixes, more than the 262144 a rule set "
            "holds: merge them into shorter prefixes");
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 2) << "still the old rule";
}

TEST_F(ReloadTest, ReloadSyncsListsToTheConfig) {
  load({sourceRule(1, 1)});
  AttachOptions options = reloadOf({sourceRule(1, 1)});
  options.deny = cidrs({"192.0.2.0/24"});
  ASSERT_TRUE(limiter().reload(options).ok());
  EXPECT_EQ(run(from("192.0.2.9")), XDP_DROP);
  options.deny = std::vector<Cidr>{};
  ASSERT_TRUE(limiter().reload(options).ok());
  EXPECT_EQ(run(from("192.0.2.9")), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_DENY), 1u);
}

}  // namespace
}  // namespace floodgate::test
