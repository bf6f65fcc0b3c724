// SPDX-License-Identifier: MIT
// The window algorithms, source sets and bans in the real program. Windows are long and a
// run that straddles a window boundary is repeated, so outcomes do not depend on timing.
#include <unistd.h>

#include "bpf/xdp_fixture.h"
#include "fg_gcra.h"
#include "floodgate/common/cidr.h"
#include "kernel/system.h"

namespace floodgate::test {
namespace {

class AlgorithmTest : public XdpProgramTest {
 protected:
  std::vector<uint8_t> from(const std::string& src) {
    return PacketBuilder().eth().ipv4(src, "198.51.100.1").udp(53).build();
  }

  static uint64_t windowNow(uint64_t window_ns) {
    return *currentJiffies() * (fg_tick_units(*kernelHz()) >> FG_TIME_SHIFT) / window_ns;
  }

  // Runs `frame` `times` times inside one window of `window_ns`; returns how many passed.
  int passesInOneWindow(const std::vector<uint8_t>& frame, int times, uint64_t window_ns,
                        const std::vector<RuleSpec>& rules) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      load(rules);
      uint64_t before = windowNow(window_ns);
      int passed = passes(frame, times);
      if (windowNow(window_ns) == before) return passed;
      TearDown();
      SetUp();
    }
    ADD_FAILURE() << "every attempt straddled a window boundary";
    return -1;
  }
};

constexpr uint64_t kMinute = 60000000000ULL;

TEST_F(AlgorithmTest, AFixedWindowAdmitsItsCountAndNoMore) {
  RuleSpec rule = sourceRule(1, 1);
  rule.algorithm = Algorithm::kFixedWindow;
  rule.window_ns = kMinute;  // 60 packets per window
  EXPECT_EQ(passesInOneWindow(from("192.0.2.1"), 70, kMinute, {rule}), 60);
}

TEST_F(AlgorithmTest, ASlidingWindowAdmitsItsCountAndNoMore) {
  RuleSpec rule = sourceRule(1, 1);
  rule.algorithm = Algorithm::kSlidingWindow;
  rule.window_ns = kMinute;
  EXPECT_EQ(passesInOneWindow(from("192.0.2.1"), 70, kMinute, {rule}), 60);
}

TEST_F(AlgorithmTest, AFixedWindowCountsBytes) {
  RuleSpec rule;
  rule.algorithm = Algorithm::kFixedWindow;
  rule.window_ns = kMinute;
  rule.limit.bits_per_s = 8 * 100;  // 6000 bytes per minute
  auto frame =
      PacketBuilder().eth().ipv4("192.0.2.1", "198.51.100.1").udp(53).payload(1000 - 42).build();
  EXPECT_EQ(passesInOneWindow(frame, 10, kMinute, {rule}), 6);
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
  // The ban's clock is the kernel's jiffies: the test reads them around each step, so a
  // slow syscall or a late wake-up can only make it retry, never decide wrongly.
  constexpr uint64_t kBanNs = 200'000'000;
  auto hz = kernelHz();
  ASSERT_TRUE(hz.ok());
  const uint64_t tick_ns = 1'000'000'000ULL / *hz;
  uint64_t banned_at = 0;
  bool seen_in_force = false;
  for (int attempt = 0; attempt < 3 && !seen_in_force; ++attempt) {
    if (attempt) {
      TearDown();
      SetUp();
    }
    load({sourceRule(1000, 1000)});
    auto before = currentJiffies();
    ASSERT_TRUE(before.ok());
    banned_at = *before;
    ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.0/24"), kBanNs).ok());
    ASSERT_TRUE(limiter().banAdd(*parseCidr("2001:db8::/48"), 0).ok());  // forever
    const int verdict = run(from("192.0.2.77"));
    auto after = currentJiffies();
    ASSERT_TRUE(after.ok());
    if ((*after - banned_at + 1) * tick_ns < kBanNs) {  // surely before the ban ran out
      EXPECT_EQ(verdict, XDP_DROP);
      seen_in_force = true;
    }
  }
  ASSERT_TRUE(seen_in_force) << "every attempt took longer than the ban";
  // past the ban by two ticks on the kernel's clock, however long the sleeps take
  for (;;) {
    auto now = currentJiffies();
    ASSERT_TRUE(now.ok());
    if ((*now - banned_at) * tick_ns >= kBanNs + 2 * tick_ns) break;
    usleep(20000);
  }
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
