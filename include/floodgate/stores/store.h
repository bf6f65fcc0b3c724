// SPDX-License-Identifier: MIT
// Store: where a policy keeps its per-key state; the limiter reserves and refunds through it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/decision.h"

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

  // Gives back, at `now_ns` (the same clock), an admitted decide(key, admitted_ns, cost)
  // whose request was rejected by another policy or turned out to cost less: what of it
  // the algorithm has not refilled since (see Algorithm::refund()).
  virtual void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) = 0;

  // The same, for the admitted `decision` decide() returned: a store that decides in more
  // than one place (a shared store and its local fallback) gives the units back where they
  // were taken.
  virtual void refundDecision(std::string_view key, const Decision& decision, int64_t admitted_ns,
                              int64_t now_ns, int64_t cost) {
    (void)decision;
    refund(key, admitted_ns, now_ns, cost);
  }

  // A hint that `key` is about to be decided, so its state can be on its way from memory
  // meanwhile: a caller with several keys to decide prefetches them all first, and their
  // cache misses overlap instead of queueing. Stores that cannot use it ignore it.
  virtual void prefetch(std::string_view key) const { (void)key; }
};

// A store shared by a fleet (Redis behind a failover store, see floodgate::redis), whose
// answers the limiter can sometimes skip or combine: one request's policies on stores of one
// batch group are decided in one round trip.
class SharedStore : public Store {
 public:
  // The remote's rejection of this request if it is known to hold still (it decides nothing
  // and takes nothing); nullopt if the remote must be asked.
  virtual std::optional<Decision> knownRejection(std::string_view key, int64_t now_ns,
                                                 int64_t cost) = 0;

  // Stores with the same non-null group can decide together (decideTogether); null: alone.
  virtual const void* batchGroup() const = 0;

  // Decides one request in each of `items`' stores, every one of this store's batchGroup(),
  // in one round trip; each answer follows its own store's failure mode. All or nothing
  // where the stores can: if any refuses, none of the others is charged (and with `charge`
  // false, none is charged at all: the caller refuses the request for a reason of its own).
  // An admitted answer says whether its store holds the units (a refund has something to
  // give back); when not, its remaining reads as if it had been charged and given back.
  struct Item {
    SharedStore* store;
    std::string_view key;
    int64_t cost;
  };
  struct Answer {
    Result<Decision> decision = Error::failure("not decided");
    bool charged = true;
  };
  virtual std::vector<Answer> decideTogether(const std::vector<Item>& items, int64_t now_ns,
                                             bool charge) = 0;
};

}  // namespace floodgate::http
