// SPDX-License-Identifier: MIT
// Spreading Retry-After over whole seconds.
#include "floodgate/core/retry_jitter.h"

#include <cmath>
#include <random>

#include "floodgate/core/algorithm.h"

namespace floodgate::http {

int64_t jitteredRetryAfterNs(int64_t retry_after_ns, double fraction, uint64_t random) {
  const int64_t seconds = std::max<int64_t>(1, (retry_after_ns + kNsPerS - 1) / kNsPerS);
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
