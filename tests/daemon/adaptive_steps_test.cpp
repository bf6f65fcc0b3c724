// SPDX-License-Identifier: MIT
// The daemon's side of adaptive: what a reload keeps, and what counts as passed load.
#include "daemon/adaptive_steps.h"

#include <gtest/gtest.h>

#include "controller/rule_compiler.h"

namespace floodgate::daemon {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

config::AdaptiveConfig section() {
  config::AdaptiveConfig c;
  c.capacity_pps = 1000;
  c.floors = {{"per-source", {10, 1, 0, 0}}};
  c.interval_ns = kSecond;
  c.relax_after_ns = 5 * kSecond;
  return c;
}

AttachOptions options(uint64_t pps) {
  AttachOptions o;
  o.interface = "eth0";
  RuleSpec per_source;
  per_source.name = "per-source";
  per_source.limit = {pps, 10, 0, 0};
  RuleSpec other;
  other.name = "other";
  other.limit = {7, 1, 0, 0};
  o.rules = {per_source, other};
  return o;
}

// A governor two steps down, for `o` (options(100) unless given).
AdaptiveGovernor tightened(AttachOptions o = options(100)) {
  std::vector<LogLine> lines;
  AdaptiveGovernor governor = *reconcileAdaptive(std::nullopt, section(), o, lines);
  governor.observe(0, {0, 0});
  governor.observe(kSecond, {5000, 0});
  governor.observe(2 * kSecond, {10000, 0});
  EXPECT_EQ(governor.level(), 2u);
  return governor;
}

TEST(AdaptiveSteps, AReloadOfTheSameSectionAndLimitsKeepsTheSqueezedLimits) {
  AttachOptions o = options(100);
  std::vector<LogLine> lines;
  auto kept = reconcileAdaptive(tightened(), section(), o, lines);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->level(), 2u);
  EXPECT_EQ(o.rules[0].limit, (LimitSpec{25, 3, 0, 0})) << "the reload runs the squeezed limits";
  EXPECT_EQ(o.rules[1].limit, (LimitSpec{7, 1, 0, 0})) << "a rule it does not name is as written";
  EXPECT_TRUE(lines.empty());
  // after a reload the counters may have started over: the next reading is a baseline only
  EXPECT_FALSE(kept->observe(3 * kSecond, {0, 0}));
  EXPECT_EQ(kept->level(), 2u);
}

TEST(AdaptiveSteps, AReloadGovernsARuleSetByHandAgain) {
  AdaptiveGovernor governor = tightened();
  governor.release("per-source");
  AttachOptions o = options(100);
  std::vector<LogLine> lines;
  auto kept = reconcileAdaptive(std::move(governor), section(), o, lines);
  ASSERT_TRUE(kept);
  EXPECT_FALSE(kept->released(0)) << "the reload wrote its limits again";
  EXPECT_EQ(o.rules[0].limit, (LimitSpec{25, 3, 0, 0}));
}

TEST(AdaptiveSteps, AChangedLimitOrSectionStartsOverAtTheConfiguredLimits) {
  AttachOptions o = options(200);
  std::vector<LogLine> lines;
  auto fresh = reconcileAdaptive(tightened(), section(), o, lines);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->level(), 0u);
  EXPECT_EQ(o.rules[0].limit, (LimitSpec{200, 10, 0, 0}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].text.find("starts over at the configured limits"), std::string::npos);

  config::AdaptiveConfig slower = section();
  slower.relax_after_ns = 60 * kSecond;
  AttachOptions same = options(100);
  lines.clear();
  EXPECT_EQ(reconcileAdaptive(tightened(), slower, same, lines)->level(), 0u);
  EXPECT_EQ(same.rules[0].limit, (LimitSpec{100, 10, 0, 0}));
}

// The reload that ends a dry run (defaults.monitor, or a named rule's on_exceed: monitor)
// enforces the configured limits, not the floors the dry run reached.
TEST(AdaptiveSteps, EnforcingAfterADryRunStartsOverAtTheConfiguredLimits) {
  AttachOptions monitor = options(100);
  monitor.monitor = true;
  AttachOptions rule_monitor = options(100);
  rule_monitor.rules[0].action = ExceedAction::kMonitor;
  for (const AttachOptions& dry : {monitor, rule_monitor}) {
    AttachOptions enforce = options(100);
    std::vector<LogLine> lines;
    auto fresh = reconcileAdaptive(tightened(dry), section(), enforce, lines);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->level(), 0u);
    EXPECT_EQ(enforce.rules[0].limit, (LimitSpec{100, 10, 0, 0}));
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].text.find("monitor mode"), std::string::npos) << lines[0].text;
  }
  // a dry run that goes on keeps its level, and so does a rule it does not name changing
  AttachOptions still = monitor;
  still.rules[1].action = ExceedAction::kMonitor;
  std::vector<LogLine> lines;
  EXPECT_EQ(reconcileAdaptive(tightened(monitor), section(), still, lines)->level(), 2u);
}

TEST(AdaptiveSteps, NoSectionNoGovernor) {
  AttachOptions o = options(100);
  std::vector<LogLine> lines;
  EXPECT_FALSE(reconcileAdaptive(std::nullopt, std::nullopt, o, lines));
  EXPECT_TRUE(lines.empty());
  EXPECT_FALSE(reconcileAdaptive(tightened(), std::nullopt, o, lines));
  EXPECT_EQ(o.rules[0].limit, (LimitSpec{100, 10, 0, 0}));
  ASSERT_EQ(lines.size(), 1u) << "the section went away while it had moved the limits";
}

// Monitor verdicts pass packets enforcing would drop: left out, so that in a dry run
// tightening lowers the load it measures as enforcing would, and stops where enforcing would.
// Enforcing, monitor verdicts pass (a rule's on_exceed: monitor, whose refusals the
// governed rules may still pass); in monitor mode they are what enforcing would drop.
TEST(AdaptiveSteps, PassedLoadIsWhatEnforcingWouldPassOfEveryReason) {
  std::vector<CounterRow> rows = {
      {FG_VERDICT_PASS, FG_REASON_DEFAULT, 100, 6000},
      {FG_VERDICT_PASS, FG_REASON_ALLOW, 10, 600},
      {FG_VERDICT_MONITOR, FG_REASON_RATE, 5, 300},
      {FG_VERDICT_DROP, FG_REASON_RATE, 1000, 60000},
  };
  PassedCounters passed = passedOf(rows, false);
  EXPECT_EQ(passed.packets, 115u);
  EXPECT_EQ(passed.bytes, 6900u);
  PassedCounters dry_run = passedOf(rows, true);
  EXPECT_EQ(dry_run.packets, 110u);
  EXPECT_EQ(dry_run.bytes, 6600u);
}

// A level whose limits the rule could not run (a burst of 9000 at 2 pps takes over an hour
// to refill, which no rule may) is never offered: the rule's way down stops before it, so
// no step fails to compile and no rule is released for it.
TEST(AdaptiveSteps, EveryLevelOfferedCompiles) {
  AttachOptions o = options(4);
  o.rules[0].limit = {4, 9000, 0, 0};
  config::AdaptiveConfig c = section();
  c.step = 0.9;
  c.relax_below = 0.5;
  c.floors = {{"per-source", {1, 2250, 0, 0}}};
  std::vector<LogLine> lines;
  AdaptiveGovernor governor = *reconcileAdaptive(std::nullopt, c, o, lines);
  uint64_t now = 0, packets = 0;
  governor.observe(now, {packets, 0});
  for (uint32_t i = 0; i < 100 && governor.level() < governor.maxLevel(); ++i) {
    now += kSecond;
    packets += 5000;
    governor.observe(now, {packets, 0});
    RuleSpec spec = o.rules[0];
    spec.limit = governor.limitsOf(0);
    EXPECT_TRUE(compileRule(spec).ok()) << "level " << governor.level();
  }
  EXPECT_GE(governor.maxLevel(), 1u) << "the levels it can run are still offered";
}

}  // namespace
}  // namespace floodgate::daemon
