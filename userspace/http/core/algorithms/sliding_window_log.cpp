// SPDX-License-Identifier: MIT
// Sliding window log decisions.
#include "floodgate/core/algorithms/sliding_window_log.h"

#include <algorithm>

namespace floodgate::http {

namespace {
int64_t& head(KeyState& s) { return s.word[0]; }
// The earliest admission a refund may still find its units for: within a window of every
// pruning, as an older admission's units (logged at or after it) may have been pruned, and
// the earliest units at or after it would then be a later request's. A log pruned empty
// is covered too: its units were all at least a window old.
int64_t& refundFloor(KeyState& s) { return s.word[1]; }
int64_t logged(const KeyState& s) {
  return s.log ? static_cast<int64_t>(s.log->size()) - s.word[0] : 0;
}
}  // namespace

void SlidingWindowLog::prune(KeyState& state, int64_t now_ns) const {
  refundFloor(state) = std::max(refundFloor(state), now_ns - window_ns_ + 1);
  if (!state.log) return;
  auto& log = *state.log;
  int64_t size = static_cast<int64_t>(log.size());
  // Age now - t >= window is outside; a stale now (t > now) is a negative age: inside.
  while (head(state) < size && now_ns - log[head(state)] >= window_ns_) ++head(state);
  if (head(state) == size) {
    state.log.reset();  // an empty log holds no memory
    head(state) = 0;
  } else if (head(state) >= 32 && head(state) * 2 >= size) {
    log.erase(log.begin(), log.begin() + head(state));
    head(state) = 0;
  }
}

Decision SlidingWindowLog::decide(KeyState& state, int64_t now_ns, int64_t cost) const {
  prune(state, now_ns);
  Decision d;
  d.limit = limit_;
  int64_t count = logged(state);
  if (cost > limit_) {
    d.outcome = Outcome::kCostExceedsBurst;
  } else if (count + cost <= limit_) {
    if (!state.log) state.log = std::make_unique<std::vector<int64_t>>();
    auto& log = *state.log;
    int64_t at_ns = log.empty() ? now_ns : std::max(now_ns, log.back());
    log.insert(log.end(), cost, at_ns);
    count += cost;
  } else {
    // The retry fits once the (count + cost - limit) oldest units have aged out.
    d.outcome = Outcome::kRejected;
    int64_t must_expire = count + cost - limit_;
    int64_t oldest_kept_ns = (*state.log)[head(state) + must_expire - 1];
    d.retry_after_ns = std::max<int64_t>(1, oldest_kept_ns + window_ns_ - now_ns);
  }
  d.remaining = limit_ - count;
  d.reset_ns = count == 0 ? 0 : std::max<int64_t>(0, state.log->back() + window_ns_ - now_ns);
  return d;
}

int64_t SlidingWindowLog::used(const KeyState& state, int64_t now_ns) const {
  if (!state.log) return 0;
  const auto& log = *state.log;
  // sorted: the units still inside are those younger than a window (not copied, as the
  // default would copy the whole log)
  auto inside = std::upper_bound(log.begin() + state.word[0], log.end(), now_ns - window_ns_);
  return log.end() - inside;
}

void SlidingWindowLog::refund(KeyState& state, int64_t admitted_ns, int64_t /*now_ns*/,
                              int64_t cost) const {
  // The request's units are the earliest logged at or after admitted_ns (a stale reading was
  // logged later, never earlier), as long as they cannot have been pruned: removing the
  // earliest such units then never frees more than ours. A later refund gives nothing back.
  if (!state.log || admitted_ns < refundFloor(state)) return;
  auto& log = *state.log;
  auto first = std::lower_bound(log.begin() + head(state), log.end(), admitted_ns);
  auto last = first + std::min<int64_t>(cost, log.end() - first);
  log.erase(first, last);
}

bool SlidingWindowLog::idle(const KeyState& state, int64_t now_ns) const {
  return logged(state) == 0 || now_ns - state.log->back() >= window_ns_;
}

int64_t SlidingWindowLog::quota() const { return limit_; }
int64_t SlidingWindowLog::windowSeconds() const {
  return std::max<int64_t>(1, ceilDiv(window_ns_, kNsPerS));
}
size_t SlidingWindowLog::stateBytes() const {
  // The head index, the pointer to the log, the log's header and one time per unit.
  return 2 * sizeof(int64_t) + sizeof(std::vector<int64_t>) +
         static_cast<size_t>(limit_) * sizeof(int64_t);
}

}  // namespace floodgate::http
