// SPDX-License-Identifier: MIT
// SipHash against published vectors, the AES-round hash against what a keyed hash must do,
// per-process keys, and keys aimed at one memory shard.
#include "floodgate/core/keyed_hash.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "floodgate/stores/memory_store.h"
#include "http/algorithm_harness.h"

namespace floodgate::http {
namespace {

// The key 00 01 .. 0f of the paper's appendix, as its two little-endian words.
constexpr SipKey kPaperKey{0x0706050403020100, 0x0f0e0d0c0b0a0908};

std::string bytesUpTo(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(i);
  return s;
}

TEST(SipHash, TwoFourMatchesThePaper) {
  // Appendix A: message 00 01 .. 0e under key 00 01 .. 0f.
  EXPECT_EQ(sipHash24(kPaperKey, bytesUpTo(15)), 0xa129ca6149be45e5);
  // The reference implementation's vectors.h: the empty message and 00..07, one whole word.
  EXPECT_EQ(sipHash24(kPaperKey, ""), 0x726fdb47dd0e0e31);
  EXPECT_EQ(sipHash24(kPaperKey, bytesUpTo(8)), 0x93f5f5799a932462);
}

TEST(SipHash, OneThreeMatchesAnIndependentImplementation) {
  // CPython's bytes hash is SipHash-1-3; PYTHONHASHSEED=0 makes its key all zeros:
  //   PYTHONHASHSEED=0 python3 -c "print(hex(hash(b'abcdefg') & (2**64 - 1)))"
  // Every length from 1 to 24: a tail alone (of 1 to 3 bytes, of 4 to 7), whole words
  // alone, and both.
  const uint64_t python[] = {
      0x407448d2b89b1813, 0x555508cbc6add439, 0xc03bc3a0042630f2, 0xe3d1d5fdd52aae89,
      0x251f3c725bd784a2, 0x62207e654289df28, 0x6db12aae9070f506, 0x3f7b849c0b8e35ea,
      0xf89b34a3d11eb6e5, 0xf47c264806c40ff1, 0x14215fc65e2c3bd4, 0x83275255f37565c1,
      0x954aa964997ae4e6, 0xfdbd7fa99ace11da, 0x1fd27a29b0e9dc7a, 0x94f60d3d29e6a312,
      0x61c47e6da27eaccc, 0xb26bb0c0ba2d6627, 0x7ab5be5c8ae7beaa, 0xcad1d77b2c973cd5,
      0x44ece035d1e476fa, 0xb679c8ef18bea06a, 0xd9c26100b33ee39c, 0x42acf3a099aff2dc,
  };
  const SipKey zero{};
  const std::string text = "abcdefghijklmnopqrstuvwx";
  for (size_t n = 1; n <= text.size(); ++n) {
    EXPECT_EQ(sipHash13(zero, std::string_view(text).substr(0, n)), python[n - 1]) << n;
  }
  EXPECT_EQ(sipHash13(zero, "api-key-0123456789"), 0x66effdff1dac573f);
  EXPECT_EQ(sipHash13(zero, bytesUpTo(15)), 0xf30eb725bb91c9ea);
}

TEST(SipHash, AnotherKeyGivesUnrelatedHashes) {
  const SipKey other{kPaperKey.k0, kPaperKey.k1 ^ 1};  // one bit apart
  int same_low_byte = 0;
  for (int i = 0; i < 256; ++i) {
    std::string key = "api-key-" + std::to_string(i);
    uint64_t a = sipHash13(kPaperKey, key);
    uint64_t b = sipHash13(other, key);
    EXPECT_NE(a, b) << key;
    same_low_byte += (a & 0xff) == (b & 0xff);
  }
  EXPECT_LT(same_low_byte, 10) << "about 1 in 256 by chance";
}

// A key with every word different, so no test passes by a symmetry of the zero key.
AesHashKey testAesKey(uint64_t salt = 0) {
  AesHashKey key;
  for (size_t i = 0; i < std::size(key.words); ++i) {
    key.words[i] = (0x9e3779b97f4a7c15 * (i + 1)) ^ salt;
  }
  return key;
}

class AesHash : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!aesHashAvailable()) GTEST_SKIP() << "this CPU has no AES instructions";
  }
};

// `bytes` in a heap buffer of exactly their size, so that AddressSanitizer sees a read
// past the end (a std::string's inline buffer holds up to 15 bytes and would hide it).
class ExactBuffer {
 public:
  explicit ExactBuffer(std::string_view bytes)
      : data_(new char[bytes.size()]), size_(bytes.size()) {
    std::memcpy(data_.get(), bytes.data(), bytes.size());
  }
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_;
};

TEST_F(AesHash, EveryByteOfEveryLengthCounts) {
  // Each length up to four blocks and a bit, each byte flipped in turn: short inputs read
  // with overlapping loads and long ones with an overlapping last block must still see
  // every byte, and inputs that differ only in their length (zeros) must differ too.
  const AesHashKey key = testAesKey();
  std::set<uint64_t> seen;
  for (size_t n = 0; n <= 70; ++n) {
    std::string input(n, '\0');
    const uint64_t base = aesHash(key, ExactBuffer(input).view());
    EXPECT_TRUE(seen.insert(base).second) << "length " << n << " shares a hash";
    for (size_t i = 0; i < n; ++i) {
      std::string flipped = input;
      flipped[i] = '\x80';
      EXPECT_NE(aesHash(key, ExactBuffer(flipped).view()), base)
          << "byte " << i << " of " << n << " is ignored";
    }
  }
}

std::string fromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

TEST_F(AesHash, InputsOfOtherLengthsCannotCancelTheLength) {
  // Classes of inputs of different lengths whose blocks differ by exactly the XOR of their
  // lengths: with the length only XORed into the whitening, each class shares one hash
  // under every key (the short ones) or under a quarter of keys (the 24/25-byte pair).
  const std::vector<std::vector<std::string_view>> classes = {
      {"6061616161616161", "616161616161616161"},
      {"616263646566677e6162636465666768", "7e6263646566677e62636465666768"},
      {"2522232221222322", "212223222122232221222322", "2322232221222322232221222322",
       "222223222122232222232221222322", "3d222322212223223d22232221222322"},
      {"382121212121212123222222222222223821212121212121",
       "39212121212121212222222222222222223921212121212121"},
  };
  std::mt19937_64 random(20261201);
  int collisions = 0;
  for (int k = 0; k < 256; ++k) {
    AesHashKey key;
    for (uint64_t& word : key.words) word = random();
    for (const auto& members : classes) {
      std::set<uint64_t> hashes;
      for (std::string_view hex : members) hashes.insert(aesHash(key, fromHex(hex)));
      collisions += static_cast<int>(members.size() - hashes.size());
    }
  }
  EXPECT_EQ(collisions, 0);
}

TEST_F(AesHash, BlocksDoNotCancelOrSwap) {
  // Independent blocks XORed together would cancel when two are equal, or commute.
  const AesHashKey key = testAesKey();
  const std::string a(16, 'a'), b(16, 'b');
  EXPECT_NE(aesHash(key, a + a), aesHash(key, b + b));
  EXPECT_NE(aesHash(key, a + b), aesHash(key, b + a));
  EXPECT_NE(aesHash(key, a + a + b), aesHash(key, b + a + a));
  EXPECT_NE(aesHash(key, a + a + a + a), aesHash(key, b + b + b + b));
}

TEST_F(AesHash, TheSameInputUnderAnotherKeyIsUnrelated) {
  const AesHashKey key = testAesKey();
  int pairs = 0, same_low_byte = 0;
  for (size_t word = 0; word < std::size(key.words); ++word) {
    AesHashKey other = key;
    other.words[word] ^= 1;  // one bit apart, in each word in turn
    // words 2 to 5 set blocks' positions apart, so only inputs of two blocks or more use them
    const bool short_inputs_use_it = word < 2 || word >= 6;
    for (int i = 0; i < 64; ++i) {
      std::string input = "api-key-" + std::to_string(i);  // 9 or 10 bytes
      if (!short_inputs_use_it || i % 2) input += std::string(10 + i % 40, 'x');
      uint64_t h = aesHash(key, input);
      uint64_t g = aesHash(other, input);
      EXPECT_NE(h, g) << "key word " << word << ", " << input;
      same_low_byte += (h & 0xff) == (g & 0xff);
      ++pairs;
    }
  }
  EXPECT_LT(same_low_byte, 12) << pairs << " pairs: about 2.5 share a low byte by chance";
}

TEST_F(AesHash, SequentialKeysSpreadOverTheStoresShardsAndSlots) {
  // A client's keys are often a counter: the memory store's 64 shards (hash bits 48-53)
  // and its slots (bits 2 and up) must each get about an even share of them, under any key.
  std::mt19937_64 random(7);
  for (int round = 0; round < 4; ++round) {
    AesHashKey key;
    for (uint64_t& word : key.words) word = random();
    std::vector<int> shards(64), slots(64);
    constexpr int kKeys = 64 * 200;
    for (int i = 0; i < kKeys; ++i) {
      uint64_t h = aesHash(key, "user-" + std::to_string(i));
      ++shards[(h >> 48) & 63];
      ++slots[(h >> 2) & 63];
    }
    for (int i = 0; i < 64; ++i) {
      // 200 expected each; 5.5 standard deviations either way
      EXPECT_GT(shards[i], 120) << "shard " << i;
      EXPECT_LT(shards[i], 280) << "shard " << i;
      EXPECT_GT(slots[i], 120) << "slot " << i;
      EXPECT_LT(slots[i], 280) << "slot " << i;
    }
  }
}

constexpr const char* kPrintEnv = "FLOODGATE_TEST_PRINT_KEYED_HASH";

// Also the helper of EachProcessDrawsItsOwnKey, which runs this test in child processes.
TEST(KeyedHash, SameInputSameHashWithinAProcess) {
  EXPECT_EQ(keyedHash("api-key-0123456789"), keyedHash(std::string("api-key-0123456789")));
  const uint64_t expected =
      aesHashAvailable() ? aesHash(processAesHashKey(), "k") : sipHash13(processSipKey(), "k");
  EXPECT_EQ(keyedHash("k"), expected);
  if (std::getenv(kPrintEnv) != nullptr) {
    std::printf("keyed-hash: %016llx\n",
                static_cast<unsigned long long>(keyedHash("api-key-0123456789")));
  }
}

// The hash this test binary computes in a new process.
uint64_t hashInAChild() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 0;
  self[n] = '\0';
  std::string command = std::string(kPrintEnv) + "=1 '" + self +
                        "' --gtest_filter=KeyedHash.SameInputSameHashWithinAProcess";
  FILE* child = popen(command.c_str(), "r");
  if (child == nullptr) return 0;
  unsigned long long hash = 0;
  char line[512];
  while (std::fgets(line, sizeof line, child) != nullptr) {
    std::sscanf(line, "keyed-hash: %llx", &hash);
  }
  pclose(child);
  return hash;
}

TEST(KeyedHash, EachProcessDrawsItsOwnKey) {
  EXPECT_NE(processSipKey().k0 | processSipKey().k1, 0u);
  EXPECT_NE(processAesHashKey().words[0] | processAesHashKey().words[9], 0u);
  uint64_t first = hashInAChild();
  uint64_t second = hashInAChild();
  ASSERT_NE(first, 0u) << "the child process printed no hash";
  ASSERT_NE(second, 0u) << "the child process printed no hash";
  EXPECT_NE(first, second);
  EXPECT_NE(first, keyedHash("api-key-0123456789"));
  EXPECT_NE(second, keyedHash("api-key-0123456789"));
}

// The memory store's shard of a key if it still hashed with std::hash (as it once did):
// the high bits of the hash, 64 shards.
size_t stdHashShard(const std::string& key) {
  return ((std::hash<std::string_view>{}(key) | 2) >> 48) & 63;
}

TEST(KeyedHash, KeysAimedAtOneShardThroughStdHashSpreadOut) {
  // 400 keys an attacker could compute offline to share one shard under std::hash ...
  std::vector<std::string> aimed;
  for (int i = 0; aimed.size() < 400; ++i) {
    std::string key = "attacker-" + std::to_string(i);
    if (stdHashShard(key) == 0) aimed.push_back(key);
  }
  // ... go to a store of 64 shards of 32 keys each: piled on one shard, 368 of them would be
  // forgotten while still holding state; spread (about 6 per shard), none is.
  MemoryStore store(*makeAlgorithm(testing::bucket(AlgorithmKind::kGcra, 2, 0.001)),
                    {.max_keys = 64 * 32, .shards = 64});
  for (const std::string& key : aimed) ASSERT_TRUE(store.decide(key, 0, 1)->allowed());
  MemoryStoreStats stats = store.stats();
  EXPECT_EQ(stats.keys, 400);
  EXPECT_EQ(stats.evicted_active, 0);
  for (const std::string& key : aimed) {
    EXPECT_FALSE(store.decide(key, 0, 2)->allowed()) << key << " lost its state";
  }
}

}  // namespace
}  // namespace floodgate::http
