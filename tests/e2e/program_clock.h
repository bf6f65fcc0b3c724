// SPDX-License-Identifier: MIT
// The XDP program's own clock (jiffies) as the tests read it. What a limit admits is
// bounded by the time the program saw packets for, not by the sender's clock: on a busy
// machine the receiver may run a flood's last packets well after the sender has returned.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <functional>

#include "kernel/system.h"

namespace floodgate::test {

// Reads the program's clock (before traffic starts, or once it has drained).
inline uint64_t programJiffies() {
  auto now = currentJiffies();
  EXPECT_TRUE(now.ok()) << now.error().message;
  return now.ok() ? *now : 0;
}

// Waits until `counted()` (every packet floodgate counted) stops moving, and returns the
// program's clock read after the last packet it saw, before the last count.
inline uint64_t drainedAt(const std::function<uint64_t()>& counted) {
  uint64_t before = counted();
  uint64_t at = programJiffies();
  for (int i = 0; i < 250; ++i) {
    usleep(20000);
    const uint64_t now = counted();
    if (now == before) return at;
    before = now;
    at = programJiffies();
  }
  ADD_FAILURE() << "floodgate kept counting packets for 5 s after the senders stopped";
  return at;
}

// Seconds of the program's clock from `first` to `last` jiffies, counting both ticks.
inline double programSeconds(uint64_t first, uint64_t last) {
  auto hz = kernelHz();
  EXPECT_TRUE(hz.ok());
  return hz.ok() ? static_cast<double>(last - first + 1) / *hz : 0;
}

}  // namespace floodgate::test
