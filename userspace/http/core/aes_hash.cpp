// SPDX-License-Identifier: MIT
// aesHash: AES rounds (AES-NI) as the mixing function of a keyed hash for table indexes.
#include "floodgate/core/aes_hash.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace floodgate::http {

#if defined(__x86_64__)

namespace {

#define FLOODGATE_AES_TARGET __attribute__((target("aes,sse4.1")))

FLOODGATE_AES_TARGET inline __m128i keyWord(const AesHashKey& key, int i) {
  return _mm_set_epi64x(static_cast<long long>(key.words[2 * i + 1]),
                        static_cast<long long>(key.words[2 * i]));
}

// `n` bytes at `p`, 1 to 16 of them, as one block: two loads that overlap in the middle
// (each no longer than the input), so no byte past the end is read. For a given n every
// byte lands somewhere, so inputs of one length map to blocks one to one.
FLOODGATE_AES_TARGET inline __m128i loadShort(const char* p, size_t n) {
  if (n >= 8) {
    uint64_t lo, hi;
    std::memcpy(&lo, p, 8);
    std::memcpy(&hi, p + n - 8, 8);
    return _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
  }
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    return _mm_set_epi64x(0, static_cast<long long>(lo | uint64_t{hi} << 32));
  }
  if (n == 0) return _mm_setzero_si128();
  auto byte = [&](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])}; };
  return _mm_set_epi64x(0, static_cast<long long>(byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16));
}

// One block, whitened and through three rounds of its own.
FLOODGATE_AES_TARGET inline __m128i mixBlock(__m128i block, __m128i whitening, __m128i k0,
                                             __m128i k1) {
  __m128i x = _mm_xor_si128(block, whitening);
  x = _mm_aesenc_si128(x, k0);
  x = _mm_aesenc_si128(x, k1);
  return _mm_aesenc_si128(x, k0);
}

}  // namespace

bool aesHashAvailable() {
  static const bool available = __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
  return available;
}

FLOODGATE_AES_TARGET uint64_t aesHash(const AesHashKey& key, std::string_view data) {
  const char* p = data.data();
  const size_t n = data.size();
  // The length goes into a round key, after the first S-boxes: inputs of different lengths
  // (which can map to the same blocks) then differ past a non-linear step. XORed into the
  // whitening alone it could be cancelled by the input: a 9-byte and an 8-byte input whose
  // blocks differ by exactly 9 ^ 8 would enter the rounds equal, under every key.
  const __m128i k0 = _mm_xor_si128(keyWord(key, 3), _mm_cvtsi64_si128(static_cast<long long>(n)));
  const __m128i k1 = keyWord(key, 4);
  const __m128i seed = _mm_xor_si128(keyWord(key, 0), _mm_set1_epi64x(static_cast<long long>(n)));
  __m128i acc;
  if (n <= 16) {
    acc = mixBlock(loadShort(p, n), seed, k0, k1);
  } else {
    // Block i is whitened with seed + i × lane, so the same block at two positions mixes
    // differently and blocks cannot be swapped or cancelled against each other.
    const __m128i lane = keyWord(key, 1);
    __m128i whitening = seed;
    acc = _mm_setzero_si128();
    size_t at = 0;
    for (; at + 16 < n; at += 16) {
      __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
      acc = _mm_xor_si128(acc, mixBlock(block, whitening, k0, k1));
      whitening = _mm_add_epi64(whitening, lane);
    }
    // the last 16 bytes, overlapping the block before unless n is a multiple of 16
    __m128i last = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16));
    acc = _mm_xor_si128(acc, mixBlock(last, _mm_xor_si128(whitening, keyWord(key, 2)), k0, k1));
  }
  acc = _mm_aesenc_si128(acc, k1);
  acc = _mm_aesenc_si128(acc, k0);
  return static_cast<uint64_t>(_mm_cvtsi128_si64(acc)) ^
         static_cast<uint64_t>(_mm_extract_epi64(acc, 1));
}

#else

bool aesHashAvailable() { return false; }

uint64_t aesHash(const AesHashKey&, std::string_view) { return 0; }

#endif

}  // namespace floodgate::http
