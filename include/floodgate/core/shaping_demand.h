// SPDX-License-Identifier: MIT
// ShapingDemand: what each client asks of each shaping queue, to tell its excess (reportable)
// from a wait the server would not hold (not reportable).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "floodgate/core/algorithm.h"
#include "floodgate/core/limiter.h"
#include "floodgate/stores/memory_store.h"

namespace floodgate::http {

// A request a server refuses for its shaping wait (beyond max_delay, or its queue's share of
// the delayed threads) is refunded, so the queue itself never sees it: a client flooding a
// shaped route would be refused for its wait forever and its queue would never be full. This
// keeps, per client address and shaping (leaky_bucket) queue, a second queue of the same
// capacity and rate that every request the client offers is counted in, admitted or refused
// for its wait: the queue as it would be had the server held every wait the policy asked
// for. A request that does not fit in it is one the policy itself would have refused as its
// queue being full, beyond what it gives the client (its capacity, plus what drains
// meanwhile): the client's own excess, as reportable as that refusal would be. A burst
// within the capacity, however much of it the server refuses to wait for, always fits.
//
// Keyed by the client's address (Verdict::client_key) within the queue's key, so on a queue
// many clients share (an API key, `global`) a client is counted for its own requests only,
// and found in excess only when it alone asks more than the whole queue gives. Held in this
// process's memory, whatever the policy's store: the refusals it weighs are this server's
// (its max_delay, its threads), and escalation counts per process as well.
//
// Memory: at most `max_keys_per_policy` client/queue pairs per shaping policy, in a
// MemoryStore (keyed hash, CLOCK eviction preferring pairs whose queue has drained, which
// lose nothing): a client rotating addresses evicts its own short-lived pairs before a
// flooder's busy one. Thread-safe.
class ShapingDemand {
 public:
  static constexpr int64_t kDefaultMaxKeysPerPolicy = 65536;

  // What offer() found.
  struct Offer {
    // It does not fit in the client's demand on some queue (and is not counted there): the
    // client's excess, so a refusal of its wait is reportable (Verdict::delay_excess).
    bool excess = false;
    // Fitting, its wait in the longest of those demands: where it stands among all the
    // client asked of the queue. A refusal of its wait tells it to come back when that wait
    // is within the server's bound, so a burst's refusals are told to come back one after
    // another at the queue's rate, not all at the same second; resent so, they fit again.
    int64_t delay_ns = 0;
  };

  explicit ShapingDemand(int64_t max_keys_per_policy = kDefaultMaxKeysPerPolicy, int shards = 16);
  ShapingDemand(const ShapingDemand&) = delete;
  ShapingDemand& operator=(const ShapingDemand&) = delete;

  // Counts the request of `verdict` (admitted by every policy, before any refund) in its
  // client's demand on each shaping queue that admitted it, at verdict.decided_ns. Call it for
  // every admitted request of a shaped route, waited for or not (else the demand misses
  // the requests that were served), but not for one refused because no thread was free at
  // all (Verdict::shed): that is other clients' doing. An unknown client counts nothing.
  Offer offer(const Verdict& verdict);

  // The client/queue pairs held for `policy` (0 when it has none): for tests and metrics.
  int64_t keys(const std::string& policy) const;

 private:
  // One policy's demands, for the parameters they were counted under.
  struct PolicyDemand {
    AlgorithmParams params;
    std::shared_ptr<MemoryStore> store;
  };
  // The store of `policy`'s demands, made fresh when its parameters changed (a published
  // policy set): a demand counted against another capacity or rate means nothing now.
  std::shared_ptr<MemoryStore> storeFor(const PolicyConfig& policy);

  const int64_t max_keys_per_policy_;
  const int shards_;
  mutable std::mutex mutex_;  // guards policies_ (each store locks itself)
  // by policy name: one entry per shaping policy of the sets this server has used
  std::unordered_map<std::string, PolicyDemand> policies_;
};

}  // namespace floodgate::http
