// SPDX-License-Identifier: MIT
// The one interface every rate-limit algorithm implements, and the per-key state it updates.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/decision.h"

namespace floodgate::http {

enum class AlgorithmKind {
  kFixedWindow,
  kSlidingWindowLog,
  kSlidingWindowCounter,
  kTokenBucket,
  kGcra,
  kLeakyBucket,
};

// Config spelling: fixed_window, sliding_window_log, sliding_window_counter, token_bucket,
// gcra, leaky_bucket.
std::string_view algorithmName(AlgorithmKind kind);
std::optional<AlgorithmKind> algorithmFromName(std::string_view name);
// Window algorithms take limit + window_ms; bucket algorithms take capacity + rate_per_s.
bool isWindowAlgorithm(AlgorithmKind kind);

// Whether a shared store can lease units of this algorithm ahead, in batches (prefetch,
// sync): fixed_window, token_bucket and gcra.
bool canLease(AlgorithmKind kind);

// The parameters of one algorithm. Window algorithms: at most `limit` cost units per
// `window_ms`. Buckets: `capacity` units of burst (for the leaky bucket, the queue depth),
// refilled (drained) at `rate_per_s` units per second.
struct AlgorithmParams {
  AlgorithmKind kind = AlgorithmKind::kTokenBucket;
  int64_t limit = 0;
  int64_t window_ms = 0;
  int64_t capacity = 0;
  double rate_per_s = 0;

  bool operator==(const AlgorithmParams&) const = default;
};

// Bounds the arithmetic stays exact within; the config parser and the lab enforce them.
inline constexpr int64_t kMaxLimit = 1'000'000;
inline constexpr int64_t kMaxWindowMs = 7LL * 24 * 3600 * 1000;  // one week
inline constexpr double kMinRatePerS = 0.001;
inline constexpr double kMaxRatePerS = 1e9;

// The state of one key. A zero-initialised KeyState is an absent key, which every algorithm
// treats as a full bucket / empty window. The meaning of `word` is private to the algorithm.
// 32 bytes, so the store's slot of key + state fits one cache line.
struct KeyState {
  std::array<int64_t, 3> word{};
  // Sliding window log only: admitted arrival times, oldest first; made on first use.
  std::unique_ptr<std::vector<int64_t>> log;

  KeyState() = default;
  KeyState(const KeyState& other) : word(other.word) {
    if (other.log) log = std::make_unique<std::vector<int64_t>>(*other.log);
  }
  KeyState& operator=(const KeyState& other) {
    if (this != &other) *this = KeyState(other);
    return *this;
  }
  KeyState(KeyState&&) noexcept = default;
  KeyState& operator=(KeyState&&) noexcept = default;
};

// A rate-limit algorithm with fixed parameters. Instances are immutable and thread-safe;
// the caller serialises access to each KeyState (the store holds a lock around it).
// Times are readings of one steady clock in nanoseconds; a reading older than one already
// seen by a state (a stale clock read on another thread) never admits more than a fresh one.
class Algorithm {
 public:
  virtual ~Algorithm() = default;

  virtual AlgorithmKind kind() const = 0;

  // Decides on a request of `cost` units arriving at `now_ns`; records it in `state` only
  // if admitted. Decision::policy is left empty (the limiter fills it in).
  virtual Decision decide(KeyState& state, int64_t now_ns, int64_t cost) const = 0;

  // Gives back, at `now_ns`, what an admitted decide(state, admitted_ns, cost) took, for a
  // request that another policy rejected or that turned out to cost less. Never makes the
  // state more generous than had the request never come: a window gives back only while
  // the request's window still counts it, a bucket only the units it has not refilled
  // (drained) since admitted_ns (see unrefilledNs()).
  virtual void refund(KeyState& state, int64_t admitted_ns, int64_t now_ns, int64_t cost) const = 0;

  // True when `state` at `now_ns` is equivalent to an absent key, so forgetting it loses
  // nothing (the store evicts such keys first).
  virtual bool idle(const KeyState& state, int64_t now_ns) const = 0;

  // The units of the quota `state` has used at `now_ns` (0 as an absent key). A full store
  // evicts the least used of the keys it looks at, so a flood of new keys, each used once,
  // cannot push out a spent key and so start it over. By default a decision of cost 0 on a
  // copy of the state's words.
  virtual int64_t used(const KeyState& state, int64_t now_ns) const;

  // For RateLimit-Policy: the quota (q) and the window it refers to in seconds (w).
  virtual int64_t quota() const = 0;
  virtual int64_t windowSeconds() const = 0;

  // Bytes of state per key this algorithm needs (at most, for the log).
  virtual size_t stateBytes() const = 0;
};

// Checks `params` and builds the algorithm; a usage error names the bad parameter.
Result<std::shared_ptr<const Algorithm>> makeAlgorithm(const AlgorithmParams& params);

// Helpers shared by the algorithms.
inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerS = 1'000'000'000;
// Rate in thousandths of a unit per second (exact for rates given with 3 decimals).
int64_t rateMilliPerS(double rate_per_s);
// Nanoseconds per unit at `rate_milli_per_s`, rounded up (never faster than the rate).
int64_t intervalNs(int64_t rate_milli_per_s);
inline int64_t ceilDiv(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }
// What a bucket's refund at `now_ns` may give back of a charge of `charge_ns` (its cost in
// time at the bucket's rate) made at `admitted_ns`: the charge less the time since. The
// bucket has been refilling all that time as though the request were served, so that much
// of the charge is back already; given back on top, it would be admitted twice (a refund
// arriving once the bucket is full again would lift it above its capacity). A bucket kept
// busy all along, never full even without the request, could have taken all of it back:
// that is the price of keeping no history; never more than the request left unrefilled.
inline int64_t unrefilledNs(int64_t charge_ns, int64_t admitted_ns, int64_t now_ns) {
  return std::max<int64_t>(0, charge_ns - std::max<int64_t>(0, now_ns - admitted_ns));
}

}  // namespace floodgate::http
