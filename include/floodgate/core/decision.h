// SPDX-License-Identifier: MIT
// Decision: what a limiter answers for one request, with everything the 429 contract needs.
#pragma once

#include <cstdint>
#include <string_view>

namespace floodgate::http {

enum class Outcome {
  kAllowed,           // admitted (possibly after delay_ns, for a shaping queue)
  kRejected,          // over the limit now; a retry after retry_after_ns can succeed
  kCostExceedsBurst,  // cost is larger than the policy's burst: no retry can ever succeed
  kStoreUnavailable,  // the store failed and the policy's failure mode is "closed"
  kOverloaded,        // shed: the instance has too many requests in flight for its class
  // the request names its key two ways (a key header sent twice with different values, or
  // Basic or JWT credentials not in canonical base64, which decoders read differently):
  // which one the service reads is its framework's choice, so no key can be charged and
  // the request is refused as malformed (400); no retry of it can succeed
  kAmbiguousKey,
};

// All durations in nanoseconds, all counts in cost units (a request of cost 5 uses 5).
struct Decision {
  Outcome outcome = Outcome::kAllowed;
  int64_t delay_ns = 0;        // wait before passing the request upstream (leaky bucket)
  int64_t limit = 0;           // the quota: requests per window, or bucket/queue capacity
  int64_t remaining = 0;       // units still available right after this decision
  int64_t reset_ns = 0;        // until the quota is whole again (window end, bucket full)
  int64_t retry_after_ns = 0;  // 0 if allowed; else the earliest moment a retry can succeed
  std::string_view policy;     // the binding policy's name (owned by the limiter's config)
  bool by_fallback = false;    // decided by a shared store's local fallback while it was down

  bool allowed() const { return outcome == Outcome::kAllowed; }
};

}  // namespace floodgate::http
