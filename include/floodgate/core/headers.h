// SPDX-License-Identifier: MIT
// The HTTP contract of a verdict: RateLimit-Policy, RateLimit, Retry-After, status and body.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "floodgate/core/limiter.h"

namespace floodgate::http {

// draft-ietf-httpapi-ratelimit-headers-10, structured-field lists, one item per matching
// policy in config order. Quotas and remaining count cost units.
//   RateLimit-Policy: "per-key";q=100;w=60
std::string rateLimitPolicyHeader(const Verdict& verdict);
//   RateLimit: "per-key";r=0;t=12      (t: seconds until the quota resets, rounded up)
std::string rateLimitHeader(const Verdict& verdict);

// Whole seconds to wait, rounded up and at least 1 (a retry any earlier cannot succeed).
int64_t retryAfterSeconds(int64_t retry_after_ns);

// The status of a response to `verdict`: 200 (the caller's own) if allowed, 429 if over a
// limit (including a cost that can never fit), 503 if a fail-closed store is unavailable or
// the request's priority class is shed (overloaded), 400 if the request names its key two
// ways (a key header sent twice with different values, or credentials not in canonical
// base64).
int statusFor(const Verdict& verdict);

// The application/problem+json body (RFC 9457) of a rejection, naming the violated
// policies in "violated-policies"; a shed one says "overloaded" and names its priority.
std::string problemJson(const Verdict& verdict);

// Every header a response to `verdict` should carry, as (name, value) pairs: the two
// RateLimit fields when a policy applied (no item for a policy whose key was ambiguous: its
// quota is nobody's), and Retry-After on a rejection that a retry can fix (never for a cost
// larger than the burst), a shed request's included.
std::vector<std::pair<std::string, std::string>> responseHeaders(const Verdict& verdict);

}  // namespace floodgate::http
