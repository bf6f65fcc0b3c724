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
  // How far apart the hosts' clocks and Redis's are taken to be at most in the normal run of
  // things: an entry signed up to this far ahead of Redis's clock is remembered as signed
  // (forgetAt), and one under this old was just made.
  static constexpr int64_t kClockAgreementMs = 1000;

  explicit ReplayMemory(size_t max) : max_(max) {}

  // When an entry signed at `signed_ms` and read when Redis's clock said `now_ms` can be
  // forgotten, for a reader that lets through entries signed up to `max_age_ms` and the skew
  // before Redis's clock: once no copy of it passes that time check (one signed at most the
  // skew ahead of Redis's clock, hence the second skew). An entry signed further ahead than
  // clocks agree counts from a moment after it was read: else a holder of the secret dating
  // entries the skew ahead would have those dropped to make room and every entry signed
  // before their date, true or not, refused as maybe one of them (pastDropped). A copy of
  // such an entry dropped to make room may then pass, up to its signed time and `max_age_ms`.
  static int64_t forgetAt(int64_t signed_ms, int64_t now_ms, int64_t max_age_ms);

  // Whether the entry of this MAC is remembered.
  bool remembers(const std::string& mac) const { return seen_.count(mac) != 0; }
  // Whether an entry whose copies pass the time check until `forget_at` would be forgotten
  // no later than one dropped to make room: it may have been read, so it must not pass.
  bool pastDropped(int64_t forget_at) const { return forget_at <= evicted_through_; }
  // Remembers an entry let through, and forgets those whose copies are stale by `now_ms`.
  void remember(const std::string& mac, int64_t forget_at, int64_t now_ms);
  // The reader's max age changed by `delta_ms` at `now_ms`. Raised, each entry remembered is
  // kept that much longer, as its copies pass that much longer, and every entry that may have
  // been forgotten by now is refused from now on (pastDropped): signed before now less the old
  // max age, a copy passes the new time check. Lowered, each is kept that much less, and the
  // bound of what is refused moves back with it (else a raise undone would refuse every new
  // entry until the raised age had passed).
  void shift(int64_t delta_ms, int64_t now_ms);

  size_t size() const { return seen_.size(); }
  size_t max() const { return max_; }

 private:
  size_t max_;
  std::map<std::string, int64_t> seen_;
  std::multimap<int64_t, std::string> by_forget_;
  int64_t evicted_through_ = INT64_MIN;
};

}  // namespace floodgate::daemon
