// SPDX-License-Identifier: MIT
// ShapingDemand: each client's requests to each shaping queue, as the queue would hold them.
#include "floodgate/core/shaping_demand.h"

#include <algorithm>

namespace floodgate::http {

ShapingDemand::ShapingDemand(int64_t max_keys_per_policy, int shards)
    : max_keys_per_policy_(max_keys_per_policy), shards_(shards) {}

std::shared_ptr<MemoryStore> ShapingDemand::storeFor(const PolicyConfig& policy) {
  std::lock_guard lock(mutex_);
  PolicyDemand& demand = policies_[policy.name];
  if (!demand.store || demand.params != policy.algorithm) {
    // The same algorithm as the policy's queue: what it would have admitted, held unbounded.
    auto algorithm = makeAlgorithm(policy.algorithm);
    if (!algorithm.ok()) return nullptr;  // the limiter made it already: cannot happen
    demand.params = policy.algorithm;
    demand.store = std::make_shared<MemoryStore>(std::move(*algorithm),
                                                 MemoryStoreOptions{max_keys_per_policy_, shards_});
  }
  return demand.store;
}

ShapingDemand::Offer ShapingDemand::offer(const Verdict& verdict) {
  Offer offer;
  // Nothing is reported of a client that cannot be told, so nothing is kept for it either.
  if (!verdict.allowed() || verdict.client_key.empty()) return offer;
  std::string key;
  for (const PolicyDecision& pd : verdict.decisions) {
    if (pd.policy == nullptr || pd.policy->algorithm.kind != AlgorithmKind::kLeakyBucket) continue;
    std::shared_ptr<MemoryStore> store = storeFor(*pd.policy);
    if (!store) continue;
    // The client first: an address never holds '\n', so no queue key can make two pairs one.
    key.assign(verdict.client_key);
    key += '\n';
    key += pd.key;
    // A memory store always answers. Refused (the queue full), the request is not counted:
    // a client is held to what the policy gives, not to what it asked beyond it.
    Result<Decision> decision = store->decide(key, verdict.decided_ns, pd.cost);
    if (!decision.ok()) continue;
    if (!decision->allowed()) {
      offer.excess = true;
    } else {
      offer.delay_ns = std::max(offer.delay_ns, decision->delay_ns);
    }
  }
  return offer;
}

int64_t ShapingDemand::keys(const std::string& policy) const {
  std::shared_ptr<MemoryStore> store;
  {
    std::lock_guard lock(mutex_);
    auto found = policies_.find(policy);
    if (found == policies_.end()) return 0;
    store = found->second.store;
  }
  return store ? store->stats().keys : 0;
}

}  // namespace floodgate::http
