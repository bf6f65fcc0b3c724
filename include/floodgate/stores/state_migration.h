// SPDX-License-Identifier: MIT
// Carrying a key's state across a change of its policy's parameters, so that raising a
// limit never rejects a request the old limit would have admitted.
#pragma once

#include <cstdint>
#include <optional>

#include "floodgate/core/algorithm.h"
#include "floodgate/stores/memory_store.h"

namespace floodgate::http {

// `state` (a key's state under `from`) re-expressed for `to` at `now_ns`; nullopt when the
// key should start fresh (an absent key: a full bucket, an empty window). Per algorithm:
//   token_bucket          the tokens used (after refilling at the old rate up to now) stay
//                         used, at most the new capacity; refill goes on at the new rate.
//   gcra, leaky_bucket    the units used (queued) stay used, at most the new capacity; they
//                         drain at the new rate from now on.
//   fixed_window,         same window: the counts stay (the new limit applies to them);
//   sliding_window_counter  another window length: fresh.
//   sliding_window_log    the log stays (arrival times mean the same under any window).
//   another algorithm     fresh.
// So with a limit (capacity and rate) raised, or kept, the next request is admitted
// whenever the old parameters would have admitted it; a lowered limit applies at once to
// what was already used.
std::optional<KeyState> migrateState(const Algorithm& from, const Algorithm& to,
                                     const KeyState& state, int64_t now_ns);

// Every key of `from` that is not idle, migrated into `to`. Decisions the old store makes
// while this runs (requests in flight on the old policy set) are not carried over.
void migrateStore(const MemoryStore& from, const Algorithm& from_algorithm, MemoryStore& to,
                  const Algorithm& to_algorithm, int64_t now_ns);

}  // namespace floodgate::http
