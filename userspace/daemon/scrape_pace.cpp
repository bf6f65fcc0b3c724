// SPDX-License-Identifier: MIT
// ScrapePace: a GCRA of kPerSecond with a burst of as many.
#include "daemon/scrape_pace.h"

#include <algorithm>

namespace floodgate::daemon {

bool ScrapePace::due(Clock::time_point now) {
  constexpr Clock::duration kInterval = Clock::duration(std::chrono::seconds(1)) / kPerSecond;
  const Clock::time_point from = std::max(next_, now);
  if (from - now > kInterval * (kPerSecond - 1)) return false;
  next_ = from + kInterval;
  return true;
}

}  // namespace floodgate::daemon
