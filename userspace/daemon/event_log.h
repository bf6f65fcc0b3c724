// SPDX-License-Identifier: MIT
// EventLog: turns the program's state-change events into log lines, at most one line per
// source (or rule) and event kind per interval, however many events arrive. The first
// event of a key is logged at once; the ones after it within the interval are counted and
// reported on the key's next line, or when the interval is over. Memory is bounded: past
// kMaxKeys keys, events are only counted, and reported as one summary line per interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "controller/event_reader.h"

namespace floodgate::daemon {

struct LogLine {
  bool warning = false;  // else info
  std::string text;
};

class EventLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxKeys = 4096;

  explicit EventLog(std::chrono::milliseconds interval) : interval_(interval) {}

  // Notes one event of `interface`; `rule` names its rule ("manual" for a manual ban).
  // Appends the line to log now, if any.
  void note(const std::string& interface, const XdpLimiterEvent& event, const std::string& rule,
            Clock::time_point now, std::vector<LogLine>& out);

  // Appends the lines owed for keys whose interval is over (events counted, not logged),
  // and forgets keys quiet for a whole interval.
  void flush(Clock::time_point now, std::vector<LogLine>& out);

 private:
  struct Key {
    std::string interface, event, subject, rule;
    bool warning = false;
    Clock::time_point logged_at;
    uint64_t unlogged = 0;  // events since its last line
  };
  static std::string lineFor(const Key& key, uint64_t count);

  std::chrono::milliseconds interval_;
  std::map<std::string, Key> keys_;
  uint64_t untracked_events_ = 0;  // events of keys beyond kMaxKeys since the last summary
  Clock::time_point summary_at_{};
};

}  // namespace floodgate::daemon
