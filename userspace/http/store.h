// SPDX-License-Identifier: MIT
// Store: where a policy keeps its per-key state; the limiter reserves and refunds through it.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"
#include "http/decision.h"

namespace floodgate::http {

// The per-key state of one policy (bound to that policy's algorithm). Implementations are
// thread-safe. A store that cannot answer (a remote store down) returns an Error, and the
// limiter applies the policy's failure mode.
class Store {
 public:
  virtual ~Store() = default;

  // Decides on a request of `cost` units for `key` at `now_ns` (steady clock, ns) and
  // records it if admitted.
  virtual Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) = 0;

  // Gives back an admitted decide(key, admitted_ns, cost) whose request was rejected by
  // another policy.
  virtual void refund(std::string_view key, int64_t admitted_ns, int64_t cost) = 0;

  // A hint that `key` is about to be decided, so its state can be on its way from memory
  // meanwhile: a caller with several keys to decide prefetches them all first, and their
  // cache misses overlap instead of queueing. Stores that cannot use it ignore it.
  virtual void prefetch(std::string_view key) const { (void)key; }
};

}  // namespace floodgate::http
