// SPDX-License-Identifier: MIT
// ScrapePace: how often /metrics makes a fresh answer. Each one collects every interface's
// counters and table under the daemon's lock; a client asking without pause (pipelined
// requests, many connections) would keep the lock and a core busy, so past the pace a
// scrape is answered with the last answer made.
#pragma once

#include <chrono>

namespace floodgate::daemon {

class ScrapePace {
 public:
  using Clock = std::chrono::steady_clock;
  // Fresh answers a second, and as many at once after a pause: far above what Prometheus
  // asks (one every few seconds per server), far below what would keep the daemon busy.
  static constexpr int kPerSecond = 10;

  // Whether a fresh answer may be made at `now` (and counts it if so).
  bool due(Clock::time_point now);

 private:
  Clock::time_point next_{};  // when the pace is back at its start: a GCRA's arrival time
};

}  // namespace floodgate::daemon
