// SPDX-License-Identifier: MIT
// The local share follows the instance count: a new share's store takes over the keys.
#include "floodgate/stores/local_share_store.h"

#include <algorithm>
#include <cmath>

#include "floodgate/stores/state_migration.h"

namespace floodgate::http {

AlgorithmParams shareOf(const AlgorithmParams& params, int64_t instances) {
  AlgorithmParams share = params;
  instances = std::max<int64_t>(1, instances);
  share.limit = std::max<int64_t>(1, params.limit / instances);
  share.capacity = std::max<int64_t>(1, params.capacity / instances);
  // in whole thousandths a second, rounded down: a bucket runs its rate so, and rounded to
  // the nearest (0.0015 as 0.002) each share would run faster than its part of the rate
  const double milli =
      std::floor(params.rate_per_s * 1000.0 / static_cast<double>(instances) + 1e-9);
  share.rate_per_s = std::max(kMinRatePerS, milli / 1000.0);
  return share;
}

LocalShareStore::LocalShareStore(AlgorithmParams params, std::function<int64_t()> instances,
                                 MemoryStoreOptions memory)
    : params_(params), instances_(std::move(instances)), memory_(memory) {}

std::shared_ptr<const LocalShareStore::Share> LocalShareStore::current(int64_t now_ns) {
  const int64_t divisor = std::max<int64_t>(1, instances_());
  std::lock_guard lock(mutex_);
  if (share_ && share_->divisor == divisor) return share_;
  auto algorithm = makeAlgorithm(shareOf(params_, divisor));
  // The policy's parameters were checked when it was made, and a share of valid
  // parameters is valid; keep the old share rather than fail a decision if not.
  if (!algorithm) return share_;
  auto next = std::make_shared<Share>();
  next->divisor = divisor;
  next->algorithm = std::move(*algorithm);
  next->store = std::make_shared<MemoryStore>(next->algorithm, memory_);
  if (share_)
    migrateStore(*share_->store, *share_->algorithm, *next->store, *next->algorithm, now_ns);
  share_ = std::move(next);
  return share_;
}

Result<Decision> LocalShareStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  std::shared_ptr<const Share> share = current(now_ns);
  if (!share) return Error::failure("no local share could be made");
  return share->store->decide(key, now_ns, cost);
}

void LocalShareStore::refund(std::string_view key, int64_t admitted_ns, int64_t now_ns,
                             int64_t cost) {
  std::shared_ptr<const Share> share;
  {
    std::lock_guard lock(mutex_);
    share = share_;
  }
  if (share) share->store->refund(key, admitted_ns, now_ns, cost);
}

int64_t LocalShareStore::divisor() const {
  std::lock_guard lock(mutex_);
  return share_ ? share_->divisor : std::max<int64_t>(1, instances_());
}

}  // namespace floodgate::http
