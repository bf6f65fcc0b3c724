// SPDX-License-Identifier: MIT
// SipHash-1-3 and -2-4, written from the paper, the process's random keys, and keyedHash().
#include "floodgate/core/keyed_hash.h"

#include <bit>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "floodgate/common/random_bytes.h"

namespace floodgate::http {

namespace {

uint64_t loadLittleEndian(const char* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof word);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  return word;
}

uint32_t load32LittleEndian(const char* p) {
  uint32_t word;
  std::memcpy(&word, p, sizeof word);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap32(word);
  return word;
}

// The `left` (1 to 7) bytes at `p` as a little-endian number. With `whole_word_before`, the
// 8 bytes before p + left are all the input's, so one load ending there does.
[[gnu::always_inline]] inline uint64_t loadTail(const char* p, size_t left,
                                                bool whole_word_before) {
  if (whole_word_before) return loadLittleEndian(p + left - 8) >> (64 - 8 * left);
  if (left >= 4) {
    // two 4-byte loads that overlap in the middle: the same bytes at the same places
    return load32LittleEndian(p) | uint64_t{load32LittleEndian(p + left - 4)} << (8 * (left - 4));
  }
  auto byte = [&](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])} << (8 * i); };
  return byte(0) | byte(left / 2) | byte(left - 1);  // 1, 2 or 3 bytes, some read twice
}

// The four-word state of SipHash and its one mixing function.
struct SipState {
  uint64_t v0, v1, v2, v3;

  explicit SipState(const SipKey& key)
      : v0(key.k0 ^ 0x736f6d6570736575),  // "somepseudorandomlygeneratedbytes"
        v1(key.k1 ^ 0x646f72616e646f6d),
        v2(key.k0 ^ 0x6c7967656e657261),
        v3(key.k1 ^ 0x7465646279746573) {}

  void round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }

  template <int kRounds>
  void compress(uint64_t word) {
    v3 ^= word;
    for (int i = 0; i < kRounds; ++i) round();
    v0 ^= word;
  }
};

template <int kCompressionRounds, int kFinalRounds>
uint64_t sipHash(const SipKey& key, std::string_view data) {
  SipState s(key);
  const char* p = data.data();
  const size_t whole_words = data.size() / 8;
  for (size_t i = 0; i < whole_words; ++i, p += 8) {
    s.compress<kCompressionRounds>(loadLittleEndian(p));
  }
  // The last word: the 0 to 7 bytes left, little-endian, and the length mod 256 on top.
  // Read with a few overlapping loads, never past the end, rather than a byte at a time:
  // a loop whose count varies with the key mispredicts, and keys of 7 to 20 bytes (an
  // address, an API key) are what this hashes.
  uint64_t last = static_cast<uint64_t>(data.size()) << 56;
  const size_t left = data.size() % 8;
  if (left != 0) last |= loadTail(p, left, data.size() >= 8);
  s.compress<kCompressionRounds>(last);
  s.v2 ^= 0xff;
  for (int i = 0; i < kFinalRounds; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

// Both hashes' keys: keyedHash() uses one, and tests compare against both.
struct ProcessKeys {
  SipKey sip;
  AesHashKey aes;
  bool use_aes = aesHashAvailable();

  ProcessKeys() {
    unsigned char bytes[16 + sizeof aes.words];
    // Keys an attacker could guess would let it aim keys at one bucket: no keys, no process.
    if (Status drawn = randomBytes(bytes, sizeof bytes); !drawn) {
      throw std::runtime_error(drawn.error().message);
    }
    const char* p = reinterpret_cast<const char*>(bytes);
    sip.k0 = loadLittleEndian(p);
    sip.k1 = loadLittleEndian(p + 8);
    for (size_t i = 0; i < std::size(aes.words); ++i)
      aes.words[i] = loadLittleEndian(p + 16 + 8 * i);
  }
};

const ProcessKeys& processKeys() {
  static const ProcessKeys keys;
  return keys;
}

}  // namespace

uint64_t sipHash24(const SipKey& key, std::string_view data) { return sipHash<2, 4>(key, data); }

uint64_t sipHash13(const SipKey& key, std::string_view data) { return sipHash<1, 3>(key, data); }

const SipKey& processSipKey() { return processKeys().sip; }

const AesHashKey& processAesHashKey() { return processKeys().aes; }

uint64_t keyedHash(std::string_view data) {
  const ProcessKeys& keys = processKeys();
  return keys.use_aes ? aesHash(keys.aes, data) : sipHash13(keys.sip, data);
}

std::string_view boundedKey(std::string_view key, size_t max_bytes, std::string& scratch) {
  if (key.size() <= max_bytes) return key;
  scratch.assign(key.substr(0, max_bytes - 24));
  scratch += '#';
  scratch += std::to_string(keyedHash(key));
  return scratch;
}

}  // namespace floodgate::http
