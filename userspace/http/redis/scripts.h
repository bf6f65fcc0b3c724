// SPDX-License-Identifier: MIT
// The Lua scripts that run each algorithm's read-modify-write atomically inside Redis.
#pragma once

#include <string>
#include <string_view>

#include "http/algorithm.h"

namespace floodgate::http::redis {

// A script and its SHA1, for EVALSHA (and EVAL when the server answers NOSCRIPT).
struct Script {
  std::string body;
  std::string sha1;  // lower-case hex
};

// Every script works in microseconds: Lua numbers are doubles, exact below 2^53, and a
// Redis TIME reading in µs (about 1.8e15) fits where one in ns would not. Token buckets
// count nanotokens (10^-9 unit), so at `rate_milli` thousandths per second a bucket earns
// exactly `rate_milli` nanotokens per µs, as the in-memory one earns picotokens per ns.
//
// Decide: KEYS = the key's Redis keys (sliding_window_log has two: the log and a sequence
// for unique members; the others one). ARGV = now_us (empty: read Redis TIME; tests pass
// a virtual time), cost, extra (units to lease besides the cost, if admitted; only for
// fixed_window, token_bucket and gcra), then the algorithm's parameters:
//   window algorithms: limit, window_us; buckets: capacity, rate_milli, interval_us.
// Returns {outcome (0 allowed, 1 rejected, 2 cost exceeds burst), delay_us, remaining,
//          reset_us, retry_after_us, now_us, leased}.
// The key's expiry is set in the same script, to when its state equals an absent key.
const Script& decideScript(AlgorithmKind kind);

// Refund: same KEYS; ARGV = admitted_us, cost, 0, then the same parameters. Returns 0.
const Script& refundScript(AlgorithmKind kind);

// Hex SHA1 of `text` (what Redis names a script by).
std::string sha1Hex(std::string_view text);

// Lowercase hex of `size` bytes.
std::string hexOf(const unsigned char* bytes, size_t size);

}  // namespace floodgate::http::redis
