// SPDX-License-Identifier: MIT
// migrateState per algorithm: keep what was used, expressed in the new parameters.
#include "floodgate/stores/state_migration.h"

#include <algorithm>

#include "floodgate/core/algorithms/fixed_window.h"
#include "floodgate/core/algorithms/gcra.h"
#include "floodgate/core/algorithms/leaky_bucket.h"
#include "floodgate/core/algorithms/sliding_window_counter.h"
#include "floodgate/core/algorithms/sliding_window_log.h"
#include "floodgate/core/algorithms/token_bucket.h"

namespace floodgate::http {

namespace {

constexpr int64_t kPicoPerUnit = 1'000'000'000'000;  // token bucket state unit

// GCRA and the leaky bucket keep one time: word[0] - now is what is used (queued), at
// `interval` ns per unit. Same units used at the new interval, at most the new capacity.
KeyState rescaleTime(const KeyState& state, int64_t now_ns, int64_t old_interval_ns,
                     int64_t new_interval_ns, int64_t new_capacity) {
  const int64_t used_ns = std::max<int64_t>(0, state.word[0] - now_ns);
  // Rounded down: a unit's fraction is forgiven, never added.
  __int128 scaled = static_cast<__int128>(used_ns) * new_interval_ns / old_interval_ns;
  scaled = std::min<__int128>(scaled, static_cast<__int128>(new_capacity) * new_interval_ns);
  KeyState out;
  out.word[0] = now_ns + static_cast<int64_t>(scaled);
  return out;
}

std::optional<KeyState> tokenBucket(const TokenBucket& from, const TokenBucket& to,
                                    const KeyState& state, int64_t now_ns) {
  int64_t missing = state.word[0];
  int64_t refilled_at = state.word[1];
  if (now_ns > refilled_at) {  // what the old rate earned up to now is the key's
    int64_t elapsed_ns = now_ns - refilled_at;
    missing = elapsed_ns >= ceilDiv(missing, from.rateMilliPerS())
                  ? 0
                  : missing - elapsed_ns * from.rateMilliPerS();
    refilled_at = now_ns;
  }
  KeyState out;
  out.word[0] = std::min(missing, to.quota() * kPicoPerUnit);
  out.word[1] = refilled_at;
  return out;
}

template <class Windowed>
std::optional<KeyState> sameWindow(const Windowed& from, const Algorithm& to,
                                   const KeyState& state) {
  auto* next = dynamic_cast<const Windowed*>(&to);
  if (next == nullptr || next->windowNs() != from.windowNs()) return std::nullopt;
  return state;
}

}  // namespace

std::optional<KeyState> migrateState(const Algorithm& from, const Algorithm& to,
                                     const KeyState& state, int64_t now_ns) {
  if (from.kind() != to.kind()) return std::nullopt;
  switch (from.kind()) {
    case AlgorithmKind::kTokenBucket:
      return tokenBucket(static_cast<const TokenBucket&>(from), static_cast<const TokenBucket&>(to),
                         state, now_ns);
    case AlgorithmKind::kGcra:
      return rescaleTime(state, now_ns, static_cast<const Gcra&>(from).unitIntervalNs(),
                         static_cast<const Gcra&>(to).unitIntervalNs(), to.quota());
    case AlgorithmKind::kLeakyBucket:
      return rescaleTime(state, now_ns, static_cast<const LeakyBucket&>(from).unitIntervalNs(),
                         static_cast<const LeakyBucket&>(to).unitIntervalNs(), to.quota());
    case AlgorithmKind::kFixedWindow:
      return sameWindow(static_cast<const FixedWindow&>(from), to, state);
    case AlgorithmKind::kSlidingWindowCounter:
      return sameWindow(static_cast<const SlidingWindowCounter&>(from), to, state);
    case AlgorithmKind::kSlidingWindowLog:
      return state;
  }
  return std::nullopt;
}

void migrateStore(const MemoryStore& from, const Algorithm& from_algorithm, MemoryStore& to,
                  const Algorithm& to_algorithm, int64_t now_ns) {
  if (from_algorithm.kind() != to_algorithm.kind()) return;  // nothing carries over
  from.forEach([&](std::string_view key, const KeyState& state) {
    if (from_algorithm.idle(state, now_ns)) return;  // same as absent: nothing to carry
    std::optional<KeyState> next = migrateState(from_algorithm, to_algorithm, state, now_ns);
    if (next && !to_algorithm.idle(*next, now_ns)) to.put(key, std::move(*next), now_ns);
  });
}

}  // namespace floodgate::http
