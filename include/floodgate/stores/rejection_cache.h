// SPDX-License-Identifier: MIT
// RejectionCache: keys a shared store just rejected, rejected again locally until their retry.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "floodgate/core/decision.h"
#include "floodgate/core/keyed_hash.h"

namespace floodgate::http {

struct RejectionCacheOptions {
  size_t max_keys = 10'000;    // beyond it, the oldest entry goes (clients choose the keys)
  int64_t max_hold_ms = 1000;  // an entry answers for at most this long after the store did
};

struct RejectionCacheStats {
  int64_t keys = 0;      // entries held (some may have run out, not yet dropped)
  int64_t answered = 0;  // requests rejected here instead of by the store
  int64_t evicted = 0;   // entries dropped for room before they ran out
};

// When a shared store (Redis) rejects `key` at cost c with a retry-after R, that answer holds
// for R: no request of that key at cost c can be admitted before (meanwhile the store's
// state only moves towards rejection, unless units are refunded), nor at any larger cost,
// since every algorithm admits a larger cost only where it would admit c. So requests of the
// key at cost c are rejected here, with no round trip, until min(R, max_hold_ms) after the
// store's answer; the next one after that goes to the store. A locally answered rejection
// takes nothing, and is what the store would have answered: Retry-After and reset count
// down from the store's, remaining and limit are the store's (remaining is 0 for a rejected
// cost of 1; units only come back with time). A key holds the answers of up to
// kCostsPerKey costs, so a client alternating between routes of different costs costs one
// round trip per cost, not one per request. A smaller cost goes to the store (it may fit).
// A larger cost is refused for sure but told a later retry: it goes to the store once, and
// its answer is held too; with kCostsPerKey costs held already, it is answered here with the
// retry of the largest smaller cost held, which may be early (a retry then is refused again)
// but never admits anything. A cost above the limit is always the store's to answer. When
// any cost is admitted, the key is dropped, since its retries are now later. Changes made
// behind our back can make an entry stale: a refund on another instance, or on another
// thread while this one's rejection was on its way back (a unit we reject for); an admission
// of a smaller cost on another instance (a later Retry-After than ours); an operator
// deleting the key in Redis. max_hold_ms bounds how long. Thread-safe; one mutex, taken
// only while some key is held.
class RejectionCache {
 public:
  // A key longer than this is held as its prefix and keyed hash (clients choose keys).
  static constexpr size_t kMaxKeyBytes = 256;
  // The costs whose rejections one key holds at once (a policy's routes rarely have more).
  static constexpr size_t kCostsPerKey = 4;

  explicit RejectionCache(RejectionCacheOptions options = {});

  // The rejection of a request of `cost` for `key` at `now_ns` (steady clock, ns), if one
  // is known; nullopt if the store must decide.
  std::optional<Decision> lookup(std::string_view key, int64_t now_ns, int64_t cost);
  // Records the store's answer `decided` to a request of `cost` for `key` at `now_ns`
  // (the time sent with the request, before the round trip: the hold ends no later than
  // the store's retry). Only a kRejected answer with a retry-after is kept, beside those of
  // the key's other costs (replacing the one that runs out first when kCostsPerKey are
  // held); an admission (of another cost) drops the key, whose retries it has made later.
  void remember(std::string_view key, int64_t now_ns, int64_t cost, const Decision& decided);
  // Drops what is known of `key` (units were given back: it may be admitted sooner).
  void forget(std::string_view key);

  RejectionCacheStats stats() const;

 private:
  // The store's rejection of one cost.
  struct Held {
    int64_t cost = 0;        // of the rejected request
    int64_t decided_ns = 0;  // when the store rejected
    int64_t until_ns = 0;    // answered here before this
    Decision rejection;      // the store's answer at decided_ns
  };
  struct Entry {
    std::string key;
    std::vector<Held> held;    // distinct costs, at most kCostsPerKey
    int64_t until_ns() const;  // the last that any answers until
  };
  using Order = std::list<Entry>;  // oldest first

  void eraseLocked(Order::iterator it);

  RejectionCacheOptions options_;
  mutable std::mutex mutex_;
  Order order_;
  // Keyed hash: a client choosing keys cannot pile them on one bucket chain.
  std::unordered_map<std::string_view, Order::iterator, KeyedHasher> index_;
  // index_.size(), read without the lock: while nothing is rejected (the usual case), a
  // lookup or a forget costs one load, not a lock.
  std::atomic<size_t> size_{0};
  int64_t answered_ = 0;
  int64_t evicted_ = 0;
};

}  // namespace floodgate::http
