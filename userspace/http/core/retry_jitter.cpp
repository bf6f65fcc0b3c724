// SPDX-License-Identifier: MIT
// Spreading Retry-After over whole seconds.
#include "floodgate/core/retry_jitter.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

namespace {

// Waits are said at most this long (about 31 years): a wait read from a shared store may be
// as long as the store's format holds (2^53 µs), and in nanoseconds, rounded up and
// spread, it would overflow into a short one.
constexpr int64_t kMaxRetryAfterS = 1'000'000'000;

}  // namespace

int64_t jitteredRetryAfterNs(int64_t retry_after_ns, double fraction, uint64_t random) {
  const int64_t rounded_up = retry_after_ns / kNsPerS + (retry_after_ns % kNsPerS > 0 ? 1 : 0);
  const int64_t seconds = std::clamp<int64_t>(rounded_up, 1, kMaxRetryAfterS);
  if (!(fraction > 0)) return seconds * kNsPerS;
  const auto spread = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(seconds)));
  const int64_t extra = static_cast<int64_t>(random % static_cast<uint64_t>(spread + 1));
  return (seconds + extra) * kNsPerS;
}

uint64_t jitterRandom() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

}  // namespace floodgate::http
