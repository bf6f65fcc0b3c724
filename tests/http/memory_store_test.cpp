// SPDX-License-Identifier: MIT
// The in-memory store: absent keys, bounded memory with eviction, and many threads on one key.
#include "floodgate/stores/memory_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "floodgate/core/compact_key.h"
#include "floodgate/stores/local_share_store.h"
#include "http/algorithm_harness.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::kMs;
using testing::window;

std::shared_ptr<const Algorithm> make(const AlgorithmParams& params) {
  auto made = makeAlgorithm(params);
  EXPECT_TRUE(made.ok());
  return *made;
}

TEST(MemoryStore, KeysAreIndependentAndAbsentKeysAreFull) {
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 2, 1)), {});
  EXPECT_TRUE(store.decide("a", 0, 2)->allowed());
  EXPECT_FALSE(store.decide("a", 0, 1)->allowed());
  Decision b = *store.decide("b", 0, 1);
  EXPECT_TRUE(b.allowed());
  EXPECT_EQ(b.remaining, 1);
  EXPECT_EQ(store.stats().keys, 2);
}

TEST(MemoryStore, PrefetchIsOnlyAHintAndSafeWhileTablesGrow) {
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 1, 0.001)), {.max_keys = 4096, .shards = 1});
  std::atomic<bool> done{false};
  // another thread prefetches while this one makes the table grow several times over
  std::thread hinter([&] {
    while (!done) {
      for (int i = 0; i < 100; ++i) store.prefetch("k" + std::to_string(i));
      store.prefetch(std::string(1000, 'x'));  // a key longer than kMaxKeyBytes
    }
  });
  for (int i = 0; i < 4000; ++i)
    ASSERT_TRUE(store.decide("k" + std::to_string(i), 1, 1)->allowed());
  done = true;
  hinter.join();
  EXPECT_EQ(store.stats().keys, 4000) << "a prefetch never creates a key";
  EXPECT_FALSE(store.decide("k7", 1, 1)->allowed()) << "and never changes one";
}

TEST(MemoryStore, RotatingKeysCannotGrowItBeyondTheBound) {
  MemoryStore store(make(bucket(AlgorithmKind::kTokenBucket, 5, 1)), {.max_keys = 64, .shards = 4});
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(store.decide("rotating-" + std::to_string(i), 0, 1).ok());
  }
  MemoryStoreStats stats = store.stats();
  EXPECT_LE(stats.keys, 64);
  EXPECT_EQ(stats.evicted_active + stats.evicted_idle, 10'000 - stats.keys);
}

TEST(MemoryStore, KeysStayFindableThroughEvictionsAndGrowth) {
  // Capacity 1 and no refill: a key that is found again is rejected; one lost is admitted.
  // Which key an eviction picks depends on where keys hash, which the per-process hash key
  // makes different on every run: so what is checked is that every key the store says it
  // holds is found again, whatever was evicted and however the table grew.
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 1, 0.001)), {.max_keys = 50, .shards = 1});
  for (int i = 0; i < 5'000; ++i) {
    std::string key = "k" + std::to_string(i * 7919 % 100'003);
    ASSERT_TRUE(store.decide(key, 0, 1)->allowed()) << key;
    ASSERT_FALSE(store.decide(key, 0, 1)->allowed()) << key;
    if (i % 97 == 0 || i < 60) {
      std::vector<std::string> held;
      store.forEach([&](std::string_view k, const KeyState&) { held.emplace_back(k); });
      ASSERT_EQ(held.size(), static_cast<size_t>(std::min(i + 1, 50)));
      for (const std::string& k : held) ASSERT_FALSE(store.decide(k, 0, 1)->allowed()) << k;
    }
  }
  EXPECT_EQ(store.stats().keys, 50);
}

TEST(MemoryStore, EvictsIdleKeysBeforeKeysThatStillHoldState) {
  // One shard of two keys: "busy" is used up, "idle" is full again by the time "new" comes.
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 1, 1)), {.max_keys = 2, .shards = 1});
  EXPECT_TRUE(store.decide("idle", 0, 1)->allowed());
  EXPECT_TRUE(store.decide("busy", 5000 * kMs, 1)->allowed());
  // "idle" is the least recently used and refilled by now, so it goes, losing nothing.
  EXPECT_TRUE(store.decide("new", 5100 * kMs, 1)->allowed());
  EXPECT_EQ(store.stats().evicted_idle, 1);
  EXPECT_EQ(store.stats().evicted_active, 0);
  EXPECT_FALSE(store.decide("busy", 5200 * kMs, 1)->allowed());  // its state survived
}

TEST(MemoryStore, PrefersAnIdleKeyOverTheColdestBusyOne) {
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 1, 1)), {.max_keys = 2, .shards = 1});
  EXPECT_TRUE(store.decide("busy", 5000 * kMs, 1)->allowed());  // coldest, but not idle
  EXPECT_TRUE(store.decide("spent", 0, 1)->allowed());          // hotter, idle by 5100
  EXPECT_TRUE(store.decide("new", 5100 * kMs, 1)->allowed());
  EXPECT_EQ(store.stats().evicted_idle, 1);
  EXPECT_FALSE(store.decide("busy", 5200 * kMs, 1)->allowed());
}

// A flood of new keys, each used once, fills the store: it pushes out keys like itself,
// not the spent key, which would start over full.
class SpentKeyUnderFlood : public ::testing::TestWithParam<AlgorithmParams> {};

TEST_P(SpentKeyUnderFlood, ASpentKeyOutlastsAFloodOfKeysUsedOnce) {
  MemoryStore store(make(GetParam()), {.max_keys = 256, .shards = 1});
  int admitted = 0;
  while (store.decide("spent", kMs, 1)->allowed()) ASSERT_LT(++admitted, 100);
  for (int i = 0; i < 5'000; ++i) {
    ASSERT_TRUE(store.decide("junk-" + std::to_string(i), 2 * kMs, 1).ok());
  }
  EXPECT_GE(store.stats().evicted_active, 4'000);
  EXPECT_FALSE(store.decide("spent", 3 * kMs, 1)->allowed()) << "still spent";
}

INSTANTIATE_TEST_SUITE_P(All, SpentKeyUnderFlood,
                         ::testing::Values(window(AlgorithmKind::kFixedWindow, 5, 60'000),
                                           window(AlgorithmKind::kSlidingWindowLog, 5, 60'000),
                                           window(AlgorithmKind::kSlidingWindowCounter, 5, 60'000),
                                           bucket(AlgorithmKind::kGcra, 5, 0.01),
                                           bucket(AlgorithmKind::kTokenBucket, 5, 0.01),
                                           bucket(AlgorithmKind::kLeakyBucket, 5, 0.01)));

TEST(MemoryStore, LongKeysAreBoundedButStayDistinct) {
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 1, 1)), {});
  std::string a(10'000, 'a');
  std::string b = a;
  b.back() = 'b';
  EXPECT_TRUE(store.decide(a, 0, 1)->allowed());
  EXPECT_TRUE(store.decide(b, 0, 1)->allowed());
  EXPECT_FALSE(store.decide(a, 0, 1)->allowed());
}

TEST(MemoryStore, RefundOfAnEvictedKeyIsHarmless) {
  MemoryStore store(make(bucket(AlgorithmKind::kGcra, 1, 1)), {.max_keys = 1, .shards = 1});
  EXPECT_TRUE(store.decide("a", 0, 1)->allowed());
  EXPECT_TRUE(store.decide("b", 0, 1)->allowed());  // evicts a
  store.refund("a", 0, 0, 1);
  EXPECT_EQ(store.stats().keys, 1);
}

// Many threads hammer one key at one instant: exactly the limit gets through, never more.
class OneHotKey : public ::testing::TestWithParam<AlgorithmKind> {};

TEST_P(OneHotKey, ManyThreadsNeverAdmitMoreThanTheLimit) {
  constexpr int kLimit = 1000;
  constexpr int kThreads = 8;
  constexpr int kAttemptsPerThread = 1000;
  AlgorithmParams params = isWindowAlgorithm(GetParam()) ? window(GetParam(), kLimit, 60'000)
                                                         : bucket(GetParam(), kLimit, 0.001);
  MemoryStore store(make(params), {.max_keys = 1000, .shards = 16});
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAttemptsPerThread; ++i) {
        if (store.decide("hot", 1000 * kMs, 1)->allowed()) admitted.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(admitted.load(), kLimit);
}

TEST_P(OneHotKey, ThreadsWithClocksThatDisagreeNeverOverAdmit) {
  // Each thread reads "now" a little differently (stale readings up to 7 ms): the total
  // over the run must stay within what the newest reading allows.
  constexpr int kThreads = 4;
  AlgorithmParams params =
      isWindowAlgorithm(GetParam()) ? window(GetParam(), 50, 10'000) : bucket(GetParam(), 50, 1);
  MemoryStore store(make(params), {.max_keys = 100, .shards = 4});
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        int64_t now_ns = (100 + (i * 7 + t * 3) % 8) * kMs;  // 100..107 ms, out of order
        if (store.decide("hot", now_ns, 1)->allowed()) admitted.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(admitted.load(), 50 + 1);  // at most one token earned in 7 ms at 1/s: none
  EXPECT_GE(admitted.load(), 50);
}

INSTANTIATE_TEST_SUITE_P(All, OneHotKey,
                         ::testing::Values(AlgorithmKind::kFixedWindow,
                                           AlgorithmKind::kSlidingWindowLog,
                                           AlgorithmKind::kSlidingWindowCounter,
                                           AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra,
                                           AlgorithmKind::kLeakyBucket),
                         [](const auto& info) { return std::string(algorithmName(info.param)); });

}  // namespace
}  // namespace floodgate::http

namespace floodgate::http {
namespace {

TEST(CompactKey, InlineUpTo23BytesHeapBeyondAndMovesOwnership) {
  for (size_t length : {0, 1, 15, 23, 24, 300}) {
    std::string text(length, 'x');
    if (length > 0) text.front() = 'a';
    CompactKey key;
    key.assign(text);
    EXPECT_EQ(key.view(), text) << length;
    CompactKey moved(std::move(key));
    EXPECT_EQ(moved.view(), text) << length;
    EXPECT_EQ(key.view(), "");  // NOLINT: a moved-from key is empty by contract
    CompactKey assigned;
    assigned.assign("something else entirely, long enough for the heap");
    assigned = std::move(moved);
    EXPECT_EQ(assigned.view(), text) << length;
    assigned.assign("short");
    EXPECT_EQ(assigned.view(), "short");
  }
}

// A fallback share of a bucket's rate is whole thousandths a second, rounded down: rounded to
// the nearest, 0.003 over two instances would run 0.002 each, a third more than the rate.
TEST(LocalShare, ARateShareIsWholeThousandthsRoundedDown) {
  AlgorithmParams params = testing::bucket(AlgorithmKind::kTokenBucket, 10, 1);
  params.rate_per_s = 0.003;
  EXPECT_DOUBLE_EQ(shareOf(params, 2).rate_per_s, 0.001);
  EXPECT_EQ(rateMilliPerS(shareOf(params, 2).rate_per_s), 1);
  params.rate_per_s = 0.006;
  EXPECT_EQ(rateMilliPerS(shareOf(params, 2).rate_per_s), 3);
  params.rate_per_s = 100;
  EXPECT_EQ(rateMilliPerS(shareOf(params, 3).rate_per_s), 33'333);
  params.rate_per_s = 0.001;  // never below the least rate a bucket runs
  EXPECT_EQ(rateMilliPerS(shareOf(params, 5).rate_per_s), 1);
}

}  // namespace
}  // namespace floodgate::http
