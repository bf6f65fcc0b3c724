// SPDX-License-Identifier: MIT
// ReplayMemory: bounded, oldest forget time dropped first.
#include "daemon/replay_memory.h"

#include <algorithm>

#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {

int64_t ReplayMemory::forgetAt(int64_t signed_ms, int64_t now_ms, int64_t max_age_ms) {
  return std::min(signed_ms, now_ms + kClockAgreementMs) + max_age_ms +
         2 * http::kReportClockSkewMs;
}

void ReplayMemory::remember(const std::string& mac, int64_t forget_at, int64_t now_ms) {
  if (seen_.count(mac) != 0) return;
  if (seen_.size() >= max_ && !by_forget_.empty()) {
    evicted_through_ = std::max(evicted_through_, by_forget_.begin()->first);
    seen_.erase(by_forget_.begin()->second);
    by_forget_.erase(by_forget_.begin());
  }
  seen_.emplace(mac, forget_at);
  by_forget_.emplace(forget_at, mac);
  while (!by_forget_.empty() && by_forget_.begin()->first < now_ms) {
    seen_.erase(by_forget_.begin()->second);
    by_forget_.erase(by_forget_.begin());
  }
}

void ReplayMemory::shift(int64_t delta_ms, int64_t now_ms) {
  if (delta_ms == 0) return;
  std::multimap<int64_t, std::string> moved;
  for (auto& [forget_at, mac] : by_forget_) {
    moved.emplace(forget_at + delta_ms, mac);
    seen_[mac] = forget_at + delta_ms;
  }
  by_forget_ = std::move(moved);
  if (delta_ms > 0) {
    // forgotten by now: forget_at < now_ms on the old count, under now_ms + delta on the new
    evicted_through_ = std::max(evicted_through_, now_ms) + delta_ms;
  } else if (evicted_through_ != INT64_MIN) {
    evicted_through_ += delta_ms;
  }
}

}  // namespace floodgate::daemon
