// SPDX-License-Identifier: MIT
// A keyed hash built from AES rounds, for CPUs with AES instructions: the fast path of
// keyedHash() (keyed_hash.h), which falls back to SipHash-1-3 where they are missing.
#pragma once

#include <cstdint>
#include <string_view>

namespace floodgate::http {

// Five 128-bit round keys, as little-endian 64-bit halves (low half first): a whitening
// key mixed with the length, two lane keys that set the blocks' positions apart, and two
// round keys. Drawn at random per process; all-zero keys are only for tests.
struct AesHashKey {
  uint64_t words[10] = {};
};

// Whether this CPU runs aesHash() (x86-64 with AES-NI and SSE4.1). Pure.
bool aesHashAvailable();

// The hash of `data` under `key`; only where aesHashAvailable(). Each 16-byte block (the
// last one overlapping the one before when the length is not a multiple of 16, a shorter
// input read whole into one block) is whitened with the key and its position, then put
// through three AES rounds on its own, the length in their round key; the blocks are
// combined and put through two more rounds, and the halves folded. A difference in one
// block meets five rounds; three already let no chosen difference through with
// probability above 2^-54 (nine active S-boxes), so whoever does not know the key cannot
// pick inputs that share a hash or a shard more often than by chance. It is a table
// index, not a MAC: the same reasoning as the AES-based hash of Go's maps.
uint64_t aesHash(const AesHashKey& key, std::string_view data);

}  // namespace floodgate::http
