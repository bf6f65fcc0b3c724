// SPDX-License-Identifier: MIT
// Fixed window decisions.
#include "floodgate/core/algorithms/fixed_window.h"

#include <algorithm>

namespace floodgate::http {

namespace {
int64_t& windowIndex(KeyState& s) { return s.word[0]; }
int64_t& admitted(KeyState& s) { return s.word[1]; }
}  // namespace

Decision FixedWindow::decide(KeyState& state, int64_t now_ns, int64_t cost) const {
  int64_t index = now_ns / window_ns_;
  if (index > windowIndex(state)) {
    windowIndex(state) = index;
    admitted(state) = 0;
  }
  index = windowIndex(state);  // a stale reading counts against the newest window seen
  int64_t window_end_ns = (index + 1) * window_ns_;

  Decision d;
  d.limit = limit_;
  d.reset_ns = window_end_ns - now_ns;
  if (cost > limit_) {
    d.outcome = Outcome::kCostExceedsBurst;
  } else if (admitted(state) + cost <= limit_) {
    admitted(state) += cost;
  } else {
    d.outcome = Outcome::kRejected;
    d.retry_after_ns = window_end_ns - now_ns;  // the next window starts empty
  }
  d.remaining = limit_ - admitted(state);
  return d;
}

void FixedWindow::refund(KeyState& state, int64_t admitted_ns, int64_t /*now_ns*/,
                         int64_t cost) const {
  // Only while the request's window is still the current one; later it no longer matters.
  if (admitted_ns / window_ns_ != windowIndex(state)) return;
  admitted(state) = std::max<int64_t>(0, admitted(state) - cost);
}

bool FixedWindow::idle(const KeyState& state, int64_t now_ns) const {
  return state.word[1] == 0 || now_ns / window_ns_ > state.word[0];
}

int64_t FixedWindow::quota() const { return limit_; }
int64_t FixedWindow::windowSeconds() const {
  return std::max<int64_t>(1, ceilDiv(window_ns_, kNsPerS));
}
size_t FixedWindow::stateBytes() const { return 2 * sizeof(int64_t); }

}  // namespace floodgate::http
