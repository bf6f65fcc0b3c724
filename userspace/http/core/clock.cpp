// SPDX-License-Identifier: MIT
// The steady clock behind production decisions.
#include "floodgate/core/clock.h"

#include <time.h>

#include <chrono>

namespace floodgate::http {

int64_t SteadyClock::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t CoarseSteadyClock::nowNs() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace floodgate::http
