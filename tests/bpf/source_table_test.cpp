// SPDX-License-Identifier: MIT
// The source table under pressure: per-slot counters for `top`, which idle slot a new
// source takes, the cap on new sources, and a flood of spoofed sources held to the rule's
// untracked limit while a real source under its limit keeps getting through.
#include <arpa/inet.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bpf/xdp_fixture.h"
#include "kernel/bpf_map.h"
#include "kernel/system.h"

namespace floodgate::test {
namespace {

class SourceTableTest : public XdpProgramTest {
 protected:
  // The slot of the IPv4 source `address` (masked to /32), if it owns one.
  std::optional<fg_slot> slotOf(const std::string& address) {
    auto slots = limiter().slots();
    EXPECT_TRUE(slots.ok()) << slots.error().message;
    in_addr want{};
    inet_pton(AF_INET, address.c_str(), &want);
    for (const fg_slot& slot : *slots) {
      if (slot.fingerprint && slot.family == FG_FAMILY_V4 &&
          std::memcmp(slot.addr, &want, 4) == 0) {
        return slot;
      }
    }
    return std::nullopt;
  }

  uint64_t tableStat(uint32_t stat) {
    auto rules = limiter().ruleCounters();
    EXPECT_TRUE(rules.ok());
    return rules->empty() ? 0 : rules->front().table[stat];
  }

  static void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

  // Four sources fill a one-set table under a rule of a minute's window, one packet each;
  // then a new source in the same window, in the next one and in the one after.
  void expectWindowSlotsIdle(Algorithm algorithm) {
    RuleSpec rule = sourceRule(100, 0);
    rule.algorithm = algorithm;
    rule.window_ns = 60'000'000'000ULL;
    rule.new_sources_per_s = 0;
    AttachOptions options;
    options.table_slots = 4;  // one set of four ways
    options.test_clock_hz = 1000;
    load({rule}, options);
    setClock(100'000);  // 100 s: window 1
    for (const char* source : {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}) {
      ASSERT_EQ(run(udpFrom(source)), XDP_PASS);
    }
    setClock(119'000);  // the same window: every way still counts
    ASSERT_EQ(run(udpFrom("192.0.2.8")), XDP_PASS);
    EXPECT_FALSE(slotOf("192.0.2.8").has_value());
    EXPECT_EQ(tableStat(FG_TABLE_FULL), 1u);
    setClock(150'000);  // window 2: a fixed window's counts are over, a sliding one's not
    ASSERT_EQ(run(udpFrom("192.0.2.9")), XDP_PASS);
    EXPECT_EQ(slotOf("192.0.2.9").has_value(), algorithm == Algorithm::kFixedWindow);
    setClock(190'000);  // window 3: over for both
    ASSERT_EQ(run(udpFrom("192.0.2.10")), XDP_PASS);
    EXPECT_TRUE(slotOf("192.0.2.10").has_value());
  }

  // Writes `tags` as set 0's tag word, its memory entries as they are.
  static bool withTags(BpfMap<uint32_t, fg_set>& sets, uint64_t tags) {
    auto set = sets.lookup(0);
    if (!set) return false;
    set->tags = tags;
    return sets.update(0, *set).ok();
  }
};

// A window rule's slot is idle once its count no longer limits anyone: a fixed window's
// when its window is over, a sliding window's when the window after it is over too. A slot
// held a window longer than that would let one packet a window keep it from new sources.
TEST_F(SourceTableTest, AFixedWindowSlotIsIdleOnceItsWindowIsOver) {
  expectWindowSlotsIdle(Algorithm::kFixedWindow);
}

TEST_F(SourceTableTest, ASlidingWindowSlotIsIdleOnceTheWindowAfterItIsOver) {
  expectWindowSlotsIdle(Algorithm::kSlidingWindow);
}

TEST_F(SourceTableTest, ASlotCountsItsPacketsAndDrops) {
  load({sourceRule(1, 3)});
  EXPECT_EQ(passes(udpFrom("192.0.2.7"), 10), 3);
  auto slot = slotOf("192.0.2.7");
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(slot->packets, 10u);
  EXPECT_EQ(slot->drops, 7u);
  EXPECT_NE(slot->last_drop, 0u);
  EXPECT_EQ(slot->prefix, 32);
}

TEST_F(SourceTableTest, ANewSourceTakesTheIdleWaySeenLongestAgo) {
  AttachOptions options;
  options.table_slots = 4;  // one set of four ways
  load({sourceRule(1000, 1)}, options);
  for (const char* source : {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}) {
    ASSERT_EQ(run(udpFrom(source)), XDP_PASS);
  }
  sleepMs(30);  // every bucket refills: all four ways are idle
  for (const char* source : {"192.0.2.1", "192.0.2.2", "192.0.2.3"}) {
    ASSERT_EQ(run(udpFrom(source)), XDP_PASS);
  }
  sleepMs(30);
  ASSERT_EQ(run(udpFrom("192.0.2.99")), XDP_PASS);
  EXPECT_FALSE(slotOf("192.0.2.4").has_value()) << "the way seen longest ago is the one taken";
  for (const char* source : {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.99"}) {
    EXPECT_TRUE(slotOf(source).has_value()) << source;
  }
}

TEST_F(SourceTableTest, NewSourcesBeyondTheCapShareTheUntrackedBucket) {
  RuleSpec rule = sourceRule(1, 5);
  rule.new_sources_per_s = 1;
  rule.untracked = {.pps = 1, .burst = 2};
  load({rule});
  // the first new source takes a slot; the cap holds the next four out of the table, and
  // the untracked bucket (burst 2) admits two of them
  int passed = 0;
  for (int i = 1; i <= 5; ++i) passed += run(udpFrom("192.0.2." + std::to_string(i))) == XDP_PASS;
  EXPECT_EQ(passed, 3);
  EXPECT_EQ(tableStat(FG_TABLE_NEW_SOURCE), 1u);
  EXPECT_EQ(tableStat(FG_TABLE_CAPPED), 4u);
  EXPECT_EQ(tableStat(FG_TABLE_UNTRACKED_PASS), 2u);
  EXPECT_EQ(tableStat(FG_TABLE_UNTRACKED_DROP), 2u);
  // the tracked source keeps its own bucket of 5
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 10), 4);
}

// The cap is looked at before the set: a source it refuses is counted capped even when its
// set has no idle way, and only a source it would admit is counted table_full, without the
// cap being charged for it. On the program's test clock, so no refill falls between runs.
TEST_F(SourceTableTest, TheCapDecidesBeforeTheSetIsSearched) {
  RuleSpec rule = sourceRule(1, 1);  // one packet leaves a source limited for a second
  rule.new_sources_per_s = 40;       // a burst of 4, one more every 25 ms
  AttachOptions options;
  options.table_slots = 4;  // one set of four ways
  options.test_clock_hz = 1000;
  load({rule}, options);
  uint64_t now = 100000;
  setClock(now);
  for (const char* source : {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}) {
    ASSERT_EQ(run(udpFrom(source)), XDP_PASS) << source;
  }
  EXPECT_EQ(tableStat(FG_TABLE_NEW_SOURCE), 4u);
  // the cap is dry and the set full: refused by the cap
  run(udpFrom("192.0.2.5"));
  EXPECT_EQ(tableStat(FG_TABLE_CAPPED), 1u);
  EXPECT_EQ(tableStat(FG_TABLE_FULL), 0u);
  // one source more a 25 ms later, and every way still limited: the set refuses, twice,
  // as the cap is not charged for a source that took no slot
  setClock(now += 25);
  run(udpFrom("192.0.2.6"));
  run(udpFrom("192.0.2.7"));
  EXPECT_EQ(tableStat(FG_TABLE_FULL), 2u);
  EXPECT_EQ(tableStat(FG_TABLE_CAPPED), 1u);
  EXPECT_EQ(tableStat(FG_TABLE_NEW_SOURCE), 4u);
  // a second on, every way is idle again, and the cap's one source takes a slot
  setClock(now += 1000);
  ASSERT_EQ(run(udpFrom("192.0.2.8")), XDP_PASS);
  EXPECT_EQ(tableStat(FG_TABLE_NEW_SOURCE), 5u);
  EXPECT_TRUE(slotOf("192.0.2.8").has_value());
}

// A slot is found by its set's tags: a tag that is wrong (two sources took the same way one
// after the other, and their tags landed in the other order) leaves the source to be looked
// for as a new one, which finds its slot by the slots themselves and puts the tag right,
// rather than giving it a second slot.
TEST_F(SourceTableTest, ASourceWhoseTagIsWrongStillFindsItsSlotAndMendsTheTag) {
  AttachOptions options;
  options.table_slots = 4;  // one set of four ways: its tags are element 0's
  options.test_clock_hz = 1000;
  load({sourceRule(1, 3)}, options);
  setClock(100000);
  auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
  ASSERT_TRUE(sets.ok()) << sets.error().message;
  ASSERT_EQ(run(udpFrom("192.0.2.7")), XDP_PASS);
  auto written = sets->lookup(0);
  ASSERT_TRUE(written.ok());
  ASSERT_NE(written->tags, 0u) << "taking a slot writes its tag";
  ASSERT_TRUE(withTags(*sets, ~written->tags));  // every way's tag now another's

  // burst 3: the second and third packets are charged to its own slot, the fourth refused
  EXPECT_EQ(passes(udpFrom("192.0.2.7"), 4), 2);
  auto slot = slotOf("192.0.2.7");
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(slot->packets, 5u);
  EXPECT_EQ(tableStat(FG_TABLE_NEW_SOURCE), 1u) << "no second slot";
  auto mended = sets->lookup(0);
  ASSERT_TRUE(mended.ok());
  EXPECT_EQ(mended->tags & 0xffff, written->tags & 0xffff) << "way 0's tag is the source's again";
  EXPECT_EQ(mended->tags & ~0xffffULL, ~written->tags & ~0xffffULL)
      << "the other ways' tags untouched";
}

// While the cap refuses, a source whose tag is wrong is not looked for among the slots: that
// probe is what a spoofed flood's packets skip. It is charged to the untracked bucket, as a
// source without a slot, until the cap has room again and the probe mends its tag.
TEST_F(SourceTableTest, WhileTheCapRefusesASourceWhoseTagIsWrongIsUntrackedUntilItHasRoom) {
  RuleSpec rule = sourceRule(100, 100);
  rule.new_sources_per_s = 10;  // a burst of 1, one more every 100 ms
  rule.untracked = {.pps = 1, .burst = 1};
  AttachOptions options;
  options.table_slots = 4;
  options.test_clock_hz = 1000;
  load({rule}, options);
  uint64_t now = 100000;
  setClock(now);
  auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
  ASSERT_TRUE(sets.ok()) << sets.error().message;
  ASSERT_EQ(run(udpFrom("192.0.2.7")), XDP_PASS);  // takes a slot and the cap's one source
  auto written = sets->lookup(0);
  ASSERT_TRUE(written.ok());
  ASSERT_TRUE(withTags(*sets, ~written->tags));

  EXPECT_EQ(passes(udpFrom("192.0.2.7"), 3), 1) << "the untracked bucket's burst of 1";
  EXPECT_EQ(tableStat(FG_TABLE_CAPPED), 3u);
  ASSERT_TRUE(slotOf("192.0.2.7").has_value()) << "its slot stays its own";
  EXPECT_EQ(slotOf("192.0.2.7")->packets, 1u);

  setClock(now += 100);  // room for one source: the probe finds its slot and mends the tag
  EXPECT_EQ(passes(udpFrom("192.0.2.7"), 3), 3);
  EXPECT_EQ(slotOf("192.0.2.7")->packets, 4u);
  EXPECT_EQ(tableStat(FG_TABLE_NEW_SOURCE), 1u) << "no second slot";
  auto mended = sets->lookup(0);
  ASSERT_TRUE(mended.ok());
  EXPECT_EQ(mended->tags & 0xffff, written->tags & 0xffff);
}

// Each packet from a source never seen before, as a spoofed flood sends them.
class SpoofedFlood {
 public:
  explicit SpoofedFlood(std::vector<uint8_t> frame) : frame_(std::move(frame)) {}
  // The frame with the `n`th source of 10.0.0.0/8 (+1: never 0.0.0.0-like).
  const std::vector<uint8_t>& next() {
    uint32_t source = htonl(0x0a000000u + ++count_);
    std::memcpy(frame_.data() + 14 + 12, &source, 4);  // IPv4 source, after Ethernet
    return frame_;
  }

 private:
  std::vector<uint8_t> frame_;
  uint32_t count_ = 0;
};

// A rule with a 64k-slot table, as the defence is measured: 100 pps per source, new
// sources capped at 1000/s, and the untracked bucket at 1000 pps.
struct FloodResult {
  uint64_t passed = 0;
  uint64_t legit_sent = 0;
  uint64_t legit_passed = 0;
  double seconds = 0;  // an upper bound of the time the flood took
};

class SpoofedFloodTest : public SourceTableTest {
 protected:
  FloodResult flood(uint32_t sources, uint64_t new_sources_per_s) {
    RuleSpec rule = sourceRule(100, 10);
    rule.new_sources_per_s = new_sources_per_s;
    rule.untracked = {.pps = 1000, .burst = 100};
    AttachOptions options;
    options.table_slots = 65536;
    load({rule}, options);
    EXPECT_FALSE(HasFatalFailure());
    auto hz = kernelHz();
    auto start = currentJiffies();
    EXPECT_TRUE(hz.ok() && start.ok());

    FloodResult out;
    SpoofedFlood spoofed(udpFrom("10.0.0.1"));
    const auto legit = udpFrom("192.0.2.200");
    auto last_legit = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    for (uint32_t i = 0; i < sources; ++i) {
      out.passed += run(spoofed.next()) == XDP_PASS;
      // a real client at no more than 50 packets a second, half its limit
      if ((i & 255) == 0 &&
          std::chrono::steady_clock::now() - last_legit >= std::chrono::milliseconds(20)) {
        last_legit = std::chrono::steady_clock::now();
        ++out.legit_sent;
        out.legit_passed += run(legit) == XDP_PASS;
      }
    }
    auto end = currentJiffies();
    // +1 tick: the first and last readings may each sit anywhere within their tick
    out.seconds = static_cast<double>(*end - *start + 1) / *hz;
    return out;
  }
};

TEST_F(SpoofedFloodTest, AMillionSpoofedSourcesGetNoMoreThanTheUntrackedLimit) {
  const FloodResult result = flood(1000000, 1000);
  // What may pass: the new sources the cap lets into the table (one packet each here) and
  // the untracked bucket, each at 1000/s plus its burst (a tenth of a second of the cap,
  // 100 for the bucket) and one tick of tokens.
  const double tick_s = 1.0 / *kernelHz();
  const double allowed = (1000 * result.seconds + 100 + 1000 * tick_s) * 2;
  std::cout << "spoofed flood: " << result.passed << " of 1000000 passed in about "
            << result.seconds << " s; the limit allows " << allowed << "\n";
  EXPECT_LE(static_cast<double>(result.passed), 1.05 * allowed);
  EXPECT_GT(tableStat(FG_TABLE_CAPPED), 0u);
  EXPECT_GT(tableStat(FG_TABLE_UNTRACKED_DROP), 0u);
  ASSERT_GT(result.legit_sent, 0u);
  EXPECT_EQ(result.legit_passed, result.legit_sent) << "a source under its limit kept its slot";
}

TEST_F(SpoofedFloodTest, WithoutTheCapEverySpoofedSourceGetsAFreshBucket) {
  // the same flood with no cap on new sources: the table hands out full buckets, which is
  // the hole the cap closes
  const FloodResult result = flood(100000, 0);
  EXPECT_GT(result.passed, 90000u);
}

}  // namespace
}  // namespace floodgate::test
