// SPDX-License-Identifier: MIT
// Unit tests of controller/rule_compiler: RuleSpec to struct fg_rule, its checks and read-back.
#include "controller/rule_compiler.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "fg_gcra.h"

namespace floodgate {
namespace {

constexpr uint64_t kUnitsPerMs = 1000000ULL << FG_TIME_SHIFT;
constexpr uint64_t kUnitsPerHour = 3600000000000ULL << FG_TIME_SHIFT;

RuleSpec ppsRule(uint64_t pps, uint64_t burst) {
  RuleSpec spec;
  spec.limit.pps = pps;
  spec.limit.burst = burst;
  return spec;
}

RuleSpec bpsRule(uint64_t bits_per_s, uint64_t burst_bytes) {
  RuleSpec spec;
  spec.limit.bits_per_s = bits_per_s;
  spec.limit.burst_bytes = burst_bytes;
  return spec;
}

// The message of a spec that must not compile, with its kind checked.
std::string usageError(const RuleSpec& spec) {
  auto rule = compileRule(spec);
  if (rule.ok()) return "(compiled)";
  EXPECT_EQ(rule.error().kind, ErrorKind::kUsage) << rule.error().message;
  return rule.error().message;
}

TEST(Intervals, PacketAndByteIntervalsRoundUp) {
  EXPECT_EQ(packetInterval(1), 65536000000000u);  // 1 s
  EXPECT_EQ(packetInterval(1000), kUnitsPerMs);
  EXPECT_EQ(packetInterval(3), 21845333333334u);             // 21845333333333.3, rounded up
  EXPECT_EQ(packetInterval(1000000000), 65536u);             // 1 ns
  EXPECT_EQ(byteInterval(8), 65536000000000u);               // 1 byte/s
  EXPECT_EQ(byteInterval(1000000), 8000u << FG_TIME_SHIFT);  // 8 us per byte
  EXPECT_EQ(byteInterval(1000000000), 524288u);              // 8 ns per byte
  EXPECT_EQ(byteInterval(10000000000ULL), 52429u);           // 52428.8, rounded up
  EXPECT_EQ(byteInterval(100000000000ULL), 5243u);           // 5242.88, rounded up
}

TEST(Intervals, DefaultBursts) {
  EXPECT_EQ(defaultBurst(1), 1u);
  EXPECT_EQ(defaultBurst(9), 1u);
  EXPECT_EQ(defaultBurst(10000), 1000u);
  EXPECT_EQ(defaultBurstBytes(8000), 1518u);      // 100 bytes, raised to a full frame
  EXPECT_EQ(defaultBurstBytes(1000000), 12500u);  // 125000 B/s for 0.1 s
  EXPECT_EQ(defaultBurstBytes(1000000000), 12500000u);
}

TEST(CompileRule, PpsLimit) {
  auto rule = compileRule(ppsRule(1000, 100));
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->limits[FG_LIMIT_PPS].interval, kUnitsPerMs);
  EXPECT_EQ(rule->limits[FG_LIMIT_PPS].capacity, 100 * kUnitsPerMs);
  EXPECT_EQ(rule->limits[FG_LIMIT_BPS].interval, 0u) << "no bps limit was asked for";
  EXPECT_EQ(rule->limits[FG_LIMIT_BPS].capacity, 0u);
}

TEST(CompileRule, TheUntrackedBucketFollowsTheLimitUnlessSetApart) {
  auto rule = compileRule(ppsRule(1000, 100));
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->untracked_own, 0);
  EXPECT_EQ(std::memcmp(rule->untracked, rule->limits, sizeof(rule->limits)), 0);

  RuleSpec spec = ppsRule(1000, 100);
  spec.untracked = {.pps = 50000, .burst = 5000};
  rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->untracked_own, FG_UNTRACKED_OWN_PPS);
  EXPECT_EQ(rule->untracked[FG_LIMIT_PPS].interval, packetInterval(50000));
  EXPECT_EQ(rule->untracked[FG_LIMIT_PPS].capacity, 5000 * packetInterval(50000));
  EXPECT_EQ(describeLimits(*rule, rule->untracked).pps, 50000u);
}

// A rate untracked leaves out is the rule's own: an untracked pps alone does not lift the
// rule's bps off the sources without a slot, nor an untracked bps its pps.
TEST(CompileRule, ARateTheUntrackedBucketLeavesOutIsTheRules) {
  RuleSpec spec = ppsRule(1000, 100);
  spec.limit.bits_per_s = 10'000'000;
  spec.limit.burst_bytes = 20'000;
  spec.untracked = {.pps = 50000, .burst = 5000};
  auto rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->untracked_own, FG_UNTRACKED_OWN_PPS);
  EXPECT_EQ(rule->untracked[FG_LIMIT_PPS].interval, packetInterval(50000));
  EXPECT_EQ(rule->untracked[FG_LIMIT_BPS].interval, rule->limits[FG_LIMIT_BPS].interval);
  EXPECT_NE(rule->untracked[FG_LIMIT_BPS].interval, 0u);
  EXPECT_EQ(rule->untracked[FG_LIMIT_BPS].capacity, rule->limits[FG_LIMIT_BPS].capacity);

  spec.untracked = {.bits_per_s = 100'000'000, .burst_bytes = 200'000};
  rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->untracked_own, FG_UNTRACKED_OWN_BPS);
  EXPECT_EQ(rule->untracked[FG_LIMIT_PPS].interval, rule->limits[FG_LIMIT_PPS].interval);
  EXPECT_EQ(rule->untracked[FG_LIMIT_PPS].capacity, rule->limits[FG_LIMIT_PPS].capacity);
  EXPECT_EQ(describeLimits(*rule, rule->untracked).bits_per_s, 100'000'000u);
}

TEST(CompileRule, NewSourcesCapIsAGcraWithATenthOfASecondOfBurst) {
  RuleSpec spec = ppsRule(1000, 100);
  spec.new_sources_per_s = 5000;
  auto rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->new_sources.interval, packetInterval(5000));
  EXPECT_EQ(rule->new_sources.capacity, 500 * packetInterval(5000));
  EXPECT_EQ(describeNewSources(*rule), 5000u);
  spec.new_sources_per_s = 0;
  EXPECT_EQ(compileRule(spec)->new_sources.interval, 0u) << "0: no cap";
  spec.key = KeyKind::kGlobal;
  spec.new_sources_per_s = 5000;
  EXPECT_EQ(compileRule(spec)->new_sources.interval, 0u) << "a global rule has no sources";
}

TEST(LinkControlBudget, CompilesToAGcraAndReadsBackAsWritten) {
  auto budget = compileLinkControl({1000, 3000});
  ASSERT_TRUE(budget.ok()) << budget.error().message;
  EXPECT_EQ(budget->interval, packetInterval(1000));
  EXPECT_EQ(budget->capacity, 3000 * packetInterval(1000));
  EXPECT_EQ(describeLinkControl(*budget), (LinkControlBudget{1000, 3000}));
  EXPECT_EQ(compileLinkControl({0, 0})->interval, 0u) << "pps 0: without bound";
  EXPECT_EQ(describeLinkControl(fg_limit{}), (LinkControlBudget{0, 0}));
  // a burst below a tick of tokens and a frame is raised to it, as a rule's is
  const uint64_t tick = fg_tick_units(100);
  auto small = compileLinkControl({1000, 1}, tick);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->capacity, tick + packetInterval(1000));
}

TEST(LinkControlBudget, ABurstOfNoneOrARateNoLinkNeedsIsRefused) {
  EXPECT_EQ(compileLinkControl({10, 0}).error().message,
            "link_control burst must be at least 1 (a frame must fit)");
  EXPECT_FALSE(compileLinkControl({kMaxLinkControlPps + 1, 1}).ok());
  EXPECT_TRUE(compileLinkControl({kMaxLinkControlPps, 1}).ok());
  EXPECT_FALSE(compileLinkControl({1, 3601}).ok()) << "more than an hour to refill";
}

TEST(CompileRule, UntrackedGoesWithASourceKey) {
  RuleSpec spec = ppsRule(1000, 100);
  spec.key = KeyKind::kGlobal;
  spec.untracked = {.pps = 10, .burst = 1};
  EXPECT_NE(usageError(spec).find("untracked goes with key: source"), std::string::npos);
}

TEST(CompileRule, RememberConnectedNeedsTcpPacketsOfAConnection) {
  RuleSpec spec = ppsRule(1000, 100);
  spec.remember_connected = true;
  EXPECT_EQ(compileRule(spec)->remember_connected, 1u) << "any protocol: its TCP packets prove";
  spec.protocol = Protocol::kTcp;
  EXPECT_EQ(compileRule(spec)->remember_connected, 1u);
  spec.remember_connected = false;
  EXPECT_EQ(compileRule(spec)->remember_connected, 0u);
  spec.remember_connected = true;
  spec.tcp_flags_set = 0x02;
  EXPECT_NE(usageError(spec).find("needs the segments of a connection"), std::string::npos);
  spec.tcp_flags_set = 0;
  spec.tcp_flags_clear = 0x10;  // ack: clear
  EXPECT_NE(usageError(spec).find("needs the segments of a connection"), std::string::npos);
  spec.tcp_flags_clear = 0x04;  // rst: clear leaves the connection's segments
  EXPECT_EQ(compileRule(spec)->remember_connected, 1u);
  spec.tcp_flags_clear = 0;
  for (Protocol other : {Protocol::kUdp, Protocol::kIcmp}) {
    spec.protocol = other;
    EXPECT_NE(usageError(spec).find("remember: connected needs TCP"), std::string::npos);
  }
  spec.remember_ns = 0;  // nothing remembered: nothing to prove
  EXPECT_TRUE(compileRule(spec).ok());
}

TEST(CompileRule, BpsLimit) {
  auto rule = compileRule(bpsRule(1000000000, 12500000));
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->limits[FG_LIMIT_BPS].interval, 524288u);
  EXPECT_EQ(rule->limits[FG_LIMIT_BPS].capacity, 12500000ULL * 524288u);  // 100 ms of bytes
  EXPECT_EQ(rule->limits[FG_LIMIT_PPS].interval, 0u);
}

TEST(CompileRule, BothLimits) {
  RuleSpec spec = ppsRule(3, 2);
  spec.limit.bits_per_s = 1000000;
  spec.limit.burst_bytes = 1518;
  auto rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->limits[FG_LIMIT_PPS].interval, 21845333333334u);
  EXPECT_EQ(rule->limits[FG_LIMIT_PPS].capacity, 2 * 21845333333334u);
  EXPECT_EQ(rule->limits[FG_LIMIT_BPS].interval, 8000u << FG_TIME_SHIFT);
  EXPECT_EQ(rule->limits[FG_LIMIT_BPS].capacity, 1518ULL * (8000ULL << FG_TIME_SHIFT));
}

TEST(CompileRule, CopiesTheMatchFields) {
  RuleSpec spec = ppsRule(10, 1);
  spec.id = 63;
  spec.epoch = 7;
  spec.name = std::string(31, 'n');
  spec.protocol = Protocol::kTcp;
  spec.key = KeyKind::kGlobal;
  spec.ipv4_prefix = 24;
  spec.ipv6_prefix = 48;
  spec.action = ExceedAction::kMonitor;
  spec.tcp_flags_set = 0x02;
  spec.tcp_flags_clear = 0x10;
  spec.dst_ports = {{53, 53}, {8000, 8080}};
  auto rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->id, 63u);
  EXPECT_EQ(rule->epoch, 7u);
  EXPECT_EQ(std::string(rule->name), std::string(31, 'n'));
  EXPECT_EQ(rule->name[31], '\0');
  EXPECT_EQ(rule->protocol, 6);
  EXPECT_EQ(rule->key_kind, FG_KEY_GLOBAL);
  EXPECT_EQ(rule->ipv4_prefix, 24);
  EXPECT_EQ(rule->ipv6_prefix, 48);
  EXPECT_EQ(rule->action, FG_ACTION_MONITOR);
  EXPECT_EQ(rule->tcp_flags_set, 0x02);
  EXPECT_EQ(rule->tcp_flags_clear, 0x10);
  ASSERT_EQ(rule->port_ranges, 2);
  EXPECT_EQ(rule->ports[0].first, 53);
  EXPECT_EQ(rule->ports[0].last, 53);
  EXPECT_EQ(rule->ports[1].first, 8000);
  EXPECT_EQ(rule->ports[1].last, 8080);
  EXPECT_EQ(rule->ports[2].first, 0);
  EXPECT_EQ(rule->ports[2].last, 0);
}

TEST(CompileRule, NoLimitIsAnError) {
  EXPECT_EQ(usageError(RuleSpec{}), "rule 'default' sets no limit: give a pps and/or bps rate");
}

TEST(CompileRule, BurstMustBeAtLeastOnePacket) {
  EXPECT_EQ(usageError(ppsRule(1000, 0)), "burst must be at least 1 packet");
  EXPECT_TRUE(compileRule(ppsRule(1000, 1)).ok());
}

TEST(CompileRule, BurstBytesMustHoldAFullSizeFrame) {
  EXPECT_EQ(usageError(bpsRule(1000000, 1517)),
            "burst bytes must be at least 1518 (one full-size frame), not 1517");
  EXPECT_EQ(usageError(bpsRule(1000000, 0)),
            "burst bytes must be at least 1518 (one full-size frame), not 0");
  EXPECT_TRUE(compileRule(bpsRule(1000000, 1518)).ok());
}

TEST(CompileRule, BurstMayTakeAnHourToRefillButNoMore) {
  // 1 pps: the interval is exactly 1 s, so a burst of 3600 is exactly an hour.
  auto hour = compileRule(ppsRule(1, 3600));
  ASSERT_TRUE(hour.ok()) << hour.error().message;
  EXPECT_EQ(hour->limits[FG_LIMIT_PPS].capacity, kUnitsPerHour);
  EXPECT_EQ(hour->limits[FG_LIMIT_PPS].capacity, FG_MAX_CAPACITY_UNITS);
  EXPECT_EQ(usageError(ppsRule(1, 3601)),
            "packet burst takes more than an hour to refill at its rate: lower the burst or "
            "raise the rate");

  // 8 bit/s is 1 byte/s: 3600 bytes is an hour.
  EXPECT_TRUE(compileRule(bpsRule(8, 3600)).ok());
  EXPECT_EQ(usageError(bpsRule(8, 3601)),
            "byte burst takes more than an hour to refill at its rate: lower the burst or "
            "raise the rate");

  // A burst so large that interval × burst overflows 64 bits is still caught.
  EXPECT_NE(usageError(ppsRule(1, 1ULL << 62)).find("more than an hour"), std::string::npos);
}

// What a window admits must fit the program's count of it: over it, the count would run into
// the window's id and start over, a limit never reached. The config parser says so for a
// file; `floodgate set` compiles a rule without it, so the compiler must too.
TEST(CompileRule, AWindowCountsNoMoreThanItsCounterHolds) {
  auto window = [](Algorithm algorithm, uint64_t pps, uint64_t bits_per_s) {
    RuleSpec spec;
    spec.algorithm = algorithm;
    spec.window_ns = 3600ULL * 1000000000;  // 1h
    spec.limit.pps = pps;
    spec.limit.bits_per_s = bits_per_s;
    return spec;
  };
  const uint64_t fixed_bytes_per_s = FG_FIXED_COUNT_MASK / 3600;
  auto fits = compileRule(window(Algorithm::kFixedWindow, 0, fixed_bytes_per_s * 8));
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  EXPECT_EQ(fits->limits[FG_LIMIT_BPS].capacity, fixed_bytes_per_s * 3600);
  EXPECT_EQ(usageError(window(Algorithm::kFixedWindow, 0, (fixed_bytes_per_s + 1) * 8)),
            "rule 'default': fixed_window counts at most " + std::to_string(FG_FIXED_COUNT_MASK) +
                " bytes per window: lower bps or shorten the window");
  // 3 Gbit/s for an hour; and a rate whose bytes per window pass 64 bits
  EXPECT_NE(usageError(window(Algorithm::kFixedWindow, 0, 3000000000ULL)).find("at most"),
            std::string::npos);
  EXPECT_NE(usageError(window(Algorithm::kFixedWindow, 0, ~0ULL)).find("at most"),
            std::string::npos);

  const uint64_t fixed_pps = FG_FIXED_COUNT_MASK / 3600;
  EXPECT_TRUE(compileRule(window(Algorithm::kFixedWindow, fixed_pps, 0)).ok());
  EXPECT_EQ(usageError(window(Algorithm::kFixedWindow, fixed_pps + 1, 0)),
            "rule 'default': fixed_window counts at most " + std::to_string(FG_FIXED_COUNT_MASK) +
                " packets per window: lower pps or shorten the window");
  EXPECT_NE(usageError(window(Algorithm::kFixedWindow, ~0ULL, 0)).find("at most"),
            std::string::npos);

  const uint64_t sliding_pps = FG_SLIDING_COUNT_MAX / 3600;
  EXPECT_TRUE(compileRule(window(Algorithm::kSlidingWindow, sliding_pps, 0)).ok());
  EXPECT_EQ(usageError(window(Algorithm::kSlidingWindow, sliding_pps + 1, 0)),
            "rule 'default': sliding_window counts at most " +
                std::to_string(FG_SLIDING_COUNT_MAX) +
                " packets per window: lower pps or shorten the window");
}

TEST(CompileRule, OnlyASourceRuleBans) {
  RuleSpec spec = ppsRule(10, 10);
  spec.action = ExceedAction::kBan;
  spec.ban_ns = 60'000'000'000ULL;
  EXPECT_TRUE(compileRule(spec).ok());
  spec.key = KeyKind::kGlobal;
  EXPECT_EQ(usageError(spec),
            "rule 'default' bans with a global key: a global bucket is everyone's, so the source "
            "whose packet meets its limit went over nothing of its own; ban with key: source");
}

TEST(CompileRule, PrefixesMustFitTheFamily) {
  RuleSpec spec = ppsRule(10, 1);
  spec.ipv4_prefix = 0;
  EXPECT_EQ(usageError(spec), "ipv4 prefix must be 1 to 32, not 0");
  spec.ipv4_prefix = 33;
  EXPECT_EQ(usageError(spec), "ipv4 prefix must be 1 to 32, not 33");
  spec.ipv4_prefix = 32;
  spec.ipv6_prefix = 0;
  EXPECT_EQ(usageError(spec), "ipv6 prefix must be 1 to 128, not 0");
  spec.ipv6_prefix = 129;
  EXPECT_EQ(usageError(spec), "ipv6 prefix must be 1 to 128, not 129");
  spec.ipv4_prefix = 1;
  spec.ipv6_prefix = 128;
  EXPECT_TRUE(compileRule(spec).ok());
}

TEST(CompileRule, AtMostEightPortRanges) {
  RuleSpec spec = ppsRule(10, 1);
  spec.dst_ports.assign(FG_MAX_PORT_RANGES, PortRange{80, 80});
  EXPECT_TRUE(compileRule(spec).ok());
  spec.dst_ports.push_back({443, 443});
  EXPECT_EQ(usageError(spec), "rule 'default' has more than 8 port ranges");
}

TEST(CompileRule, BackwardsPortRangesAreErrors) {
  RuleSpec spec = ppsRule(10, 1);
  spec.dst_ports = {{53, 53}, {8080, 8000}};
  EXPECT_EQ(usageError(spec), "port range 8080-8000 is backwards");
  spec.dst_ports = {{0, 65535}};
  EXPECT_TRUE(compileRule(spec).ok());
}

TEST(CompileRule, NameLength) {
  RuleSpec spec = ppsRule(10, 1);
  spec.name = std::string(32, 'x');
  EXPECT_EQ(usageError(spec), "rule name '" + spec.name + "' must be 1 to 31 characters");
  spec.name = "";
  EXPECT_EQ(usageError(spec), "rule name '' must be 1 to 31 characters");
  spec.name = "a";
  EXPECT_TRUE(compileRule(spec).ok());
}

TEST(CompileRule, RuleIdMustIndexPerRuleState) {
  RuleSpec spec = ppsRule(10, 1);
  spec.id = FG_MAX_RULE_IDS;
  EXPECT_EQ(usageError(spec), "rule id out of range");
  spec.id = FG_MAX_RULE_IDS - 1;
  EXPECT_TRUE(compileRule(spec).ok());
}

TEST(CompileRule, ABanLastsWholeTicksNeverLessThanAsked) {
  RuleSpec spec = ppsRule(10, 1);
  spec.action = ExceedAction::kBan;
  const uint64_t tick_units = fg_tick_units(250);  // 4 ms ticks
  spec.ban_ns = 10'000'000'000ULL;                 // 10 s: 2500 ticks exactly
  EXPECT_EQ(compileRule(spec, tick_units)->ban_ticks, 2500u);
  spec.ban_ns += 1;  // a nanosecond more is a tick more
  EXPECT_EQ(compileRule(spec, tick_units)->ban_ticks, 2501u);
  spec.ban_ns = kMaxBanNs;  // 30 days in jiffies: no clock the program reads wraps on it
  EXPECT_EQ(compileRule(spec, tick_units)->ban_ticks, 30ULL * 86400 * 250);
  spec.ban_ns = kMaxBanNs + 1;
  EXPECT_EQ(usageError(spec), "rule 'default' bans for longer than 30d");
}

// The limits an operator set come back from the compiled rule.
void expectRoundTrip(const LimitSpec& limit) {
  RuleSpec spec;
  spec.limit = limit;
  auto rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  LimitSpec back = describeLimits(*rule);
  EXPECT_EQ(back.pps, limit.pps);
  EXPECT_EQ(back.burst, limit.burst);
  EXPECT_EQ(back.bits_per_s, limit.bits_per_s);
  EXPECT_EQ(back.burst_bytes, limit.burst_bytes);
}

TEST(DescribeLimits, RoundTripsExactRates) {
  expectRoundTrip({1000, 100, 0, 0});
  expectRoundTrip({1, 3600, 0, 0});
  expectRoundTrip({1000000, 100000, 0, 0});
  expectRoundTrip({0, 0, 1000000000, 12500000});
  expectRoundTrip({0, 0, 100000000, 1518});
  expectRoundTrip({10000, 1000, 800000, 10000});
}

TEST(DescribeLimits, RoundTripsRatesWithARoundedInterval) {
  expectRoundTrip({3, 7, 0, 0});
  expectRoundTrip({7, 1, 0, 0});
  expectRoundTrip({12345, 1234, 0, 0});
  expectRoundTrip({0, 0, 3000000, 4000});
  expectRoundTrip({333, 33, 7000000, 100000});
}

// The byte interval of 10 Gbit/s is 52428.8 units, rounded up to 52429, which a plain
// division reads back as 9999961853 bit/s; describeLimits gives the roundest rate that
// compiles to the same interval instead, the one the operator wrote.
TEST(DescribeLimits, RoundTripsHighRates) {
  expectRoundTrip({0, 0, 10000000000ULL, 125000000});
  expectRoundTrip({0, 0, 100000000000ULL, 1250000000});
  expectRoundTrip({9999999, 999999, 0, 0});
}

// Past 524 Gbit/s, the interval's rounding up shows: 10 Tbit/s takes 53 units a byte (52.43
// exactly) and runs at 9.89 Tbit/s; 1T packets a second (no link's, but a count parses) take 66
// a packet (65.54) and run at 993G. What is shown is what runs, to 0.1%, and compiles back to
// the same interval.
TEST(DescribeLimits, ShowsTheRateThatRunsWhenTheIntervalsRoundingShows) {
  RuleSpec spec;
  spec.limit = {1000000000000ULL, 1000000000000ULL, 10000000000000ULL, 10000000000ULL};
  auto rule = compileRule(spec);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  const LimitSpec back = describeLimits(*rule);
  EXPECT_EQ(back.bits_per_s, 9900000000000ULL);
  EXPECT_EQ(back.pps, 993000000000ULL);
  EXPECT_EQ(byteInterval(back.bits_per_s), byteInterval(spec.limit.bits_per_s));
  EXPECT_EQ(packetInterval(back.pps), packetInterval(spec.limit.pps));

  const RateAsRun bps = bpsAsRun(10000000000000ULL);
  EXPECT_EQ(bps.shown, 9900000000000ULL);
  EXPECT_NEAR(bps.below, 0.0108, 0.0001);
  const RateAsRun pps = ppsAsRun(1000000000000ULL);
  EXPECT_EQ(pps.shown, 993000000000ULL);
  EXPECT_NEAR(pps.below, 0.0070, 0.0001);
  // below the coarse range, a rate runs as written to well within 0.1%, and shows so
  EXPECT_EQ(bpsAsRun(100000000000ULL).shown, 100000000000ULL);
  EXPECT_LT(bpsAsRun(100000000000ULL).below, 1e-4);
  EXPECT_EQ(ppsAsRun(1000000000).shown, 1000000000u);
  EXPECT_EQ(ppsAsRun(12345).shown, 12345u);
  EXPECT_GE(ppsAsRun(12345).below, 0.0);
}

TEST(DescribeLimits, NoLimitsReadBackAsZero) {
  fg_rule rule{};
  LimitSpec back = describeLimits(rule);
  EXPECT_EQ(back.pps, 0u);
  EXPECT_EQ(back.burst, 0u);
  EXPECT_EQ(back.bits_per_s, 0u);
  EXPECT_EQ(back.burst_bytes, 0u);
}

TEST(RuleIndex, APacketClassHoldsTheRulesOfItsProtocolAndThoseOfAnyProtocol) {
  std::vector<fg_rule> rules(4);
  rules[0].protocol = IPPROTO_TCP;
  rules[1].protocol = 0;  // any
  rules[2].protocol = IPPROTO_UDP;
  rules[3].protocol = IPPROTO_ICMP;
  fg_rule_index index = indexRules(rules);
  EXPECT_EQ(index.rules[FG_CLASS_TCP], 0b0011u);
  EXPECT_EQ(index.rules[FG_CLASS_UDP], 0b0110u);
  EXPECT_EQ(index.rules[FG_CLASS_ICMP], 0b1010u);
  EXPECT_EQ(index.rules[FG_CLASS_OTHER], 0b0010u);
  // a later IPv6 fragment's protocol is only a claim: every rule may count it
  EXPECT_EQ(index.rules[FG_CLASS_ANY], 0b1111u);
}

TEST(RuleIndex, ThirtyTwoRulesUseEveryBit) {
  std::vector<fg_rule> rules(FG_MAX_RULES);
  fg_rule_index index = indexRules(rules);
  for (uint32_t c = 0; c < FG_PACKET_CLASSES; ++c) EXPECT_EQ(index.rules[c], 0xffffffffu);
}

}  // namespace
}  // namespace floodgate
