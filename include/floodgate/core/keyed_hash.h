// SPDX-License-Identifier: MIT
// Keyed hashes for the keys clients choose, so they cannot aim them at one bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "floodgate/core/aes_hash.h"

namespace floodgate::http {

// A 128-bit SipHash key, as the two little-endian 64-bit halves of its 16 bytes.
struct SipKey {
  uint64_t k0 = 0;
  uint64_t k1 = 0;
};

// SipHash-c-d of `data` under `key` (Aumasson and Bernstein, "SipHash: a fast short-input
// PRF", 2012): c compression rounds per 8-byte word, d finalization rounds. Whoever does not
// know the key cannot choose inputs that share a hash, nor any bits of one. Pure functions.
uint64_t sipHash24(const SipKey& key, std::string_view data);
uint64_t sipHash13(const SipKey& key, std::string_view data);

// This process's keys: random bytes from getrandom(), drawn on first use. Children forked
// after that share them (an attacker still learns nothing of them). Thread-safe.
const SipKey& processSipKey();
const AesHashKey& processAesHashKey();

// The hash of every table indexed by a key a client chose (an API key header, a user id),
// under this process's keys: aesHash() where the CPU has AES instructions, else
// SipHash-1-3. Neither lets a client that does not know the key aim its keys at one shard
// or probe chain. On the test VMs an 18-byte key takes 3-6 ns with aesHash (5-8 ns through
// this function's choice), 17-20 ns with SipHash-1-3 and 8-10 ns with the unkeyed
// std::hash, against a hot-key decision of about 30 ns in all: with AES instructions a
// keyed hash costs the decisions nothing (BM_KeyHash and BM_HotKey in
// tests/http/decisions_benchmark.cpp). SipHash-1-3 rather than 2-4 as the fallback because
// a table index needs a key that cannot be found from its outputs, not 2-4's margin as a
// MAC; Python's and Rust's hash tables use 1-3 for the same reason. Thread-safe.
uint64_t keyedHash(std::string_view data);

// keyedHash() as the hasher of an unordered container of client-chosen strings.
// `key` if it is at most `max_bytes` long, else its first max_bytes - 24 bytes, '#' and its
// keyed hash, written to `scratch`: clients choose keys (an API key header of any length),
// and what one can make a process hold must be bounded. Stable within a process only.
std::string_view boundedKey(std::string_view key, size_t max_bytes, std::string& scratch);

struct KeyedHasher {
  using is_transparent = void;
  size_t operator()(std::string_view data) const noexcept { return keyedHash(data); }
};

}  // namespace floodgate::http
