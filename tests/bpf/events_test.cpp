// SPDX-License-Identifier: MIT
// The program's state-change events: one when a source starts being limited (not one per
// drop), when a ban starts and ends, and never more than the budget under a flood.
#include <bpf/libbpf.h>
#include <sched.h>

#include <chrono>
#include <thread>

#include "bpf/xdp_fixture.h"
#include "controller/event_reader.h"
#include "kernel/system.h"

namespace floodgate::test {
namespace {

class EventsTest : public XdpProgramTest {
 protected:
  std::vector<XdpLimiterEvent> drain() {
    if (!reader_) {
      auto reader = EventReader::open(pin_name_);
      EXPECT_TRUE(reader.ok()) << reader.error().message;
      if (!reader) return {};
      reader_.emplace(std::move(*reader));
    }
    auto events = reader_->drain();
    EXPECT_TRUE(events.ok());
    return events ? *events : std::vector<XdpLimiterEvent>{};
  }

  void TearDown() override {
    reader_.reset();
    XdpProgramTest::TearDown();
  }

  std::optional<EventReader> reader_;
};

TEST_F(EventsTest, ASourceStartingToBeLimitedIsOneEventNotOnePerDrop) {
  load({sourceRule(1, 2)});
  EXPECT_EQ(passes(udpFrom("192.0.2.9"), 20), 2);
  auto events = drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(eventTypeName(events[0].type), "limited");
  ASSERT_TRUE(events[0].source.has_value());
  EXPECT_EQ(events[0].source->toString(), "192.0.2.9");
  EXPECT_EQ(events[0].rule_id, 0u);
  // an IPv6 source is reported as its /64
  EXPECT_EQ(passes(udpFrom("2001:db8:5::1"), 5), 2);
  events = drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].source->toString(), "2001:db8:5::/64");
}

TEST_F(EventsTest, ABanStartsAndEndsWithAnEventEach) {
  RuleSpec rule = sourceRule(1, 1);
  rule.action = ExceedAction::kBan;
  rule.ban_ns = 1000000000ULL;
  load({rule});
  EXPECT_EQ(passes(udpFrom("192.0.2.44"), 3), 1);
  auto events = drain();
  std::vector<std::string> kinds;
  for (const XdpLimiterEvent& event : events) kinds.push_back(eventTypeName(event.type));
  EXPECT_EQ(kinds, (std::vector<std::string>{"limited", "ban_start"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(run(udpFrom("192.0.2.44")), XDP_PASS);  // the ban is over
  events = drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(eventTypeName(events[0].type), "ban_end");
  EXPECT_EQ(events[0].source->toString(), "192.0.2.44");
}

constexpr uint64_t event_budget_per_s = 200;

TEST_F(EventsTest, AFloodOfLimitedSourcesStaysWithinTheBudget) {
  RuleSpec rule = sourceRule(1, 1);
  rule.new_sources_per_s = 0;  // every source gets a slot of its own, and so an event
  AttachOptions options;
  options.table_slots = 65536;
  load({rule}, options);
  const int sources = 3000;
  // The budget is per CPU and per second of jiffies. The runs stay on one CPU (a test run
  // executes on the caller's), and the test counts the seconds they span, whatever one
  // BPF_PROG_RUN call costs here: the bound is then 200 x those seconds on any machine.
  cpu_set_t before, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  auto hz = kernelHz();
  auto first = currentJiffies();
  ASSERT_TRUE(hz.ok() && first.ok());
  for (int i = 0; i < sources; ++i) {
    passes(udpFrom("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)), 2);
  }
  auto last = currentJiffies();
  sched_setaffinity(0, sizeof(before), &before);
  ASSERT_TRUE(last.ok());
  const uint64_t windows = *last / *hz - *first / *hz + 1;
  auto stats = limiter().eventStats();
  ASSERT_TRUE(stats.ok());
  // (a source whose set of ways was full shares the untracked bucket and has no event)
  const uint64_t wanted = stats->emitted + stats->suppressed + stats->lost;
  EXPECT_GT(wanted, sources * 9u / 10);
  const uint64_t budget = event_budget_per_s * windows;
  EXPECT_LE(stats->emitted, budget) << windows << " one-second windows";
  // whatever the budget could not take was suppressed, not emitted
  EXPECT_GE(stats->suppressed, wanted > budget ? wanted - budget : 0);
  auto events = drain();
  EXPECT_EQ(events.size(), stats->emitted);
}

// A flood of limited sources spends the budget first, yet every ban a rule starts is still
// reported: the daemon shares a rule's bans with the fleet from their ban_start events.
TEST_F(EventsTest, BanEventsAreReportedBeyondTheBudget) {
  RuleSpec rule = sourceRule(1, 1);
  rule.new_sources_per_s = 0;
  rule.action = ExceedAction::kBan;
  rule.ban_ns = 600'000'000'000ULL;
  AttachOptions options;
  options.table_slots = 65536;
  options.test_clock_hz = 1000;  // the clock stands still: one second's budget for all
  load({rule}, options);
  setClock(100000);
  const int sources = static_cast<int>(event_budget_per_s);
  for (int i = 0; i < sources; ++i) {
    passes(udpFrom("10.2." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)), 2);
  }
  auto stats = limiter().eventStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->suppressed, 0u) << "the limited events did not spend the budget";
  size_t ban_starts = 0;
  for (const XdpLimiterEvent& event : drain()) {
    if (std::string(eventTypeName(event.type)) == "ban_start") ++ban_starts;
  }
  // one per source (but for one whose set was full: it has no slot, and no ban); with ban
  // events held to the budget, the limited events before them left room for half
  EXPECT_GT(ban_starts, sources * 9u / 10);
  EXPECT_LE(ban_starts, static_cast<size_t>(sources));
}

TEST_F(EventsTest, TheCapOnNewSourcesReportsOnceWhenItEngages) {
  RuleSpec rule = sourceRule(1, 5);
  rule.new_sources_per_s = 1;
  load({rule});
  for (int i = 1; i <= 20; ++i) run(udpFrom("192.0.2." + std::to_string(i)));
  auto events = drain();
  int capped = 0;
  for (const XdpLimiterEvent& event : events) {
    if (std::string(eventTypeName(event.type)) == "new_sources_capped") {
      ++capped;
      EXPECT_FALSE(event.source.has_value());
    }
  }
  EXPECT_EQ(capped, 1);
}

}  // namespace
}  // namespace floodgate::test
