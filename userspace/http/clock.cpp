// SPDX-License-Identifier: MIT
// The steady clock behind production decisions.
#include "http/clock.h"

#include <chrono>

namespace floodgate::http {

int64_t SteadyClock::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace floodgate::http
