// SPDX-License-Identifier: MIT
// Sliding window counter decisions.
#include "floodgate/core/algorithms/sliding_window_counter.h"

#include <algorithm>

namespace floodgate::http {

namespace {
using Wide = __int128;
int64_t& windowIndex(KeyState& s) { return s.word[0]; }
int64_t& current(KeyState& s) { return s.word[1]; }
int64_t& previous(KeyState& s) { return s.word[2]; }
}  // namespace

int64_t SlidingWindowCounter::roll(KeyState& state, int64_t now_ns) const {
  int64_t index = now_ns / window_ns_;
  if (index == windowIndex(state) + 1) {
    previous(state) = current(state);
    current(state) = 0;
  } else if (index > windowIndex(state) + 1) {
    previous(state) = 0;
    current(state) = 0;
  }
  windowIndex(state) = std::max(index, windowIndex(state));
  return windowIndex(state);
}

Decision SlidingWindowCounter::decide(KeyState& state, int64_t now_ns, int64_t cost) const {
  const int64_t w = window_ns_;
  int64_t index = roll(state, now_ns);
  int64_t start_ns = index * w;
  int64_t elapsed_ns = std::clamp<int64_t>(now_ns - start_ns, 0, w - 1);
  int64_t prev = previous(state);
  int64_t curr = current(state);

  // The classic rule, exactly in integers: admitted when the estimate before the request,
  // prev x (W - e) / W + curr, plus cost - 1 is below the limit. Multiplied by W:
  // prev x (W - e) < (limit - curr - cost + 1) x W, i.e. prev x (W - e) <= that - 1.
  Wide weighted_prev = Wide{prev} * (w - elapsed_ns);
  auto room = [w](int64_t units) { return Wide{units} * w - 1; };

  Decision d;
  d.limit = limit_;
  if (cost > limit_) {
    d.outcome = Outcome::kCostExceedsBurst;
  } else if (weighted_prev <= room(limit_ - curr - cost + 1)) {
    current(state) = curr += cost;
  } else {
    d.outcome = Outcome::kRejected;
    int64_t retry_at_ns;
    if (curr + cost <= limit_) {
      // Later in this window prev weighs less: prev x (W - e) <= room(limit - curr - cost + 1).
      int64_t e = w - static_cast<int64_t>(room(limit_ - curr - cost + 1) / prev);
      retry_at_ns = start_ns + e;
    } else {
      // In the next window curr becomes prev: curr x (W - e) <= room(limit - cost + 1).
      int64_t e = curr == 0 ? 0
                            : std::max<int64_t>(
                                  0, w - static_cast<int64_t>(room(limit_ - cost + 1) / curr));
      retry_at_ns = start_ns + w + e;
    }
    d.retry_after_ns = std::max<int64_t>(1, retry_at_ns - now_ns);
  }
  // Units of cost 1 still admitted now: limit - curr - floor(prev x (W - e) / W).
  d.remaining = std::max<int64_t>(0, limit_ - curr - static_cast<int64_t>(weighted_prev / w));
  if (curr > 0) {
    d.reset_ns = start_ns + 2 * w - now_ns;
  } else if (prev > 0) {
    d.reset_ns = start_ns + w - now_ns;
  }
  return d;
}

void SlidingWindowCounter::refund(KeyState& state, int64_t admitted_ns, int64_t /*now_ns*/,
                                  int64_t cost) const {
  int64_t index = admitted_ns / window_ns_;
  if (index == windowIndex(state)) {
    current(state) = std::max<int64_t>(0, current(state) - cost);
  } else if (index == windowIndex(state) - 1) {
    previous(state) = std::max<int64_t>(0, previous(state) - cost);
  }
}

bool SlidingWindowCounter::idle(const KeyState& state, int64_t now_ns) const {
  int64_t index = now_ns / window_ns_;
  if (index > state.word[0] + 1) return true;
  if (index == state.word[0] + 1) return state.word[1] == 0;
  return state.word[1] == 0 && state.word[2] == 0;
}

int64_t SlidingWindowCounter::quota() const { return limit_; }
int64_t SlidingWindowCounter::windowSeconds() const {
  return std::max<int64_t>(1, ceilDiv(window_ns_, kNsPerS));
}
size_t SlidingWindowCounter::stateBytes() const { return 3 * sizeof(int64_t); }

}  // namespace floodgate::http
