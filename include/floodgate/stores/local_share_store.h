// SPDX-License-Identifier: MIT
// LocalShareStore: an in-memory store holding this instance's share of a fleet-wide limit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "floodgate/core/algorithm.h"
#include "floodgate/stores/memory_store.h"
#include "floodgate/stores/store.h"

namespace floodgate::http {

// Decides in memory with the policy's algorithm at limit ÷ instances (capacity and rate
// too; see shareOf), where instances is read from `instances()` at each decision (the live
// count of a FleetMembership, at least its floor). When the count changes the keys are
// carried into a store of the new share (state_migration.h: what was used stays used), so
// a fleet that scales out from 2 to 4 halves every share at once, and one that scales in
// doubles them. Thread-safe.
class LocalShareStore final : public Store {
 public:
  LocalShareStore(AlgorithmParams params, std::function<int64_t()> instances,
                  MemoryStoreOptions memory);

  Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) override;
  void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) override;

  // The divisor of the current share.
  int64_t divisor() const;

 private:
  struct Share {
    int64_t divisor = 1;
    std::shared_ptr<const Algorithm> algorithm;
    std::shared_ptr<MemoryStore> store;
  };
  // The share for the current count, rebuilt (with the keys carried over) if it changed.
  std::shared_ptr<const Share> current(int64_t now_ns);

  AlgorithmParams params_;
  std::function<int64_t()> instances_;
  MemoryStoreOptions memory_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Share> share_;
};

// The local share of a fleet-wide limit for one of `instances`: limit (capacity, rate)
// divided by the instances, rounded down but at least 1, so the fleet stays within it.
AlgorithmParams shareOf(const AlgorithmParams& params, int64_t instances);

}  // namespace floodgate::http
