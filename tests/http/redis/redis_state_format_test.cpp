// SPDX-License-Identifier: MIT
// What the decide functions make of a stored state they did not write: hostile or corrupted
// values, and the state of an older version's fleet sharing the server.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "floodgate/redis/redis_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::packedState;
using testing::stateField;
using testing::window;

constexpr int64_t kNowUs = 1'000'000'000;  // virtual time: 1000 s
constexpr int64_t kNowNs = kNowUs * 1000;
constexpr int64_t kBig = int64_t{1} << 53;
constexpr int64_t kHuge = int64_t{1} << 62;

// One algorithm with the values that must read as absent: of another length, text (an
// older version's format, at the length of this one's), or a field out of its range. Each
// field check has a value that only it catches, one that would decide, refund or sync
// otherwise without it: a time at 2^53 or far ahead (one far behind is as fresh anyway), a
// negative count, a zero or negative GCRA interval with the time ahead of now (only then is
// the interval used), a valid state with a byte more. A stored window length below 1 is also
// another length than the policy's, which starts fresh by itself (the {index, 1, 0} values).
struct Case {
  AlgorithmParams params;
  std::vector<std::string> hostile;
};

std::vector<Case> cases() {
  const int64_t w = 60'000'000;        // the windows' length in µs
  const int64_t index = kNowUs / w;    // the current window's index
  const int64_t interval = 1'000'000;  // GCRA at 1/s, in µs per unit
  const int64_t ahead = kNowUs + 5 * interval;
  const std::vector<std::string> any = {"", "x", std::string(8, '\0'), std::string(40, '\xff')};
  const std::vector<std::string> tat = {"1234567890:12345",
                                        packedState({kHuge, interval}),
                                        packedState({kBig, interval}),
                                        packedState({ahead, 0}),
                                        packedState({ahead, -interval}),
                                        packedState({ahead, interval}) + "!"};
  std::vector<Case> out = {
      {window(AlgorithmKind::kFixedWindow, 10, 60'000),
       {"123456789012:12345678901", packedState({index, -1, w}), packedState({index, kBig, w}),
        packedState({kBig, 1, w}), packedState({kHuge, 1, w}), packedState({index, 1, 0}),
        packedState({index, 1, -w}), packedState({index, 1, w}) + "!"}},
      {window(AlgorithmKind::kSlidingWindowCounter, 10, 60'000),
       {"12345678:1234567:2345678:123456", packedState({index, -1, 0, w}),
        packedState({index, 0, -1, w}), packedState({index, kHuge, 0, w}),
        packedState({kBig, 1, 1, w}), packedState({index, 1, 1, 0}),
        packedState({index, 1, 1, w}) + "!"}},
      {bucket(AlgorithmKind::kTokenBucket, 10, 1),
       {"1234567890:12345", packedState({-1'000'000'000, kNowUs}), packedState({kHuge, kNowUs}),
        packedState({kBig, kNowUs}), packedState({0, kHuge}), packedState({0, kBig}),
        packedState({5'000'000'000, kNowUs}) + "!"}},
      {bucket(AlgorithmKind::kGcra, 10, 1), tat},
      {bucket(AlgorithmKind::kLeakyBucket, 10, 1), tat},
  };
  for (Case& c : out) c.hostile.insert(c.hostile.end(), any.begin(), any.end());
  return out;
}

std::string keyOf(const AlgorithmParams& params, std::string_view key) {
  return "fg:{p:" + std::string(key) + "}:" + std::string(algorithmName(params.kind)) + ":v3";
}

class RedisStateFormatTest : public testing::RedisServerTest {
 protected:
  std::unique_ptr<RedisStore> store(const AlgorithmParams& params, std::string policy = "p") {
    RedisStoreOptions options;
    options.virtual_time = true;
    return std::make_unique<RedisStore>(client_, std::move(policy), params, options);
  }
};

void expectSame(const Decision& got, const Decision& fresh, const std::string& what) {
  EXPECT_EQ(got.outcome, fresh.outcome) << what;
  EXPECT_EQ(got.remaining, fresh.remaining) << what;
  EXPECT_EQ(got.reset_ns, fresh.reset_ns) << what;
  EXPECT_EQ(got.retry_after_ns, fresh.retry_after_ns) << what;
}

// Each hostile value decides as an absent key does, by the function of its algorithm (which
// GETs the key) and by the decide-together function (which MGETs it), and is replaced by a
// state of this version's format.
TEST_F(RedisStateFormatTest, AValueNotOfTheFormatReadsAsAbsent) {
  for (const Case& c : cases()) {
    auto s = store(c.params);
    const std::string name = std::string(algorithmName(c.params.kind));
    const std::string key = keyOf(c.params, "k");
    for (size_t i = 0; i < c.hostile.size(); ++i) {
      const std::string what = name + " value #" + std::to_string(i);
      for (bool together : {false, true}) {
        ASSERT_TRUE(server_->command({"FLUSHALL"}));
        ASSERT_TRUE(server_->command({"SET", key, c.hostile[i]}));
        Result<Decision> fresh = s->decide("fresh", kNowNs, 1);
        ASSERT_TRUE(fresh) << what;
        Decision got;
        if (together) {
          // with a second policy's key, so that the function reads both in one MGET
          auto other = store(window(AlgorithmKind::kFixedWindow, 5, 1000), "other");
          auto answers = RedisStore::decideAtomically(
              {{s.get(), {"k", 1, 0}}, {other.get(), {"k", 1, 0}}}, kNowNs, true);
          ASSERT_TRUE(answers) << what;
          ASSERT_TRUE((*answers)[0]) << what << ": " << (*answers)[0].error().message;
          got = (*answers)[0]->decision;
        } else {
          Result<Decision> d = s->decide("k", kNowNs, 1);
          ASSERT_TRUE(d) << what << ": " << d.error().message;
          got = *d;
        }
        expectSame(got, *fresh, what + (together ? ", together" : ", alone"));
        auto now_stored = server_->command({"GET", key});
        auto fresh_stored = server_->command({"GET", keyOf(c.params, "fresh")});
        ASSERT_TRUE(now_stored && fresh_stored) << what;
        EXPECT_EQ(now_stored->str, fresh_stored->str) << what;
      }
    }
  }
}

// A refund to a value not of the format gives nothing back to it: the value is left as it
// was, as a refund leaves an absent key absent (and a decide still reads it as absent).
TEST_F(RedisStateFormatTest, ARefundLeavesAValueNotOfTheFormatAsItWas) {
  for (const Case& c : cases()) {
    auto s = store(c.params);
    const std::string key = keyOf(c.params, "k");
    for (size_t i = 0; i < c.hostile.size(); ++i) {
      const std::string what =
          std::string(algorithmName(c.params.kind)) + " value #" + std::to_string(i);
      ASSERT_TRUE(server_->command({"FLUSHALL"}));
      ASSERT_TRUE(server_->command({"SET", key, c.hostile[i]}));
      Status refunded = s->giveBack("k", kNowNs, kNowNs, 1);
      ASSERT_TRUE(refunded) << what << ": " << refunded.error().message;
      auto kept = server_->command({"GET", key});
      ASSERT_TRUE(kept) << what;
      EXPECT_EQ(kept->str, c.hostile[i]) << what;
    }
  }
}

// A sync (the local buckets' reconciliation) adds its units to a value not of the format as
// to an absent key: the same answer, and a state of this version's format written.
TEST_F(RedisStateFormatTest, ASyncReadsAValueNotOfTheFormatAsAbsent) {
  for (const Case& c : cases()) {
    if (c.params.kind == AlgorithmKind::kSlidingWindowCounter ||
        c.params.kind == AlgorithmKind::kLeakyBucket) {
      continue;  // not synced: no local buckets lease from them
    }
    auto s = store(c.params);
    const std::string key = keyOf(c.params, "k");
    const int64_t index = kNowUs / 60'000'000;  // the fixed window's, ignored by the others
    for (size_t i = 0; i < c.hostile.size(); ++i) {
      const std::string what =
          std::string(algorithmName(c.params.kind)) + " value #" + std::to_string(i);
      ASSERT_TRUE(server_->command({"FLUSHALL"}));
      ASSERT_TRUE(server_->command({"SET", key, c.hostile[i]}));
      auto synced = s->sync({{"fresh", 1, index}, {"k", 1, index}}, kNowNs);
      ASSERT_TRUE(synced) << what;
      ASSERT_TRUE((*synced)[0] && (*synced)[1]) << what;
      EXPECT_EQ((*synced)[1]->remaining, (*synced)[0]->remaining) << what;
      EXPECT_EQ((*synced)[1]->reset_ns, (*synced)[0]->reset_ns) << what;
      auto now_stored = server_->command({"GET", key});
      auto fresh_stored = server_->command({"GET", keyOf(c.params, "fresh")});
      ASSERT_TRUE(now_stored && fresh_stored) << what;
      EXPECT_EQ(now_stored->str, fresh_stored->str) << what;
    }
  }
}

// A state of the format whose fields are in range is the key's state, however extreme: the
// clamps of the algorithms bound what it costs. A fixed window counted past its limit
// refuses until its window ends; a GCRA time far ahead is cut to the whole capacity used.
TEST_F(RedisStateFormatTest, AnExtremeStateInRangeRefusesNoLongerThanItsWindowOrCapacity) {
  auto fixed = store(window(AlgorithmKind::kFixedWindow, 10, 60'000));
  const int64_t w = 60'000'000;
  ASSERT_TRUE(server_->command(
      {"SET", "fg:{p:k}:fixed_window:v3", packedState({kNowUs / w, kBig - 1, w})}));
  Result<Decision> d = fixed->decide("k", kNowNs, 1);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->outcome, Outcome::kRejected);
  EXPECT_EQ(d->retry_after_ns, ((kNowUs / w + 1) * w - kNowUs) * 1000);
  Result<Decision> next = fixed->decide("k", ((kNowUs / w + 1) * w) * 1000, 1);
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->allowed());

  auto gcra = store(bucket(AlgorithmKind::kGcra, 10, 1));
  ASSERT_TRUE(server_->command({"SET", "fg:{p:k}:gcra:v3", packedState({kBig - 1, 1'000'000})}));
  d = gcra->decide("k", kNowNs, 1);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->outcome, Outcome::kRejected);
  EXPECT_EQ(d->retry_after_ns, 1'000'000'000) << "one interval: the capacity is all used";
}

// A sync adds what the fleet spent to the key's debt, again for a sync reported twice (one
// that timed out after Redis ran it): however large the debt grows, the state stays in range,
// so the key keeps refusing instead of reading as absent, a fresh window or a full bucket.
TEST_F(RedisStateFormatTest, ASyncHoldsADebtInRangeHoweverLarge) {
  const int64_t w = 60'000'000;
  const int64_t index = kNowUs / w;
  struct Synced {
    AlgorithmParams params;
    std::string state;
  };
  const std::vector<Synced> synced = {
      {window(AlgorithmKind::kFixedWindow, 10, 60'000), packedState({index, kBig - 100, w})},
      {bucket(AlgorithmKind::kTokenBucket, 10, 1), packedState({kBig - 1'000, kNowUs})},
      {bucket(AlgorithmKind::kGcra, 10, 1), packedState({kBig - 1'000, 1'000'000})},
  };
  for (const Synced& c : synced) {
    const std::string what(algorithmName(c.params.kind));
    auto s = store(c.params);
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    ASSERT_TRUE(server_->command({"SET", keyOf(c.params, "k"), c.state}));
    auto done = s->sync({{"k", 10'000, index}}, kNowNs);
    ASSERT_TRUE(done && (*done)[0]) << what;
    EXPECT_EQ((*done)[0]->remaining, 0) << what;
    Result<Decision> d = s->decide("k", kNowNs, 1);
    ASSERT_TRUE(d) << what << ": " << d.error().message;
    EXPECT_EQ(d->outcome, Outcome::kRejected) << what << ": the debt read as absent";
  }
}

// An older version's fleet on the same server keeps its state as text under other names
// ("<algorithm>:v2", GCRA's under "gcra"): this version neither reads nor writes it. Nor
// could an older version misread this version's state: its patterns take only digits,
// '-' and ':', and a packed state has other bytes (the zero high bytes of its fields), so it
// would read as absent, never as another state.
TEST_F(RedisStateFormatTest, AnOlderFleetsTextStateAndThisVersionsNeverMeet) {
  const std::vector<std::pair<AlgorithmParams, std::vector<std::string>>> old = {
      {window(AlgorithmKind::kFixedWindow, 10, 60'000),
       {"fg:{p:k}:fixed_window:v2", "16:10:60000000"}},
      {window(AlgorithmKind::kSlidingWindowCounter, 10, 60'000),
       {"fg:{p:k}:sliding_window_counter:v2", "16:10:10:60000000"}},
      {bucket(AlgorithmKind::kTokenBucket, 10, 1),
       {"fg:{p:k}:token_bucket:v2", "10000000000:1000000000"}},
      {bucket(AlgorithmKind::kGcra, 10, 1), {"fg:{p:k}:gcra", "1010000000:1000000"}},
  };
  for (const auto& [params, text] : old) {
    ASSERT_TRUE(server_->command({"SET", text[0], text[1]}));
    Result<Decision> d = store(params)->decide("k", kNowNs, 1);
    ASSERT_TRUE(d) << text[0];
    EXPECT_TRUE(d->allowed()) << text[0] << ": the older fleet's all-used state is not read";
    EXPECT_EQ(d->remaining, 9) << text[0];
    auto kept = server_->command({"GET", text[0]});
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->str, text[1]) << text[0];
    const std::string mine = "fg:{p:k}:" + std::string(algorithmName(params.kind)) + ":v3";
    auto unmatched = server_->command(
        {"EVAL", "return string.match(redis.call('GET', KEYS[1]), '^[%d:%-]+$') and 1 or 0", "1",
         mine});
    ASSERT_TRUE(unmatched) << mine;
    EXPECT_EQ(unmatched->integer, 0) << mine;
  }
}

}  // namespace
}  // namespace floodgate::http
