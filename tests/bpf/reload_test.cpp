// SPDX-License-Identifier: MIT
// Rule changes on a loaded program: reloads keep the state of unchanged rules, re-keyed
// rules start afresh, `set` changes a threshold in place, and a bad config changes nothing.
#include <chrono>

#include "bpf/xdp_fixture.h"
#include "controller/rule_compiler.h"
#include "floodgate/common/cidr.h"

namespace floodgate::test {
namespace {

class ReloadTest : public XdpProgramTest {
 protected:
  std::vector<uint8_t> from(const std::string& src) {
    return PacketBuilder().eth().ipv4(src, "198.51.100.1").udp(53).build();
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
  AttachOptions options;
  options.interface = pin_name_;
  RuleSpec broken = sourceRule(1, 0);  // burst below 1
  broken.name = "broken";
  RuleSpec fine = sourceRule(1000, 1000);
  fine.name = "rule0";
  options.rules = {fine, broken};
  EXPECT_FALSE(limiter().reload(options).ok());
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 2);  // still the old rule
}

TEST_F(ReloadTest, ReloadSyncsListsToTheConfig) {
  load({sourceRule(1, 1)});
  AttachOptions options;
  options.interface = pin_name_;
  options.rules = named({sourceRule(1, 1)});
  options.deny = std::vector<Cidr>{*parseCidr("192.0.2.0/24")};
  ASSERT_TRUE(limiter().reload(options).ok());
  EXPECT_EQ(run(from("192.0.2.9")), XDP_DROP);
  options.deny = std::vector<Cidr>{};
  ASSERT_TRUE(limiter().reload(options).ok());
  EXPECT_EQ(run(from("192.0.2.9")), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_DENY), 1u);
}

}  // namespace
}  // namespace floodgate::test
