// SPDX-License-Identifier: MIT
// EventLog: one line per source and event kind per interval, whatever the flood.
#include "daemon/event_log.h"

#include <gtest/gtest.h>

namespace floodgate::daemon {
namespace {

using namespace std::chrono_literals;

XdpLimiterEvent limited(const std::string& source) {
  XdpLimiterEvent event;
  event.type = FG_EVENT_LIMITED;
  event.source = *parseCidr(source);
  return event;
}

TEST(EventLog, TheFirstEventIsLoggedAtOnceAndTheRestCountedIntoTheNextLine) {
  EventLog log(10s);
  const auto t0 = EventLog::Clock::time_point{} + 1h;
  std::vector<LogLine> lines;
  log.note("eth0", limited("192.0.2.1"), "udp", t0, lines);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "event=limited interface=eth0 source=192.0.2.1 rule=udp count=1");
  EXPECT_TRUE(lines[0].warning);
  for (int i = 0; i < 1000; ++i) log.note("eth0", limited("192.0.2.1"), "udp", t0 + 1s, lines);
  log.flush(t0 + 9s, lines);
  EXPECT_EQ(lines.size(), 1u) << "no second line within the interval";
  log.flush(t0 + 10s, lines);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].text, "event=limited interface=eth0 source=192.0.2.1 rule=udp count=1000");
  // quiet for a whole interval: forgotten, so its next event is logged at once again
  log.flush(t0 + 25s, lines);
  EXPECT_EQ(lines.size(), 2u);
  log.note("eth0", limited("192.0.2.1"), "udp", t0 + 26s, lines);
  EXPECT_EQ(lines.size(), 3u);
}

TEST(EventLog, KindsAndSourcesAreSeparateKeys) {
  EventLog log(10s);
  const auto t0 = EventLog::Clock::time_point{} + 1h;
  std::vector<LogLine> lines;
  XdpLimiterEvent ban_end = limited("192.0.2.1");
  ban_end.type = FG_EVENT_BAN_END;
  XdpLimiterEvent capped;
  capped.type = FG_EVENT_NEW_SOURCES_CAPPED;
  log.note("eth0", limited("192.0.2.1"), "udp", t0, lines);
  log.note("eth0", limited("192.0.2.2"), "udp", t0, lines);
  log.note("eth1", limited("192.0.2.1"), "udp", t0, lines);
  log.note("eth0", ban_end, "manual", t0, lines);
  log.note("eth0", capped, "udp", t0, lines);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_FALSE(lines[3].warning) << "a ban ending is good news";
  EXPECT_EQ(lines[4].text, "event=new_sources_capped interface=eth0 rule=udp count=1");
}

TEST(EventLog, MoreSourcesThanItKeepsAreSummedIntoOneLine) {
  EventLog log(10s);
  const auto t0 = EventLog::Clock::time_point{} + 1h;
  std::vector<LogLine> lines;
  const size_t sources = EventLog::kMaxKeys + 500;
  for (size_t i = 0; i < sources; ++i) {
    log.note("eth0",
             limited("10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
                     std::to_string(i % 256)),
             "udp", t0, lines);
  }
  EXPECT_EQ(lines.size(), EventLog::kMaxKeys);
  log.flush(t0 + 1s, lines);
  ASSERT_EQ(lines.size(), EventLog::kMaxKeys + 1);
  EXPECT_NE(lines.back().text.find("count=500"), std::string::npos) << lines.back().text;
}

}  // namespace
}  // namespace floodgate::daemon
