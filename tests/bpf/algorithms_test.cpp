// SPDX-License-Identifier: MIT
// The window algorithms, source sets and bans in the real program, on a clock the test sets:
// nothing depends on how long a run takes, so each case runs once.
#include "bpf/xdp_fixture.h"
#include "floodgate/common/cidr.h"
#include "kernel/system.h"

namespace floodgate::test {
namespace {

class AlgorithmTest : public XdpProgramTest {
 protected:
  std::vector<uint8_t> from(const std::string& src) {
    return PacketBuilder().eth().ipv4(src, "198.51.100.1").udp(53).build();
  }

  // Runs `frame` `times` times inside one window of `rules` on the test clock; returns how
  // many passed.
  int passesInOneWindow(const std::vector<uint8_t>& frame, int times,
                        const std::vector<RuleSpec>& rules) {
    AttachOptions options;
    options.test_clock_hz = 1000;
    load(rules, options);
    setClock(167 * 60'000);  // the first instant of a minute
    return passes(frame, times);
  }
};

constexpr uint64_t kMinute = 60000000000ULL;

TEST_F(AlgorithmTest, AFixedWindowAdmitsItsCountAndNoMore) {
  RuleSpec rule = sourceRule(1, 1);
  rule.algorithm = Algorithm::kFixedWindow;
  rule.window_ns = kMinute;  // 60 packets per window
  EXPECT_EQ(passesInOneWindow(from("192.0.2.1"), 70, {rule}), 60);
}

TEST_F(AlgorithmTest, ASlidingWindowAdmitsItsCountAndNoMore) {
  RuleSpec rule = sourceRule(1, 1);
  rule.algorithm = Algorithm::kSlidingWindow;
  rule.window_ns = kMinute;
  EXPECT_EQ(passesInOneWindow(from("192.0.2.1"), 70, {rule}), 60);
}

// The unit clock wraps every 2^48 ns (3.26 days), and the window after the wrap is window 0:
// a sliding window still weighs the count of the last window before it, so a source that
// used its limit there does not get it again just after.
TEST_F(AlgorithmTest, ASlidingWindowKeepsItsPreviousCountAcrossTheClockWrap) {
  // the test clock's last tick before the unit clock wraps, at 1000 Hz: in the period's
  // last window, which the wrap cuts short
  constexpr uint64_t kLastTickBeforeTheWrap = UINT64_MAX / (1000000ULL << FG_TIME_SHIFT);
  RuleSpec rule = sourceRule(1, 1);
  rule.algorithm = Algorithm::kSlidingWindow;
  rule.window_ns = 10'000'000'000ULL;  // 10 packets per window
  AttachOptions options;
  options.test_clock_hz = 1000;
  load({rule}, options);
  auto frame = from("192.0.2.9");
  setClock(kLastTickBeforeTheWrap - 2);  // the last window is 6.7 ms long at 10 s
  EXPECT_EQ(passes(frame, 12), 10);
  setClock(kLastTickBeforeTheWrap + 2);  // 1 or 2 ms into window 0
  EXPECT_EQ(passes(frame, 10), 1) << "the previous window's 10 still weigh 9.99";
}

TEST_F(AlgorithmTest, AFixedWindowCountsBytes) {
  RuleSpec rule;
  rule.algorithm = Algorithm::kFixedWindow;
  rule.window_ns = kMinute;
  rule.limit.bits_per_s = 8 * 100;  // 6000 bytes per minute
  auto frame =
      PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(53).payload(1000 - 42).build();
  EXPECT_EQ(passesInOneWindow(frame, 10, {rule}), 6);
}

TEST_F(AlgorithmTest, ARuleWithASourceSetOnlyMatchesThoseSources) {
  RuleSpec listed = sourceRule(1, 1);
  listed.sources = {*parseCidr("192.0.2.0/24"), *parseCidr("2001:db8::/32")};
  RuleSpec inner = sourceRule(1, 2);
  inner.sources = {*parseCidr("192.0.2.128/25")};
  load({listed, inner});
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 1);
  // inside both sets: the /24 rule still applies through the longer /25 entry
  EXPECT_EQ(passes(from("192.0.2.200"), 3), 1);
  EXPECT_EQ(passes(from("198.51.100.7"), 5), 5);
  auto v6 = PacketBuilder().eth().ipv6("2001:db8:5::1", "2001:db8::2").udp(53).build();
  EXPECT_EQ(passes(v6, 3), 1);
}

TEST_F(AlgorithmTest, ARuleThatBansStartsABanTheProgramEnforces) {
  RuleSpec rule = sourceRule(1, 2);
  rule.action = ExceedAction::kBan;
  rule.ban_ns = kMinute;
  load({rule});
  EXPECT_EQ(passes(from("192.0.2.1"), 3), 2);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 1u);
  EXPECT_EQ(run(from("192.0.2.1")), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  ASSERT_EQ(bans->size(), 1u);
  EXPECT_EQ((*bans)[0].cidr.toString(), "192.0.2.1");
  EXPECT_EQ((*bans)[0].by, "rule0");
  EXPECT_GT((*bans)[0].remaining_ns, kMinute - 1000000000ULL);
  EXPECT_EQ(run(from("192.0.2.2")), XDP_PASS);  // only that source
}

TEST_F(AlgorithmTest, AManualBanDropsUntilItExpiresWithNoControllerHelp) {
  // The controller dates a ban by the kernel's jiffies; the program reads the test clock, at
  // the kernel's HZ, set once before the ban could have started and once past its end.
  constexpr uint64_t kBanNs = 200'000'000;
  auto hz = kernelHz();
  ASSERT_TRUE(hz.ok());
  const uint64_t tick_ns = 1'000'000'000ULL / *hz;
  AttachOptions options;
  options.test_clock_hz = *hz;
  load({sourceRule(1000, 1000)}, options);
  auto before = currentJiffies();
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.0/24"), kBanNs).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("2001:db8::/48"), 0).ok());  // forever
  auto after = currentJiffies();
  ASSERT_TRUE(after.ok());
  setClock(*before);
  EXPECT_EQ(run(from("192.0.2.77")), XDP_DROP);
  // the ban lasts kBanNs rounded up to whole ticks from a reading no later than `after`
  setClock(*after + (kBanNs + tick_ns - 1) / tick_ns + 1);
  EXPECT_EQ(run(from("192.0.2.77")), XDP_PASS);
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  ASSERT_EQ(bans->size(), 1u);  // the program removed the expired one itself
  EXPECT_TRUE((*bans)[0].forever);
  auto v6 = PacketBuilder().eth().ipv6("2001:db8:0:1::1", "2001:db8::2").udp(53).build();
  EXPECT_EQ(run(v6), XDP_DROP);
  ASSERT_TRUE(*limiter().banRemove(*parseCidr("2001:db8::/48")));
  EXPECT_EQ(run(v6), XDP_PASS);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 2u);
}

}  // namespace
}  // namespace floodgate::test
