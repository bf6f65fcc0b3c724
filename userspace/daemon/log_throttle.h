// SPDX-License-Identifier: MIT
// LogThrottle: at most one line per interval (10 s unless told) for an error that repeats, so a
// failure met by every ban the fleet or the services ask for (a full ban table) cannot flood the
// journal at the rate an attacker drives those bans. The line let through says how many were held
// back.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace floodgate::daemon {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  LogThrottle() = default;
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // Whether a line may be logged at `now`: then how many were held back since the last one
  // logged (which the line should say); otherwise none, and this one is counted as held back.
  std::optional<uint64_t> admit(Clock::time_point now);

 private:
  Clock::duration interval_ = std::chrono::seconds(10);
  std::optional<Clock::time_point> logged_at_;
  uint64_t held_back_ = 0;
};

// " (N more like it held back)" for a line admit() let through after holding N back; empty
// for none.
std::string heldBackNote(uint64_t held_back);

}  // namespace floodgate::daemon
