// SPDX-License-Identifier: MIT
// AdaptiveGovernor on a stepped clock: an attack tightens the named rules step by step down
// to their floors and no further, calm relaxes them back to exactly their configured limits,
// a load around capacity never flips them, and hostile readings (counters or time going
// backwards, huge jumps, readings too close together) move nothing they should not.
#include "daemon/adaptive_governor.h"

#include <gtest/gtest.h>

#include <functional>

namespace floodgate::daemon {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

config::AdaptiveConfig testConfig() {
  config::AdaptiveConfig c;
  c.capacity_pps = 1000;
  c.step = 0.5;
  c.interval_ns = kSecond;
  c.relax_below = 0.5;
  c.relax_after_ns = 5 * kSecond;
  return c;
}

// per-source: 100 pps, burst 10, squeezed to 10 pps, burst 1 at most.
std::vector<AdaptiveRule> testRules() { return {{"per-source", {100, 10, 0, 0}, {10, 1, 0, 0}}}; }

// A host on a stepped clock: each tick adds one interval of passed load to the counters and
// shows them to the governor.
class Host {
 public:
  explicit Host(AdaptiveGovernor& governor) : governor_(governor) {
    governor_.observe(now_ns_, counters_);  // the baseline
  }

  // One interval at `pps` (and 100-byte frames); the decision, if any.
  std::optional<AdaptiveDecision> tick(double pps) {
    now_ns_ += governor_.config().interval_ns;
    counters_.packets += static_cast<uint64_t>(pps);
    counters_.bytes += static_cast<uint64_t>(pps) * 100;
    auto decision = governor_.observe(now_ns_, counters_);
    if (decision) decisions.push_back(*decision);
    return decision;
  }
  // `intervals` ticks, each at the load `load(current pps limit)`.
  void run(int intervals, const std::function<double(uint64_t)>& load) {
    for (int i = 0; i < intervals; ++i) tick(load(governor_.limitsOf(0).pps));
  }
  size_t count(AdaptiveAction action) const {
    size_t n = 0;
    for (const auto& d : decisions) n += d.action == action;
    return n;
  }

  AdaptiveGovernor& governor_;
  uint64_t now_ns_ = 1000 * kSecond;
  PassedCounters counters_{5'000'000, 500'000'000};
  std::vector<AdaptiveDecision> decisions;
};

// 200 pps of normal traffic and, during an attack, 100 sources sending 40 pps each, every
// one held to the rule's per-source limit.
double attacked(uint64_t limit_pps) { return 200 + 100 * std::min<double>(40, limit_pps); }
double normal(uint64_t) { return 200; }

TEST(AdaptiveGovernor, LevelsStepDownByTheFactorRoundedUpToTheFloors) {
  AdaptiveGovernor governor(testConfig(), testRules());
  // 100 → 50 → 25 → 13 → 10 (the floor); bursts 10 → 5 → 3 → 2 → 1
  EXPECT_EQ(governor.maxLevel(), 4u);
  EXPECT_EQ(governor.limitsOf(0), (LimitSpec{100, 10, 0, 0}));
}

// A step close to 1 would, rounded up, keep a small limit where it is (10 x 0.95 is 9.5, up
// to 10): such a step is one unit, so the deepest level is the floors whatever the step.
TEST(AdaptiveGovernor, TheDeepestLevelIsTheFloorsWhateverTheStep) {
  for (double step : {0.5, 0.75, 0.9, 0.95}) {
    config::AdaptiveConfig config = testConfig();
    config.step = step;
    config.relax_below = std::min(step, 0.5);
    AdaptiveGovernor governor(config, {{"per-source", {100, 10, 0, 0}, {1, 1, 0, 0}}});
    Host host(governor);
    for (int i = 0; i < 1000 && governor.level() < governor.maxLevel(); ++i) host.tick(5000);
    EXPECT_EQ(governor.limitsOf(0), (LimitSpec{1, 1, 0, 0})) << step;
  }
}

// Where a level's way back up is a step of one unit (2 -> 1 is a factor of 2, more than
// 1 / step), calm is a load that stays under capacity after that growth too, so such a
// level does not flip either.
TEST(AdaptiveGovernor, AOneUnitStepRelaxesOnlyOnALoadThatFitsAfterIt) {
  config::AdaptiveConfig config = testConfig();
  config.step = 0.9;
  config.relax_below = 0.9;
  AdaptiveGovernor governor(config, {{"per-source", {3, 3, 0, 0}, {1, 1, 0, 0}}});
  ASSERT_EQ(governor.maxLevel(), 2u);  // 3 -> 2 -> 1, each one unit
  Host host(governor);
  host.run(2, [](uint64_t) { return 5000.0; });
  ASSERT_EQ(governor.level(), 2u);
  // 800 pps is under capacity x relax_below (900), but not after the limits double
  host.run(30, [](uint64_t) { return 800.0; });
  EXPECT_EQ(governor.level(), 2u);
  host.run(30, [](uint64_t) { return 400.0; });
  EXPECT_EQ(governor.level(), 0u) << "under capacity / 2: relaxed";
}

TEST(AdaptiveGovernor, AnAttackTightensToTheFloorsHoldsThemAndCalmRelaxesBackExactly) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  host.run(10, normal);
  EXPECT_TRUE(host.decisions.empty()) << "calm at the configured limits: nothing moves";

  // The attack: one step per interval, each after a whole reading under the limits before.
  std::vector<uint64_t> seen_pps;
  for (int i = 0; i < 30; ++i) {
    host.tick(attacked(governor.limitsOf(0).pps));
    seen_pps.push_back(governor.limitsOf(0).pps);
  }
  EXPECT_EQ(host.count(AdaptiveAction::kTighten), 4u);
  EXPECT_EQ(governor.level(), 4u);
  EXPECT_EQ(governor.limitsOf(0), (LimitSpec{10, 1, 0, 0})) << "held at its floors";
  for (uint64_t pps : seen_pps) EXPECT_GE(pps, 10u) << "never below the floor";
  // 200 + 100 × 10 = 1200 pps is still over: said once, not every interval.
  EXPECT_EQ(host.count(AdaptiveAction::kFloorsReached), 1u);
  const AdaptiveDecision& first = host.decisions[0];
  EXPECT_EQ(first.action, AdaptiveAction::kTighten);
  ASSERT_EQ(first.changes.size(), 1u);
  EXPECT_EQ(first.changes[0].rule, "per-source");
  EXPECT_EQ(first.changes[0].from, (LimitSpec{100, 10, 0, 0}));
  EXPECT_EQ(first.changes[0].to, (LimitSpec{50, 5, 0, 0}));
  EXPECT_DOUBLE_EQ(first.passed_pps, 4200);
  EXPECT_EQ(governor.describeLoad(first), "passed 4200 pps > capacity 1000 pps");

  // It ends: a relax step once the load has stayed calm for relax_after, one more after
  // each further relax_after, back to exactly the configured limits.
  host.decisions.clear();
  std::vector<uint64_t> relax_times;
  for (int i = 0; i < 40; ++i) {
    if (host.tick(200)) relax_times.push_back(host.now_ns_);
  }
  EXPECT_EQ(host.count(AdaptiveAction::kRelax), 4u);
  EXPECT_EQ(host.count(AdaptiveAction::kTighten), 0u);
  EXPECT_EQ(governor.level(), 0u);
  EXPECT_EQ(governor.limitsOf(0), (LimitSpec{100, 10, 0, 0}));
  for (size_t i = 1; i < relax_times.size(); ++i) {
    EXPECT_GE(relax_times[i] - relax_times[i - 1], 5 * kSecond);
  }
  EXPECT_EQ(governor.describeLoad(host.decisions[0]),
            "passed 200 pps < 500 pps (capacity 1000 pps × 0.5) for 5s");
}

TEST(AdaptiveGovernor, AThresholdWithBitsPerSecondTightensOnBits) {
  config::AdaptiveConfig c = testConfig();
  c.capacity_pps = 0;
  c.capacity_bps = 8'000'000;  // 1 MB/s of frames
  AdaptiveGovernor governor(c,
                            {{"bytes", {0, 0, 80'000'000, 1'000'000}, {0, 0, 8'000'000, 100'000}}});
  Host host(governor);
  host.tick(20'000);  // 100-byte frames: 16 Mbit/s
  ASSERT_EQ(host.decisions.size(), 1u);
  EXPECT_EQ(host.decisions[0].changes[0].to, (LimitSpec{0, 0, 40'000'000, 500'000}));
  EXPECT_EQ(governor.describeLoad(host.decisions[0]), "passed 16Mbit > capacity 8Mbit");
}

TEST(AdaptiveGovernor, ALoadAroundCapacityNeverFlipsTheLimits) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  // Whatever the limits, the load hovers around capacity: it may tighten, never relax.
  for (int i = 0; i < 400; ++i) host.tick(i % 2 ? 1050 : 950);
  EXPECT_EQ(host.count(AdaptiveAction::kRelax), 0u);
  // and in the dead band between capacity × relax_below and capacity, nothing at all moves
  const uint32_t level = governor.level();
  host.decisions.clear();
  for (int i = 0; i < 400; ++i) host.tick(i % 3 ? 600 : 990);
  EXPECT_TRUE(host.decisions.empty());
  EXPECT_EQ(governor.level(), level);
}

TEST(AdaptiveGovernor, ALoadThatFollowsTheLimitsSettlesWithoutEverFlipping) {
  // Sources held to their limit pass k × limit: whatever k, once tightened, a relax step
  // (at most × 1/step) cannot take the load back over capacity, so it never tightens again.
  for (int k = 1; k <= 300; ++k) {
    SCOPED_TRACE("k = " + std::to_string(k));
    AdaptiveGovernor governor(testConfig(), testRules());
    Host host(governor);
    host.run(200, [k](uint64_t limit) { return static_cast<double>(k) * limit; });
    bool relaxed = false;
    for (const AdaptiveDecision& d : host.decisions) {
      if (d.action == AdaptiveAction::kRelax) relaxed = true;
      EXPECT_FALSE(relaxed && d.action == AdaptiveAction::kTighten) << "tightened after a relax";
    }
  }
}

TEST(AdaptiveGovernor, CountersGoingBackwardsOnlyStartANewBaseline) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  host.tick(5000);
  ASSERT_EQ(governor.level(), 1u);
  // A reload re-attached the program: its counters start from zero.
  host.counters_ = {0, 0};
  host.now_ns_ += kSecond;
  EXPECT_FALSE(governor.observe(host.now_ns_, host.counters_));
  EXPECT_EQ(governor.level(), 1u) << "neither a tighten nor a relax from a bogus delta";
  host.tick(5000);
  EXPECT_EQ(governor.level(), 2u) << "rates again from the new baseline";
  // Only one of the two counters going back is as bogus.
  host.counters_.bytes -= 1;
  host.now_ns_ += kSecond;
  EXPECT_FALSE(governor.observe(host.now_ns_, host.counters_));
  EXPECT_EQ(governor.level(), 2u);
}

TEST(AdaptiveGovernor, HugeJumpsMoveOneStepAtATime) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  host.counters_.packets = UINT64_MAX - 1;  // a counter near its end: 1.8e19 packets in 1 s
  host.now_ns_ += kSecond;
  auto decision = governor.observe(host.now_ns_, host.counters_);
  ASSERT_TRUE(decision);
  EXPECT_EQ(decision->level_to, 1u) << "one step, however far over";
  // A long silence (the daemon stopped for an hour) is one calm reading, not an hour of
  // calm: relaxing still waits for relax_after of readings.
  host.now_ns_ += 3600 * kSecond;
  EXPECT_FALSE(governor.observe(host.now_ns_, host.counters_));
  EXPECT_EQ(governor.level(), 1u);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(host.tick(0));
  EXPECT_TRUE(host.tick(0)) << "5 s of calm readings after the first";
  EXPECT_EQ(governor.level(), 0u);
}

// A reading an hour after the last (the daemon's loop fell behind) averages a flood inside
// the gap down to nothing: inside a calm stretch it adds one interval of calm, not an hour.
TEST(AdaptiveGovernor, ALateReadingInACalmStretchCountsAsOneReading) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  host.tick(5000);
  ASSERT_EQ(governor.level(), 1u);
  EXPECT_FALSE(host.tick(0)) << "the calm starts";
  host.now_ns_ += 3600 * kSecond;
  EXPECT_FALSE(governor.observe(host.now_ns_, host.counters_)) << "no relax on one reading";
  EXPECT_EQ(governor.level(), 1u);
  // 1 s of calm so far: relaxed once the readings after it make up the rest of the 5 s
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(host.tick(0)) << i;
  EXPECT_TRUE(host.tick(0));
  EXPECT_EQ(governor.level(), 0u);
}

// One second of flood every relax_after, the rest calm: each pulse tightens one level, and
// the calm around it (the pulse forgiven) relaxes one level back, so the limits stay near
// the configured ones instead of ratcheting to the floors and staying there.
TEST(AdaptiveGovernor, APulseNowAndThenDoesNotRatchetToTheFloors) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  for (int i = 0; i < 20; ++i) {
    host.tick(5000);
    for (int j = 0; j < 4; ++j) host.tick(0);
  }
  EXPECT_LT(governor.level(), governor.maxLevel());
  EXPECT_LE(governor.level(), 1u) << "each pulse's level given back";
  EXPECT_GE(host.count(AdaptiveAction::kRelax), 15u);
}

// Only one pulse a calm stretch, and only a short one: two in a stretch, two readings in a
// row, or a reading that is more than a quarter of relax_after start the calm over. A
// reading in the dead band is forgiven as one over capacity is.
TEST(AdaptiveGovernor, OnlyOneShortPulseAStretchIsForgiven) {
  // the relaxes from the floors while `loads` repeat
  auto relaxes = [](const config::AdaptiveConfig& config, std::vector<double> loads) {
    AdaptiveGovernor governor(config, testRules());
    Host host(governor);
    host.run(4, [](uint64_t) { return 5000.0; });
    EXPECT_EQ(governor.level(), governor.maxLevel());
    for (int i = 0; i < 20; ++i) {
      for (double load : loads) host.tick(load);
    }
    return host.count(AdaptiveAction::kRelax);
  };
  EXPECT_EQ(relaxes(testConfig(), {5000, 0, 0, 5000, 0}), 0u) << "two in 5 s";
  EXPECT_EQ(relaxes(testConfig(), {5000, 5000, 0, 0, 0, 0}), 0u) << "two in a row";
  EXPECT_EQ(relaxes(testConfig(), {700, 0, 0, 700, 0}), 0u) << "two in the dead band";
  config::AdaptiveConfig quick = testConfig();
  quick.relax_after_ns = 3 * kSecond;
  EXPECT_EQ(relaxes(quick, {5000, 0, 0, 0}), 0u) << "1 s of 3 is no short pulse";
  EXPECT_EQ(relaxes(testConfig(), {700, 0, 0, 0, 0}), 4u) << "one in the dead band: back to 0";
}

TEST(AdaptiveGovernor, TimeGoingBackwardsStartsTheHoldsOver) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  host.tick(5000);
  host.tick(5000);
  ASSERT_EQ(governor.level(), 2u);
  for (int i = 0; i < 3; ++i) host.tick(0);  // calm for 3 s of the 5 needed
  host.now_ns_ -= 100 * kSecond;             // the clock steps back
  EXPECT_FALSE(governor.observe(host.now_ns_, host.counters_));
  // Calm again from the first reading after it: the 3 s before the step count for nothing,
  // and the calm is measured from the new time, never across the jump.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(host.tick(0)) << i;
  EXPECT_TRUE(host.tick(0));
  EXPECT_EQ(governor.level(), 1u);
}

TEST(AdaptiveGovernor, ReadingsTooCloseTogetherWaitForHalfAnInterval) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  // 10 ms after the baseline, a burst that would read as 500k pps: not a reading yet
  host.counters_.packets += 5000;
  EXPECT_FALSE(governor.observe(host.now_ns_ + kSecond / 100, host.counters_));
  EXPECT_FALSE(governor.observe(host.now_ns_ + kSecond / 100, host.counters_)) << "same time";
  // the same packets over the whole second: 5000 pps, over capacity
  host.now_ns_ += kSecond;
  EXPECT_TRUE(governor.observe(host.now_ns_, host.counters_));
}

TEST(AdaptiveGovernor, OneStepPerReadingEachMeasuredUnderTheLimitsBeforeIt) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  // Every reading begins where the one before ended, so each step is decided on the load the
  // limits of the step before let through.
  for (uint32_t expected = 1; expected <= 4; ++expected) {
    auto decision = host.tick(1'000'000);
    ASSERT_TRUE(decision);
    EXPECT_EQ(decision->level_from, expected - 1);
    EXPECT_EQ(decision->level_to, expected);
  }
}

TEST(AdaptiveGovernor, AReloadKeepsAGovernorOnlyForTheSameSectionAndLimits) {
  AdaptiveGovernor governor(testConfig(), testRules());
  EXPECT_TRUE(governor.sameAs(testConfig(), testRules(), false));
  config::AdaptiveConfig other = testConfig();
  other.step = 0.4;
  other.relax_below = 0.4;
  EXPECT_FALSE(governor.sameAs(other, testRules(), false));
  std::vector<AdaptiveRule> raised = testRules();
  raised[0].configured.pps = 200;
  EXPECT_FALSE(governor.sameAs(testConfig(), raised, false));
}

// A level reached while the packets over the limits only passed (a dry run) is not one to
// enforce: a change of monitor mode or of a named rule's on_exceed is another governor.
TEST(AdaptiveGovernor, ADryRunIsNotTheSameAsEnforcing) {
  AdaptiveGovernor dry(testConfig(), testRules(), true);
  EXPECT_TRUE(dry.sameAs(testConfig(), testRules(), true));
  EXPECT_FALSE(dry.sameAs(testConfig(), testRules(), false)) << "monitor: true -> false";
  std::vector<AdaptiveRule> monitored = testRules();
  monitored[0].on_exceed = ExceedAction::kMonitor;
  AdaptiveGovernor rule_dry(testConfig(), monitored);
  EXPECT_FALSE(rule_dry.sameAs(testConfig(), testRules(), false)) << "on_exceed: monitor -> drop";
  std::vector<AdaptiveRule> banning = testRules();
  banning[0].on_exceed = ExceedAction::kBan;
  AdaptiveGovernor enforcing(testConfig(), testRules());
  EXPECT_FALSE(enforcing.sameAs(testConfig(), banning, false)) << "drop -> ban";
}

TEST(AdaptiveGovernor, ARuleSetByHandIsLeftAloneWhileTheOthersMoveOn) {
  std::vector<AdaptiveRule> rules = testRules();
  rules.push_back({"other", {200, 20, 0, 0}, {20, 2, 0, 0}});
  AdaptiveGovernor governor(testConfig(), rules);
  Host host(governor);
  auto first = host.tick(5000);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->changes.size(), 2u);
  governor.release("per-source");
  EXPECT_TRUE(governor.released(0));
  EXPECT_FALSE(governor.released(1));
  // tightened further, then relaxed all the way: never a change of the released rule
  host.run(3, [](uint64_t) { return 5000.0; });
  host.run(60, [](uint64_t) { return 0.0; });
  EXPECT_EQ(governor.level(), 0u);
  size_t changes_of_other = 0;
  for (size_t d = 1; d < host.decisions.size(); ++d) {
    for (const AdaptiveChange& change : host.decisions[d].changes) {
      EXPECT_EQ(change.rule, "other");
      ++changes_of_other;
    }
  }
  EXPECT_GE(changes_of_other, 2u) << "the other rule went down and came back";
  governor.governAll();
  EXPECT_FALSE(governor.released(0));
  auto again = host.tick(5000);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->changes.size(), 2u) << "governed again after governAll()";
}

// A change the daemon could not write (the writer lock held, a map write refused) leaves
// the rule at the limits it ran: the governor is told so, and the next reading writes the
// rule's limits for the level it is at, from what runs, whether the level moves then or not
// (over capacity at the deepest level, in the dead band, calm but not yet long enough).
TEST(AdaptiveGovernor, AChangeThatCouldNotBeWrittenIsMadeAgainFromWhatTheRuleRuns) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  auto first = host.tick(5000);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->changes.size(), 1u);
  governor.stillAt("per-source", first->changes[0].from_level);  // 100 -> 50 failed
  auto second = host.tick(5000);
  ASSERT_TRUE(second);
  ASSERT_EQ(second->changes.size(), 1u);
  EXPECT_EQ(second->changes[0].from, (LimitSpec{100, 10, 0, 0})) << "from what the rule runs";
  EXPECT_EQ(second->changes[0].to, (LimitSpec{25, 3, 0, 0}));
  EXPECT_EQ(second->level_to, 2u);

  // over capacity at the deepest level: the failed step is made again, floors said after
  host.run(2, [](uint64_t) { return 5000.0; });
  ASSERT_EQ(governor.level(), governor.maxLevel());
  const AdaptiveChange last = host.decisions.back().changes.at(0);
  governor.stillAt("per-source", last.from_level);
  auto again = host.tick(5000);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->action, AdaptiveAction::kTighten);
  EXPECT_EQ(again->level_from, again->level_to);
  ASSERT_EQ(again->changes.size(), 1u);
  EXPECT_EQ(again->changes[0].from, last.from);
  EXPECT_EQ(again->changes[0].to, (LimitSpec{10, 1, 0, 0}));
  auto floors = host.tick(5000);
  ASSERT_TRUE(floors);
  EXPECT_EQ(floors->action, AdaptiveAction::kFloorsReached);

  // in the dead band (between capacity x relax_below and capacity), and in a calm not yet
  // long enough to relax: nothing moves but a failed change
  for (double load : {700.0, 100.0}) {
    governor.stillAt("per-source", governor.level() - 1);
    auto retried = host.tick(load);
    ASSERT_TRUE(retried) << load;
    EXPECT_EQ(retried->action, AdaptiveAction::kTighten);
    ASSERT_EQ(retried->changes.size(), 1u);
    EXPECT_EQ(retried->changes[0].to, (LimitSpec{10, 1, 0, 0}));
    EXPECT_FALSE(host.tick(load)) << "written once: nothing to make again";
  }
}

// Two tightens that failed, then a relax of the level: the rule, still at level 0, is
// tightened to the level it relaxes to; each change says its own way.
TEST(AdaptiveGovernor, EachChangeSaysItsOwnWay) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  for (int i = 0; i < 2; ++i) {
    auto step = host.tick(5000);
    ASSERT_TRUE(step);
    governor.stillAt("per-source", 0);
  }
  ASSERT_EQ(governor.level(), 2u);
  governor.stillAt("per-source", 0);
  std::optional<AdaptiveDecision> relax;
  for (int i = 0; i < 60 && !relax; ++i) {
    auto d = host.tick(0);
    if (d && d->level_to < d->level_from) relax = d;
    if (d && d->level_to == d->level_from) governor.stillAt("per-source", 0);  // fails again
  }
  ASSERT_TRUE(relax);
  ASSERT_EQ(relax->changes.size(), 1u);
  EXPECT_EQ(relax->changes[0].from_level, 0u);
  EXPECT_EQ(relax->changes[0].to_level, 1u);
  EXPECT_GT(relax->changes[0].to_level, relax->changes[0].from_level) << "a tighten";
}

// Bursts do not bound the load a relax lets through, rates do: a burst that halves
// (2 -> 1) with a rate that grows by less than 1 / step keeps the usual calm.
TEST(AdaptiveGovernor, OnlyTheRatesGrowthBoundsTheCalm) {
  config::AdaptiveConfig config = testConfig();
  config.step = 0.95;
  config.relax_below = 0.9;
  AdaptiveGovernor governor(config, {{"per-source", {1000, 20, 0, 0}, {10, 1, 0, 0}}});
  Host host(governor);
  for (int i = 0; i < 100 && governor.limitsOf(0).burst > 1; ++i) host.tick(5000);
  ASSERT_EQ(governor.limitsOf(0).burst, 1u);
  ASSERT_GT(governor.limitsOf(0).pps, 100u) << "the rate still far from a one-unit step";
  const uint32_t level = governor.level();
  host.run(30, [](uint64_t) { return 600.0; });  // under 1000 x 0.9, and under 1000 / 1.06
  EXPECT_LT(governor.level(), level) << "relaxed";
}

// A relax that could not be written is made again at the next calm reading.
TEST(AdaptiveGovernor, AFailedRelaxIsMadeAgain) {
  AdaptiveGovernor governor(testConfig(), testRules());
  Host host(governor);
  host.tick(5000);  // level 1: 50
  host.run(60, [](uint64_t) { return 0.0; });
  ASSERT_EQ(governor.level(), 0u);
  const AdaptiveDecision relax = host.decisions.back();
  ASSERT_EQ(relax.action, AdaptiveAction::kRelax);
  governor.stillAt("per-source", relax.changes.at(0).from_level);  // 50 -> 100 failed
  auto retried = host.tick(0);
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->action, AdaptiveAction::kRelax);
  ASSERT_EQ(retried->changes.size(), 1u);
  EXPECT_EQ(retried->changes[0].from, (LimitSpec{50, 5, 0, 0}));
  EXPECT_EQ(retried->changes[0].to, (LimitSpec{100, 10, 0, 0}));
  EXPECT_FALSE(host.tick(0)) << "written once: nothing to make again";
}

}  // namespace
}  // namespace floodgate::daemon
