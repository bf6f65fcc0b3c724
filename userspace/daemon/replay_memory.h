// SPDX-License-Identifier: MIT
// ReplayMemory: the signed stream entries already read, by MAC, each until a copy of it could
// no longer pass the reader's time check anyway. Whoever holds the fleet's secret can add
// entries without end, so what is held is bounded: past `max`, the entry that would be
// forgotten first goes, and from then on every entry that would be forgotten no later than
// it counts as maybe read, remembered or not (a copy never passes, whatever was dropped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace floodgate::daemon {

class ReplayMemory {
 public:
  explicit ReplayMemory(size_t max) : max_(max) {}

  // Whether the entry of this MAC is remembered.
  bool remembers(const std::string& mac) const { return seen_.count(mac) != 0; }
  // Whether an entry whose copies pass the time check until `forget_at` would be forgotten
  // no later than one dropped to make room: it may have been read, so it must not pass.
  bool pastDropped(int64_t forget_at) const { return forget_at <= evicted_through_; }
  // Remembers an entry let through, and forgets those whose copies are stale by `now_ms`.
  void remember(const std::string& mac, int64_t forget_at, int64_t now_ms);

  size_t size() const { return seen_.size(); }
  size_t max() const { return max_; }

 private:
  size_t max_;
  std::map<std::string, int64_t> seen_;
  std::multimap<int64_t, std::string> by_forget_;
  int64_t evicted_through_ = INT64_MIN;
};

}  // namespace floodgate::daemon
