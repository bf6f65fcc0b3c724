// SPDX-License-Identifier: MIT
// One line per interval for a repeating error, with a count of those held back.
#include "daemon/log_throttle.h"

namespace floodgate::daemon {

std::optional<uint64_t> LogThrottle::admit(Clock::time_point now) {
  if (logged_at_ && now - *logged_at_ < interval_) {
    ++held_back_;
    return std::nullopt;
  }
  logged_at_ = now;
  const uint64_t held_back = held_back_;
  held_back_ = 0;
  return held_back;
}

std::string heldBackNote(uint64_t held_back) {
  if (held_back == 0) return {};
  return " (" + std::to_string(held_back) + " more like it held back)";
}

}  // namespace floodgate::daemon
