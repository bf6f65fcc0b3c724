// SPDX-License-Identifier: MIT
// Algorithm names, parameter checks, and the factory that builds one from its parameters.
#include "floodgate/core/algorithm.h"

#include <algorithm>
#include <cmath>

#include "floodgate/core/algorithms/fixed_window.h"
#include "floodgate/core/algorithms/gcra.h"
#include "floodgate/core/algorithms/leaky_bucket.h"
#include "floodgate/core/algorithms/sliding_window_counter.h"
#include "floodgate/core/algorithms/sliding_window_log.h"
#include "floodgate/core/algorithms/token_bucket.h"

namespace floodgate::http {

namespace {
struct NamedKind {
  AlgorithmKind kind;
  std::string_view name;
};
constexpr NamedKind kNames[] = {
    {AlgorithmKind::kFixedWindow, "fixed_window"},
    {AlgorithmKind::kSlidingWindowLog, "sliding_window_log"},
    {AlgorithmKind::kSlidingWindowCounter, "sliding_window_counter"},
    {AlgorithmKind::kTokenBucket, "token_bucket"},
    {AlgorithmKind::kGcra, "gcra"},
    {AlgorithmKind::kLeakyBucket, "leaky_bucket"},
};
}  // namespace

std::string_view algorithmName(AlgorithmKind kind) {
  for (const NamedKind& n : kNames) {
    if (n.kind == kind) return n.name;
  }
  return "unknown";
}

std::optional<AlgorithmKind> algorithmFromName(std::string_view name) {
  for (const NamedKind& n : kNames) {
    if (n.name == name) return n.kind;
  }
  return std::nullopt;
}

int64_t Algorithm::used(const KeyState& state, int64_t now_ns) const {
  KeyState copy;
  copy.word = state.word;
  return std::max<int64_t>(0, quota() - decide(copy, now_ns, 0).remaining);
}

bool isWindowAlgorithm(AlgorithmKind kind) {
  return kind == AlgorithmKind::kFixedWindow || kind == AlgorithmKind::kSlidingWindowLog ||
         kind == AlgorithmKind::kSlidingWindowCounter;
}

bool canLease(AlgorithmKind kind) {
  return kind == AlgorithmKind::kFixedWindow || kind == AlgorithmKind::kTokenBucket ||
         kind == AlgorithmKind::kGcra;
}

int64_t rateMilliPerS(double rate_per_s) { return std::llround(rate_per_s * 1000.0); }

int64_t intervalNs(int64_t rate_milli_per_s) {
  return ceilDiv(1'000'000'000'000, rate_milli_per_s);
}

Result<std::shared_ptr<const Algorithm>> makeAlgorithm(const AlgorithmParams& p) {
  const std::string name{algorithmName(p.kind)};
  if (isWindowAlgorithm(p.kind)) {
    if (p.limit < 1 || p.limit > kMaxLimit) {
      return Error::usage(name + " needs a limit between 1 and " + std::to_string(kMaxLimit) +
                          ", got " + std::to_string(p.limit));
    }
    if (p.window_ms < 1 || p.window_ms > kMaxWindowMs) {
      return Error::usage(name + " needs a window_ms between 1 and " +
                          std::to_string(kMaxWindowMs) + ", got " + std::to_string(p.window_ms));
    }
  } else {
    if (p.capacity < 1 || p.capacity > kMaxLimit) {
      return Error::usage(name + " needs a capacity between 1 and " + std::to_string(kMaxLimit) +
                          ", got " + std::to_string(p.capacity));
    }
    if (!(p.rate_per_s >= kMinRatePerS && p.rate_per_s <= kMaxRatePerS)) {
      return Error::usage(name + " needs a rate_per_s between 0.001 and 1e9, got " +
                          std::to_string(p.rate_per_s));
    }
  }
  int64_t rate = rateMilliPerS(p.rate_per_s);
  switch (p.kind) {
    case AlgorithmKind::kFixedWindow:
      return std::shared_ptr<const Algorithm>(std::make_shared<FixedWindow>(p.limit, p.window_ms));
    case AlgorithmKind::kSlidingWindowLog:
      return std::shared_ptr<const Algorithm>(
          std::make_shared<SlidingWindowLog>(p.limit, p.window_ms));
    case AlgorithmKind::kSlidingWindowCounter:
      return std::shared_ptr<const Algorithm>(
          std::make_shared<SlidingWindowCounter>(p.limit, p.window_ms));
    case AlgorithmKind::kTokenBucket:
      return std::shared_ptr<const Algorithm>(std::make_shared<TokenBucket>(p.capacity, rate));
    case AlgorithmKind::kGcra:
      return std::shared_ptr<const Algorithm>(std::make_shared<Gcra>(p.capacity, rate));
    case AlgorithmKind::kLeakyBucket:
      return std::shared_ptr<const Algorithm>(std::make_shared<LeakyBucket>(p.capacity, rate));
  }
  return Error::usage("unknown algorithm");
}

}  // namespace floodgate::http
