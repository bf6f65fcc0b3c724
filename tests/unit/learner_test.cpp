// SPDX-License-Identifier: MIT
// The learner of `floodgate learn` on recorded per-source samples and a clock stepped by
// hand: percentiles, proposals and the replay checked exactly; counter wrap, slots changing
// hands, sources appearing mid-run and the source cap; proposals as the config parser takes
// them, and the --output file written through no link.
#include "learn/learner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "config/floodgate_config.h"
#include "learn/learn_command.h"
#include "learn/learn_loop.h"
#include "learn/learn_output.h"
#include "learn/rate_histogram.h"

namespace floodgate::learn {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMs = 1000000ULL;
constexpr uint64_t kStart = 5000 * kMs;  // any clock: the learner only takes differences
constexpr uint64_t kFrameBytes = 60;

// A clock that jumps to whatever it is asked to wait for.
class SteppedClock : public LearnClock {
 public:
  uint64_t now = kStart;
  uint64_t nowNs() override { return now; }
  bool sleepUntil(uint64_t deadline_ns) override {
    if (deadline_ns > now) now = deadline_ns;
    return true;
  }
};

// Per source, packets sent in each sample interval (index 0 = the interval the first
// sample after the baseline ends); the sampler turns them into the slot counters and rule
// counters the program would show.
struct RecordedSource {
  uint32_t slot;
  uint8_t last_octet;
  std::vector<uint32_t> per_interval;
  uint32_t counter = 0;  // the slot's packets at the baseline
};

class RecordedSampler : public Sampler {
 public:
  RecordedSampler(uint32_t rule_id, std::vector<RecordedSource> sources)
      : rule_id_(rule_id), sources_(std::move(sources)) {}

  Status read(std::vector<RuleReading>& rules, std::vector<SlotReading>& slots) override {
    for (RecordedSource& source : sources_) {
      if (reads_ > 0 && reads_ - 1 < source.per_interval.size()) {
        source.counter += source.per_interval[reads_ - 1];
        total_ += source.per_interval[reads_ - 1];
      }
      SlotReading reading;
      reading.slot = source.slot;
      reading.fingerprint = 1000 + source.slot;
      reading.key.rule_id = rule_id_;
      reading.key.family = 0;
      reading.key.prefix = 32;
      reading.key.addr = {198, 51, 100, source.last_octet};
      reading.packets = source.counter;
      slots.push_back(reading);
    }
    rules.push_back(RuleReading{rule_id_, total_, total_ * kFrameBytes, 0});
    ++reads_;
    return okStatus();
  }

 private:
  uint32_t rule_id_;
  std::vector<RecordedSource> sources_;
  size_t reads_ = 0;
  uint64_t total_ = 0;
};

LearnRule perSourceRule() {
  LearnRule rule;
  rule.id = 3;
  rule.name = "per-source";
  rule.current = LimitSpec{1000000, 100000, 0, 0};
  return rule;
}

LearnOptions threeSeconds() {
  LearnOptions options;
  options.duration_ns = 3000 * kMs;
  options.sample_ns = 100 * kMs;
  options.hz = 250;
  return options;
}

std::vector<uint32_t> steady(uint32_t per_interval, size_t intervals = 30) {
  return std::vector<uint32_t>(intervals, per_interval);
}

TEST(RateHistogramTest, NearestRankPercentilesAreExactBelowTheRoundingThreshold) {
  RateHistogram h;
  for (uint64_t v = 1000; v >= 1; --v) h.add(v);
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_EQ(h.percentile(50000), 500u);
  EXPECT_EQ(h.percentile(99000), 990u);
  EXPECT_EQ(h.percentile(99900), 999u);
  EXPECT_EQ(h.percentile(100000), 1000u);
  EXPECT_EQ(h.max(), 1000u);
  EXPECT_EQ(RateHistogram().percentile(99900), 0u);
}

TEST(RateHistogramTest, LargeValuesRoundUpToElevenBitsAndNeverPastTheMaximum) {
  EXPECT_EQ(RateHistogram::bucketOf(2047), 2047u);
  EXPECT_EQ(RateHistogram::bucketOf(2049), 2050u);
  EXPECT_EQ(RateHistogram::bucketOf(1000001), 1000448u);
  EXPECT_EQ(RateHistogram::bucketOf(UINT64_MAX), UINT64_MAX);
  RateHistogram h;
  h.add(1000001);
  EXPECT_EQ(h.percentile(50000), 1000001u);  // the bucket's top is past the only value
  h.add(999999);
  h.add(2000001);
  EXPECT_EQ(h.percentile(50000), 1000448u);
  EXPECT_LE(h.percentile(50000) - 1000001, 1000001u / 1024);
}

TEST(LearnerTest, PercentilesProposalAndReplayOfRecordedSources) {
  // 100, 200 and 300 packets a second, evenly; the third has one interval of 60 (a burst)
  std::vector<uint32_t> bursty = steady(30);
  bursty[14] = 60;  // in the second 1 s window
  RecordedSampler sampler(3, {{10, 1, steady(10)}, {11, 2, steady(20)}, {12, 3, bursty}});
  SteppedClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {perSourceRule()});
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->samples, 31u);
  ASSERT_EQ(report->rules.size(), 1u);
  const RuleLearned& rule = report->rules[0];
  EXPECT_EQ(rule.sources, 3u);
  EXPECT_EQ(rule.source_windows, 9u);
  // windows: 100 100 100 200 200 200 300 300 330
  EXPECT_EQ(rule.pps.p50, 200u);
  EXPECT_EQ(rule.pps.p99, 330u);
  EXPECT_EQ(rule.pps.p999, 330u);
  EXPECT_EQ(rule.pps.chosen, 330u);
  EXPECT_EQ(rule.pps.max, 330u);
  // bursts (most in 100 ms) per window: 10 10 10 20 20 20 30 30 60
  EXPECT_EQ(rule.burst.p50, 20u);
  EXPECT_EQ(rule.burst.p999, 60u);
  // bits at the rule's 60-byte frames
  EXPECT_EQ(rule.bps.p50, 200u * kFrameBytes * 8);
  EXPECT_EQ(rule.bps.max, 330u * kFrameBytes * 8);
  EXPECT_EQ(rule.tracked_packets, 300u + 600 + 930);
  EXPECT_EQ(rule.rule_packets, 300u + 600 + 930);
  // p99.9 x 1.5
  ASSERT_TRUE(rule.proposal.has_value());
  EXPECT_EQ(rule.proposal->pps, 495u);
  EXPECT_EQ(rule.proposal->burst, 90u);
  EXPECT_EQ(rule.proposal->bits_per_s, 0u);
  // nobody sent above it
  EXPECT_EQ(rule.replayed_sources, 3u);
  EXPECT_EQ(rule.replayed_packets, 1830u);
  EXPECT_EQ(rule.replay_dropped, 0u);
}

// A report of one token-bucket rule whose limit is `now` and whose proposal is `proposed`.
LearnReport reportOf(LimitSpec now, LimitSpec proposed) {
  LearnReport report;
  report.max_sources = 1000;
  RuleLearned rule;
  rule.rule.name = "per-source";
  rule.rule.current = now;
  rule.proposal = proposed;
  report.rules.push_back(rule);
  return report;
}

// --apply sets what a few flooding sources can steer: it refuses, without --force, a limit
// raised more than 4 times and a run whose source cap kept the typical sources out.
TEST(LearnApply, RefusesWhatAFewSourcesCouldHaveSteered) {
  EXPECT_TRUE(applyRefusal(reportOf({50, 100}, {177, 45})).ok());
  EXPECT_TRUE(applyRefusal(reportOf({50, 100}, {200, 400})).ok()) << "4 times is allowed";
  EXPECT_FALSE(applyRefusal(reportOf({1, 100}, {5, 100})).ok()) << "5 times is not";
  Status up = applyRefusal(reportOf({51, 100}, {150000, 90}));
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.error().message.find("rule 'per-source' raises its limit from {pps: 51, burst: "
                                    "100} to {pps: 150000, burst: 90}, more than 4 times"),
            std::string::npos)
      << up.error().message;
  EXPECT_NE(up.error().message.find("--apply --force"), std::string::npos);
  EXPECT_FALSE(applyRefusal(reportOf({50, 10}, {50, 90})).ok()) << "the burst too";
  // learning under generous limits lowers them: that is what it is for
  EXPECT_TRUE(applyRefusal(reportOf({1000000, 100000}, {600, 90})).ok());
  // a window rule has no burst to compare
  LearnReport window = reportOf({50, 0}, {60, 500});
  window.rules[0].rule.algorithm = Algorithm::kFixedWindow;
  EXPECT_TRUE(applyRefusal(window).ok());
  LearnReport window_up = reportOf({50, 0}, {500, 0});
  window_up.rules[0].rule.algorithm = Algorithm::kFixedWindow;
  Status raised = applyRefusal(window_up);
  ASSERT_FALSE(raised.ok());
  EXPECT_NE(raised.error().message.find("raises its limit from {pps: 50} to {pps: 500}, more"),
            std::string::npos)
      << raised.error().message;
  LearnReport capped = reportOf({50, 100}, {60, 90});
  capped.sources_beyond_cap = 1;
  Status over = applyRefusal(capped);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("more sources than --max-sources (1000)"), std::string::npos)
      << over.error().message;
}

// A few sources carrying much of the traffic (clients behind a NAT) are above a percentile
// of sources: a proposal whose replay drops more than 1% of the run's packets is not
// applied without --force.
TEST(LearnApply, RefusesAProposalThatWouldHaveDroppedMoreThanOnePercent) {
  LearnReport report = reportOf({1000, 100}, {2, 2});
  report.rules[0].replayed_packets = 1000;
  report.rules[0].replay_dropped = 10;
  EXPECT_TRUE(applyRefusal(report).ok()) << "1% is allowed";
  report.rules[0].replay_dropped = 11;
  Status refused = applyRefusal(report);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("the proposal for rule 'per-source' ({pps: 2, burst: "
                                         "2}) would have dropped 11 of the 1000 packets the run "
                                         "saw, more than 1%"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("--apply --force"), std::string::npos);
  report.rules[0].replayed_packets = UINT64_MAX;
  report.rules[0].replay_dropped = UINT64_MAX / 50;
  EXPECT_FALSE(applyRefusal(report).ok()) << "no overflow";
}

TEST(LearnApply, ForceGoesWithApply) {
  LearnFlags flags;
  flags.interface = "eth0";
  flags.duration = "10s";
  flags.force = true;
  auto request = parseLearnFlags(flags);
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.error().message, "--force goes with --apply");
  flags.apply = true;
  EXPECT_TRUE(parseLearnFlags(flags).ok());
}

// A clock that always wakes 3 ms late, as a real one does.
class LateClock : public SteppedClock {
 public:
  bool sleepUntil(uint64_t deadline_ns) override {
    now = std::max(now, deadline_ns + 3 * kMs);
    return true;
  }
};

TEST(LearnerTest, SamplesTakenLateStayInTheirWindows) {
  RecordedSampler sampler(3, {{10, 1, steady(10)}});
  LateClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->samples, 31u);
  EXPECT_EQ(report->rules[0].source_windows, 3u);
  EXPECT_EQ(report->rules[0].pps.p50, 100u);
  EXPECT_EQ(report->rules[0].pps.max, 100u);
}

// A clock on which the sample due at 500 ms is taken at 1200 ms (a slow table read, a busy
// machine), and every other one on time.
class OnceLateClock : public SteppedClock {
 public:
  bool sleepUntil(uint64_t deadline_ns) override {
    now = std::max(now, deadline_ns == kStart + 500 * kMs ? kStart + 1200 * kMs : deadline_ns);
    return true;
  }
};

// A source at a steady 100 pps, read by samples one of which came 700 ms late: the first
// window then holds 1.2 s of its packets (the intervals that start in it) and the second
// 0.8 s, each a rate of 100 a second, not 120 and 80.
TEST(LearnerTest, AWindowHoldingMoreOrLessThanASecondIsARateOverItsLength) {
  std::vector<uint32_t> sent = {10, 10, 10, 10, 80};  // 0.4 s, then the 0.8 s interval
  const std::vector<uint32_t> rest = steady(10, 18);  // 1.2 s to 3 s
  sent.insert(sent.end(), rest.begin(), rest.end());
  RecordedSampler sampler(3, {{10, 1, sent}});
  OnceLateClock clock;
  LearnOptions options = threeSeconds();
  options.percentile_milli = 1;  // the chosen figure is then the lowest window's
  auto report = runLearning(sampler, clock, options, {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->samples, 24u);
  EXPECT_EQ(report->rules[0].source_windows, 3u);
  EXPECT_EQ(report->rules[0].pps.max, 100u);
  EXPECT_EQ(report->rules[0].pps.chosen, 100u);
  EXPECT_EQ(report->rules[0].bps.max, 100u * kFrameBytes * 8);
}

// A clock whose run is stopped (Ctrl-C) after `wakes` samples.
class StoppedClock : public SteppedClock {
 public:
  int wakes = 10;
  bool sleepUntil(uint64_t deadline_ns) override {
    if (wakes-- == 0) return false;
    return SteppedClock::sleepUntil(deadline_ns);
  }
};

TEST(LearnerTest, AStoppedRunReportsWhatItSaw) {
  RecordedSampler sampler(3, {{10, 1, steady(10)}});
  StoppedClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->samples, 11u);
  EXPECT_EQ(report->rules[0].source_windows, 1u);
  EXPECT_EQ(report->rules[0].pps.max, 100u);
  EXPECT_EQ(report->rules[0].replayed_packets, 100u);
  // neither written nor applied, --force or not: 1 s seen of the 3 asked for
  EXPECT_TRUE(report->stopped);
  Status refused = stoppedRefusal(*report);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "stopped by Ctrl-C after 1s of 3s sampled: nothing written or applied (a stopped "
            "run is not to be used); learn again to write or apply");
}

TEST(LearnerTest, AWholeRunIsNotStopped) {
  RecordedSampler sampler(3, {{10, 1, steady(10)}});
  SteppedClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->stopped);
  EXPECT_TRUE(stoppedRefusal(*report).ok());
}

TEST(LearnerTest, AProposalBelowTheFastestSourceDropsOnlyItsExcess) {
  RecordedSampler sampler(3, {{10, 1, steady(10)}, {11, 2, steady(20)}, {12, 3, steady(30)}});
  SteppedClock clock;
  LearnOptions options = threeSeconds();
  options.percentile_milli = 50000;  // p50 = 200/s, burst 20
  options.margin_milli = 1000;
  auto report = runLearning(sampler, clock, options, {perSourceRule()});
  ASSERT_TRUE(report.ok()) << report.error().message;
  const RuleLearned& rule = report->rules[0];
  ASSERT_TRUE(rule.proposal.has_value());
  EXPECT_EQ(rule.proposal->pps, 200u);
  EXPECT_EQ(rule.proposal->burst, 20u);
  // the 300/s source sent 900 over 3 s; 200/s with a burst of 20 admits at most
  // 20 + 200 x 3 and at least 20 + 200 x 2.9 of them; the others are under the limit
  EXPECT_GE(rule.replay_dropped, 900u - 620u);
  EXPECT_LE(rule.replay_dropped, 900u - 600u);
}

TEST(ReplayTest, ATicksPacketsMeetOneClockReadingAsInTheProgram) {
  // 100 packets in one second at 10 Hz: 10 a tick. pps 10 with a burst of 5: the first
  // tick takes the full bucket (5), every later one a single packet: 5 + 9 admitted.
  const std::vector<uint64_t> times = {0, 1000 * kMs};
  EXPECT_EQ(
      replayDrops({100}, times, 1, LimitSpec{10, 5, 0, 0}, Algorithm::kTokenBucket, 0, 10).value(),
      86u);
  // under the limit: nothing dropped
  EXPECT_EQ(
      replayDrops({10}, times, 1, LimitSpec{10, 5, 0, 0}, Algorithm::kTokenBucket, 0, 10).value(),
      0u);
  // a fixed window of 1 s admits 10 in [0, 1 s) (ticks 1..9) and 10 at the tick of 1 s
  EXPECT_EQ(
      replayDrops({100}, times, 1, LimitSpec{10, 0, 0, 0}, Algorithm::kFixedWindow, 1000 * kMs, 10)
          .value(),
      80u);
}

// A limit the replay cannot run is an error saying why, never 0 dropped.
TEST(ReplayTest, ALimitItCannotRunIsNotEvaluated) {
  const std::vector<uint64_t> times = {0, 1000 * kMs};
  auto no_packet = replayDrops({100}, times, 1, LimitSpec{5, 0, 0, 0}, Algorithm::kFixedWindow,
                               100 * kMs, 10);  // half a packet a window
  ASSERT_FALSE(no_packet.ok());
  EXPECT_NE(no_packet.error().message.find("admits no packet per window"), std::string::npos)
      << no_packet.error().message;
  auto bytes_only = replayDrops({100}, times, 1, LimitSpec{0, 0, 8000000, 100000},
                                Algorithm::kTokenBucket, 0, 10);
  ASSERT_FALSE(bytes_only.ok());
  EXPECT_NE(bytes_only.error().message.find("no pps"), std::string::npos);
  EXPECT_FALSE(
      replayDrops({100}, times, 1, LimitSpec{10, 5, 0, 0}, Algorithm::kTokenBucket, 0, 0).ok());
}

// A rule whose sources all came after the replay's budget was spent has a proposal and no
// replay: the report says the share was not evaluated, not 0%, and --apply refuses it.
TEST(LearnerTest, AProposalTheReplayCouldNotEvaluateIsSaidSo) {
  RecordedSampler sampler(3, {{10, 1, steady(10)}, {11, 2, steady(20)}});
  SteppedClock clock;
  LearnOptions options = threeSeconds();
  options.replay_budget = 0;
  auto report = runLearning(sampler, clock, options, {perSourceRule()});
  ASSERT_TRUE(report.ok()) << report.error().message;
  const RuleLearned& rule = report->rules[0];
  ASSERT_TRUE(rule.proposal.has_value());
  EXPECT_EQ(rule.replayed_sources, 0u);
  EXPECT_NE(rule.not_replayed.find("no source of the rule was kept for the replay"),
            std::string::npos)
      << rule.not_replayed;

  const std::string text = reportText("eth0", *report);
  EXPECT_NE(text.find("would have dropped: not evaluated, no source of the rule was kept"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("(0.00%)"), std::string::npos) << text;
  nlohmann::json json = reportJson("eth0", *report);
  EXPECT_TRUE(json["rules"][0]["replay"]["dropped_share"].is_null());
  EXPECT_EQ(json["rules"][0]["replay"]["not_evaluated"], rule.not_replayed);

  Status refused = applyRefusal(*report);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find(
                "the proposal for rule 'per-source' would have dropped is not known"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("--apply --force"), std::string::npos);

  // a replay that cannot run says why in place of a share
  RecordedSampler no_clock_sampler(3, {{10, 1, steady(10)}});
  LearnOptions no_clock = threeSeconds();
  no_clock.hz = 0;
  auto unclocked = runLearning(no_clock_sampler, clock, no_clock, {perSourceRule()});
  ASSERT_TRUE(unclocked.ok());
  EXPECT_EQ(unclocked->rules[0].replayed_sources, 1u);
  EXPECT_EQ(unclocked->rules[0].not_replayed, "the kernel's clock rate (HZ) is not known");
  EXPECT_FALSE(applyRefusal(*unclocked).ok());

  // replayed, the share is a number and the reason null
  RecordedSampler replayed_sampler(3, {{10, 1, steady(10)}});
  auto replayed = runLearning(replayed_sampler, clock, threeSeconds(), {perSourceRule()});
  ASSERT_TRUE(replayed.ok());
  EXPECT_TRUE(replayed->rules[0].not_replayed.empty());
  nlohmann::json evaluated = reportJson("eth0", *replayed);
  EXPECT_EQ(evaluated["rules"][0]["replay"]["dropped_share"], 0.0);
  EXPECT_TRUE(evaluated["rules"][0]["replay"]["not_evaluated"].is_null());
}

// A sampler replaying exact slot readings, one list per sample.
class SlotScript : public Sampler {
 public:
  explicit SlotScript(std::vector<std::vector<SlotReading>> samples)
      : samples_(std::move(samples)) {}
  Status read(std::vector<RuleReading>& rules, std::vector<SlotReading>& slots) override {
    rules.push_back(RuleReading{3, 0, 0, 0});
    if (next_ < samples_.size()) slots = samples_[next_];
    ++next_;
    return okStatus();
  }

 private:
  std::vector<std::vector<SlotReading>> samples_;
  size_t next_ = 0;
};

SlotReading slotOf(uint32_t slot, uint64_t fingerprint, uint8_t octet, uint32_t packets) {
  SlotReading r;
  r.slot = slot;
  r.fingerprint = fingerprint;
  r.key.rule_id = 3;
  r.key.prefix = 32;
  r.key.addr = {203, 0, 113, octet};
  r.packets = packets;
  return r;
}

LearnOptions oneSecond() {
  LearnOptions options;
  options.duration_ns = 1000 * kMs;
  options.sample_ns = 500 * kMs;
  return options;
}

TEST(LearnerTest, CountersThatWrapOrStartAgainAreCountedOnce) {
  // wraps: 4294967290 → 10 is 16 packets; then the counter starts again (the slot changed
  // hands and came back between samples): 10 → 4 counts the 4 since
  SlotScript script(
      {{slotOf(1, 77, 1, 4294967290U)}, {slotOf(1, 77, 1, 10)}, {slotOf(1, 77, 1, 4)}});
  SteppedClock clock;
  auto report = runLearning(script, clock, oneSecond(), {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rules[0].tracked_packets, 20u);
  EXPECT_EQ(report->rules[0].pps.max, 20u);
  EXPECT_EQ(report->rules[0].burst.max, 16u);
}

TEST(LearnerTest, SourcesAppearingAndSlotsChangingHandsMidRun) {
  // slot 1: source .1 at the baseline (50 before the run do not count), then 5 more; then
  // source .2 takes the slot and has 7 when read. Slot 2 appears after the baseline with
  // 9: all taken since the last sample. Source .1 comes back in slot 3 with 2.
  SlotScript script({{slotOf(1, 11, 1, 50)},
                     {slotOf(1, 11, 1, 55), slotOf(2, 22, 9, 9)},
                     {slotOf(1, 12, 2, 7), slotOf(3, 11, 1, 2)}});
  SteppedClock clock;
  auto report = runLearning(script, clock, oneSecond(), {perSourceRule()});
  ASSERT_TRUE(report.ok());
  const RuleLearned& rule = report->rules[0];
  EXPECT_EQ(rule.sources, 3u);
  EXPECT_EQ(rule.tracked_packets, 5u + 9 + 7 + 2);
  EXPECT_EQ(rule.pps.max, 9u);  // .9 sent 9; .1 sent 5 + 2 = 7; .2 sent 7
  EXPECT_EQ(rule.burst.max, 9u);
}

// A reading of `slot` owned by source 203.0.(n / 256).(n % 256), its own fingerprint.
SlotReading sourceSlot(uint32_t slot, uint32_t n, uint32_t packets) {
  SlotReading r = slotOf(slot, 100 + n, static_cast<uint8_t>(n), packets);
  r.key.addr[2] = static_cast<uint8_t>(n >> 8);
  return r;
}

TEST(LearnerTest, SpoofedSourcesBeyondTheCapAreCountedNotFollowed) {
  std::vector<SlotReading> baseline, later;
  for (uint32_t i = 0; i < 1000; ++i) later.push_back(sourceSlot(i, i, 1));
  SlotScript script({baseline, later, later});
  SteppedClock clock;
  LearnOptions options = oneSecond();
  options.max_sources = 10;
  auto report = runLearning(script, clock, options, {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rules[0].sources, 10u);
  EXPECT_EQ(report->rules[0].tracked_packets, 10u);
  // the sightings of sources that sent: the second sample sees none send
  EXPECT_EQ(report->sources_beyond_cap, 990u);
}

// Slots idle sources hold (the table keeps a source's slot until another takes it, and a
// spoofed flood before the run leaves many) are not followed: the cap is for the sources
// that send during the run.
TEST(LearnerTest, IdleSlotsDoNotFillTheCap) {
  std::vector<SlotReading> idle, sending;
  for (uint32_t i = 0; i < 1000; ++i) idle.push_back(sourceSlot(i, i, 1));
  sending = idle;
  for (uint32_t i = 0; i < 5; ++i) sending.push_back(sourceSlot(2000 + i, 5000 + i, 7));
  SlotScript script({idle, sending, sending});
  SteppedClock clock;
  LearnOptions options = oneSecond();
  options.max_sources = 10;
  auto report = runLearning(script, clock, options, {perSourceRule()});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rules[0].sources, 5u);
  EXPECT_EQ(report->rules[0].tracked_packets, 35u);
  EXPECT_EQ(report->sources_beyond_cap, 0u);
}

TEST(LearnerTest, AGlobalRuleAndASilentRuleGetNoProposal) {
  LearnRule global = perSourceRule();
  global.per_source = false;
  SlotScript script({{}, {}, {}});
  SteppedClock clock;
  auto report = runLearning(script, clock, oneSecond(), {global});
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->rules[0].proposal.has_value());
  EXPECT_NE(report->rules[0].note.find("global"), std::string::npos);
  SlotScript quiet({{}, {}, {}});
  auto silent = runLearning(quiet, clock, oneSecond(), {perSourceRule()});
  ASSERT_TRUE(silent.ok());
  EXPECT_FALSE(silent->rules[0].proposal.has_value());
}

// A proposal only changes the limits a rule has: a rule limiting bits/s only gets no pps
// limit (none to apply, write or diff), and one with both keeps its bps as it is.
TEST(LearnerTest, ARuleLimitingBitsOnlyGetsNoPacketLimit) {
  LearnRule bits_only = perSourceRule();
  bits_only.current = LimitSpec{0, 0, 8000000, 100000};
  RecordedSampler sampler(3, {{10, 1, steady(10)}});
  SteppedClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {bits_only});
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->rules[0].proposal.has_value());
  EXPECT_NE(report->rules[0].note.find("the rule limits bits/s only"), std::string::npos)
      << report->rules[0].note;
  EXPECT_NE(reportText("eth0", *report).find("no proposal: the rule limits bits/s only"),
            std::string::npos);
  EXPECT_EQ(proposalYaml("eth0", *report).find("name: per-source"), std::string::npos);
  EXPECT_TRUE(applyRefusal(*report).ok()) << "nothing to apply, so nothing to refuse";

  LearnRule both = perSourceRule();
  both.current = LimitSpec{1000000, 100000, 8000000, 100000};
  RecordedSampler both_sampler(3, {{10, 1, steady(10)}});
  auto learned = runLearning(both_sampler, clock, threeSeconds(), {both});
  ASSERT_TRUE(learned.ok());
  ASSERT_TRUE(learned->rules[0].proposal.has_value());
  EXPECT_EQ(*learned->rules[0].proposal, (LimitSpec{150, 15, 8000000, 100000}));
}

TEST(LearnerTest, OutputsCarryTheProposal) {
  RecordedSampler sampler(3, {{10, 1, steady(10)}});
  SteppedClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {perSourceRule()});
  ASSERT_TRUE(report.ok());
  const std::string yaml = proposalYaml("eth0", *report);
  EXPECT_NE(yaml.find("  - name: per-source\n    limit: {pps: 150, burst: 15}\n"),
            std::string::npos)
      << yaml;
  nlohmann::json json = reportJson("eth0", *report);
  EXPECT_EQ(json["rules"][0]["proposal"]["pps"], 150);
  EXPECT_EQ(json["rules"][0]["sources"], 1);
  EXPECT_EQ(json["percentile"], 99.9);
  ConfigRules config{"floodgate.yaml", "rules:\n  - name: per-source\n    limit: {pps: 50}\n", {}};
  RuleSpec spec;
  spec.name = "per-source";
  spec.limit = LimitSpec{50, 5, 0, 0};
  config.rules.push_back(spec);
  const std::string diff = proposalDiff(config, *report);
  EXPECT_NE(diff.find("@@ rule per-source (line 2) @@\n-    limit: {pps: 50, burst: 5}\n+    "
                      "limit: {pps: 150, burst: 15}\n"),
            std::string::npos)
      << diff;
}

// The `limit:` line of `text` that starts with `prefix`, without the prefix.
std::string limitLine(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix + "limit: ");
  if (at == std::string::npos) return "";
  const size_t start = at + prefix.size();
  return text.substr(start, text.find('\n', start) - start);
}

// A window rule's proposal, pasted into the rule as the fragment (--output) or the diff
// (--diff) shows it, loads through the config parser: it carries no burst, which a window
// refuses, and admits at least one packet a window.
TEST(LearnerTest, AWindowRulesProposalLoadsThroughTheConfigParser) {
  std::vector<uint32_t> one_a_second(30, 0);
  for (size_t i = 0; i < one_a_second.size(); i += 10) one_a_second[i] = 1;
  std::vector<uint32_t> bursty = steady(30);
  bursty[14] = 60;
  const struct {
    const char* algorithm;
    const char* window;
    const char* limit;  // in the config, as its author wrote it
    std::vector<uint32_t> per_interval;
  } cases[] = {
      {"fixed_window", "1s", "{pps: 100k}", bursty},
      {"fixed_window", "1s", "{pps: 100k, bps: 8Mbit}", bursty},
      {"sliding_window", "1s", "{pps: 100k}", bursty},
      // 1 packet a second x 1.5 is a fifth of a packet per 100ms window: raised to one
      {"fixed_window", "100ms", "{pps: 100k}", one_a_second},
      {"sliding_window", "100ms", "{pps: 100k}", one_a_second},
  };
  for (const auto& c : cases) {
    const std::string head = std::string("rules:\n  - name: per-source\n    algorithm: ") +
                             c.algorithm + "\n    window: " + c.window + "\n";
    const std::string file = head + "    limit: " + c.limit + "\n";
    config::Diagnostics diagnostics;
    const config::FloodgateConfig parsed = config::parseConfig(file, "floodgate.yaml", diagnostics);
    ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
    ASSERT_EQ(parsed.rules.size(), 1u);
    const RuleSpec& spec = parsed.rules[0];

    // the rule as the running limiter describes it (describeLimits: a window has no bursts)
    LearnRule rule = perSourceRule();
    rule.algorithm = spec.algorithm;
    rule.window_ns = spec.window_ns;
    rule.current = LimitSpec{spec.limit.pps, 0, spec.limit.bits_per_s, 0};
    RecordedSampler sampler(3, {{10, 1, c.per_interval}});
    SteppedClock clock;
    auto report = runLearning(sampler, clock, threeSeconds(), {rule});
    ASSERT_TRUE(report.ok()) << report.error().message;
    ASSERT_TRUE(report->rules[0].proposal.has_value()) << report->rules[0].note;

    const std::string from_yaml = limitLine(proposalYaml("eth0", *report), "    ");
    const std::string from_diff = limitLine(
        proposalDiff(ConfigRules{"floodgate.yaml", file, parsed.rules}, *report), "+    ");
    for (const std::string& line : {from_yaml, from_diff}) {
      ASSERT_FALSE(line.empty()) << c.algorithm << " " << c.window;
      config::Diagnostics pasted;
      config::parseConfig(head + "    " + line + "\n", "floodgate.yaml", pasted);
      EXPECT_TRUE(pasted.empty()) << c.algorithm << " " << c.window << ": " << line << ": "
                                  << pasted.format();
    }
  }
}

// A sliding window counts at most 2^20 - 1 packets: a proposal past it would not load, so
// there is none, and the note says why.
TEST(LearnerTest, AProposalPastAWindowsCounterIsNone) {
  LearnRule rule = perSourceRule();
  rule.algorithm = Algorithm::kSlidingWindow;
  rule.window_ns = 1000 * kMs;
  rule.current = LimitSpec{1000000, 0, 0, 0};
  RecordedSampler sampler(3, {{10, 1, steady(100000)}});  // 1M a second, x 1.5
  SteppedClock clock;
  auto report = runLearning(sampler, clock, threeSeconds(), {rule});
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->rules[0].proposal.has_value());
  EXPECT_NE(report->rules[0].note.find("comes to pps 1500000, which the rule cannot take"),
            std::string::npos)
      << report->rules[0].note;
  EXPECT_NE(proposalYaml("eth0", *report).find("[]"), std::string::npos);
}

// A directory of its own under the system temp dir, removed with the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fg-learn-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string contentsOf(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The names in `dir`, sorted: what a write left behind.
std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// --output is written as root: a link planted in a directory of the path (/tmp/x pointing
// to /etc) must not send the file where it points, any more than a link at the file itself.
TEST(LearnOutputFile, NoLinkInThePathIsFollowed) {
  TempDir tmp;
  // where anyone may plant a link, as /tmp
  fs::permissions(tmp.path(), fs::perms::all | fs::perms::sticky_bit);
  const fs::path real = tmp.path() / "real";
  fs::create_directory(real);
  fs::create_directory_symlink(real, tmp.path() / "link");

  Status through_dir = writeProposalFile((tmp.path() / "link" / "out.yaml").string(), "rules:\n");
  ASSERT_FALSE(through_dir.ok());
  EXPECT_EQ(through_dir.error().message,
            "cannot write the proposal to '" + (tmp.path() / "link" / "out.yaml").string() +
                "': '" + (tmp.path() / "link").string() + "' is a symbolic link (to '" +
                real.string() +
                "'); give a path with no link in it (written as root, a link is followed only "
                "where root made it, in a directory only root writes)");
  EXPECT_TRUE(namesIn(real).empty()) << "nothing written where the link points";

  // a link deeper in the path, and one given relative to the working directory
  fs::create_directory(real / "sub");
  EXPECT_FALSE(writeProposalFile((tmp.path() / "link" / "sub" / "out.yaml").string(), "").ok());
  const fs::path before = fs::current_path();
  fs::current_path(tmp.path());
  Status relative = writeProposalFile("link/out.yaml", "rules:\n");
  Status plain = writeProposalFile("real/out.yaml", "rules:\n");
  fs::current_path(before);
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message.find("'link' is a symbolic link"), std::string::npos)
      << relative.error().message;
  EXPECT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(namesIn(real), (std::vector<std::string>{"out.yaml", "sub"}));

  // the file itself: a link there is refused and what it points to left alone
  std::ofstream(tmp.path() / "victim") << "kept\n";
  fs::create_symlink(tmp.path() / "victim", real / "planted.yaml");
  Status at_file = writeProposalFile((real / "planted.yaml").string(), "rules:\n");
  ASSERT_FALSE(at_file.ok());
  EXPECT_NE(at_file.error().message.find("it is a symbolic link; give the path of a file itself"),
            std::string::npos);
  EXPECT_EQ(contentsOf(tmp.path() / "victim"), "kept\n");
}

// A link only root could have made (root's, in a directory only root writes, as /var/run to
// /run) is followed; the same link where another may write, or another's, is not.
TEST(LearnOutputFile, ALinkOnlyRootCouldHaveMadeIsFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to own the link and its directory";
  TempDir tmp;
  const fs::path var = tmp.path() / "var", run = tmp.path() / "run";
  fs::create_directory(var);
  fs::create_directory(run);
  fs::permissions(var, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::create_directory_symlink(run, var / "run");
  const std::string out = (var / "run" / "out.yaml").string();
  Status trusted = writeProposalFile(out, "rules:\n");
  EXPECT_TRUE(trusted.ok()) << trusted.error().message;
  EXPECT_EQ(contentsOf(run / "out.yaml"), "rules:\n");

  fs::permissions(var, fs::perms::others_write, fs::perm_options::add);
  EXPECT_FALSE(writeProposalFile(out, "x\n").ok()) << "its directory is one others may write";
  fs::permissions(var, fs::perms::others_write, fs::perm_options::remove);
  ASSERT_EQ(lchown((var / "run").c_str(), 65534, 65534), 0) << strerror(errno);
  EXPECT_FALSE(writeProposalFile(out, "x\n").ok()) << "the link is another user's";
  EXPECT_EQ(contentsOf(run / "out.yaml"), "rules:\n");
}

TEST(LearnOutputFile, AFileIsReplacedWholeAndAnythingElseRefused) {
  TempDir tmp;
  const fs::path out = tmp.path() / "learned.yaml";
  ASSERT_TRUE(writeProposalFile(out.string(), "rules:\n  - name: a\n").ok());
  EXPECT_EQ(contentsOf(out), "rules:\n  - name: a\n");
  ASSERT_TRUE(writeProposalFile(out.string(), "rules:\n").ok());
  EXPECT_EQ(contentsOf(out), "rules:\n");
  EXPECT_EQ(namesIn(tmp.path()), (std::vector<std::string>{"learned.yaml"}))
      << "no file of the write left beside it";

  // a FIFO is refused at once, not waited on
  ASSERT_EQ(mkfifo((tmp.path() / "fifo").c_str(), 0600), 0);
  Status fifo = writeProposalFile((tmp.path() / "fifo").string(), "rules:\n");
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message.find("it is not a regular file"), std::string::npos);
  Status missing = writeProposalFile((tmp.path() / "none" / "out.yaml").string(), "rules:\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos)
      << missing.error().message;
  EXPECT_FALSE(writeProposalFile(tmp.path().string() + "/", "rules:\n").ok());
  EXPECT_EQ(namesIn(tmp.path()), (std::vector<std::string>{"fifo", "learned.yaml"}));
}

TEST(LearnFlagsTest, OutOfRangeFlagsAreOneUsageLine) {
  auto parse = [](std::string duration, std::string percentile = "99.9",
                  std::string margin = "1.5") {
    LearnFlags flags;
    flags.interface = "eth0";
    flags.duration = duration;
    flags.percentile = percentile;
    flags.margin = margin;
    return parseLearnFlags(flags);
  };
  EXPECT_TRUE(parse("30s").ok());
  EXPECT_TRUE(parse("1h").ok());
  for (const char* bad : {"0s", "", "1500ms", "2h", "soon"}) {
    auto r = parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
    EXPECT_NE(r.error().message.find("--for"), std::string::npos);
  }
  for (const char* bad : {"0", "100.1", "-5", "abc", "99.9999", "99."}) {
    auto r = parse("10s", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--percentile"), std::string::npos);
  }
  EXPECT_EQ(parse("10s", "95.5")->options.percentile_milli, 95500u);
  EXPECT_FALSE(parse("10s", "99", "0.5").ok());
  EXPECT_FALSE(parse("10s", "99", "101").ok());
  EXPECT_EQ(parse("10s", "99", "2")->options.margin_milli, 2000u);
}

}  // namespace
}  // namespace floodgate::learn
