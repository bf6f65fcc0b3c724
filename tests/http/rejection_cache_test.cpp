// SPDX-License-Identifier: MIT
// The rejection cache: what it answers and until when, what it refuses to answer, its bound.
#include "floodgate/stores/rejection_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate::http {
namespace {

constexpr int64_t kMs = 1'000'000;

Decision rejected(int64_t retry_ms, int64_t limit = 10, int64_t remaining = 0) {
  Decision d;
  d.outcome = Outcome::kRejected;
  d.limit = limit;
  d.remaining = remaining;
  d.retry_after_ns = retry_ms * kMs;
  d.reset_ns = 2 * retry_ms * kMs;
  return d;
}

TEST(RejectionCache, AnswersUntilTheRetryWithRetryAfterCountingDown) {
  RejectionCache cache;
  cache.remember("k", 1000 * kMs, 1, rejected(300, 10, 0));
  std::optional<Decision> at100 = cache.lookup("k", 1100 * kMs, 1);
  ASSERT_TRUE(at100);
  EXPECT_EQ(at100->outcome, Outcome::kRejected);
  EXPECT_EQ(at100->retry_after_ns, 200 * kMs);
  EXPECT_EQ(at100->reset_ns, 500 * kMs);
  EXPECT_EQ(at100->remaining, 0);
  EXPECT_EQ(at100->limit, 10);
  ASSERT_TRUE(cache.lookup("k", 1299 * kMs, 1));
  EXPECT_EQ(cache.lookup("k", 1299 * kMs, 1)->retry_after_ns, 1 * kMs);
  EXPECT_FALSE(cache.lookup("k", 1300 * kMs, 1)) << "the retry is due: the store decides";
  EXPECT_FALSE(cache.lookup("k", 1100 * kMs, 1)) << "and the entry is gone";
  EXPECT_EQ(cache.stats().answered, 3);
  EXPECT_EQ(cache.stats().keys, 0);
}

TEST(RejectionCache, AnEarlierReadingIsToldNoMoreThanTheStoreSaid) {
  RejectionCache cache;
  cache.remember("k", 1000 * kMs, 1, rejected(300));
  ASSERT_TRUE(cache.lookup("k", 990 * kMs, 1));
  EXPECT_EQ(cache.lookup("k", 990 * kMs, 1)->retry_after_ns, 300 * kMs);
}

TEST(RejectionCache, HoldsNoLongerThanMaxHold) {
  RejectionCache cache({.max_keys = 10, .max_hold_ms = 50});
  cache.remember("k", 0, 1, rejected(60'000));
  ASSERT_TRUE(cache.lookup("k", 49 * kMs, 1));
  EXPECT_EQ(cache.lookup("k", 49 * kMs, 1)->retry_after_ns, (60'000 - 49) * kMs);
  EXPECT_FALSE(cache.lookup("k", 50 * kMs, 1));
}

TEST(RejectionCache, ASmallerCostGoesToTheStoreALargerOnceThenItsAnswerIsHeld) {
  RejectionCache cache;
  cache.remember("k", 0, 3, rejected(100, 10, 2));
  EXPECT_FALSE(cache.lookup("k", 1, 2)) << "a smaller cost may fit";
  ASSERT_TRUE(cache.lookup("k", 1, 3));
  EXPECT_EQ(cache.lookup("k", 1, 3)->remaining, 2);
  EXPECT_FALSE(cache.lookup("k", 1, 4)) << "the store tells its later retry, once";
  cache.remember("k", 1 * kMs, 4, rejected(300, 10, 2));
  ASSERT_TRUE(cache.lookup("k", 50 * kMs, 4));
  EXPECT_EQ(cache.lookup("k", 50 * kMs, 4)->retry_after_ns, 251 * kMs);
  EXPECT_EQ(cache.lookup("k", 50 * kMs, 3)->retry_after_ns, 50 * kMs) << "its own answer still";
  EXPECT_FALSE(cache.lookup("k", 50 * kMs, 11)) << "above the limit: the store says it never fits";
  EXPECT_FALSE(cache.lookup("other", 1, 3));
  // once cost 3's answer runs out, cost 4's still holds
  EXPECT_FALSE(cache.lookup("k", 100 * kMs, 3));
  EXPECT_TRUE(cache.lookup("k", 100 * kMs, 4));
}

// A client whose key is rejected alternates routes of cost 1 and 20: two round trips, one per
// cost, then every request is answered here until the answers run out, where one answer per
// key would be replaced at every request and send each to the store.
TEST(RejectionCache, AlternatingCostsCostOneRoundTripEach) {
  RejectionCache cache;
  int64_t asked = 0;
  int64_t now_ns = 0;
  for (int i = 0; i < 1000; ++i, now_ns += kMs / 2) {
    const int64_t cost = i % 2 == 0 ? 1 : 20;
    if (cache.lookup("k", now_ns, cost)) continue;
    ++asked;
    cache.remember("k", now_ns, cost, rejected(cost == 1 ? 700 : 900, 100, 0));
  }
  // 500 ms in all: neither answer ran out
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(cache.stats().answered, 998);
}

// With kCostsPerKey costs held, a larger cost still is refused here, told the retry of the
// largest smaller cost held (maybe early, never an admission), not sent to the store.
TEST(RejectionCache, BeyondTheCostsHeldALargerCostIsToldTheLargestSmallerOnesRetry) {
  RejectionCache cache;
  for (int64_t cost = 1; cost <= static_cast<int64_t>(RejectionCache::kCostsPerKey); ++cost) {
    EXPECT_FALSE(cache.lookup("k", 0, cost + 10)) << cost;
    cache.remember("k", 0, cost + 10, rejected(100 * cost, 50, 0));
  }
  const int64_t largest = 10 + static_cast<int64_t>(RejectionCache::kCostsPerKey);
  std::optional<Decision> beyond = cache.lookup("k", 0, 40);
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond->retry_after_ns, (largest - 10) * 100 * kMs);
  EXPECT_FALSE(cache.lookup("k", 0, 5)) << "a cost below every one held may fit";
  // a fifth cost's answer takes the place of the one that runs out first
  cache.remember("k", 0, 40, rejected(1000, 50, 0));
  EXPECT_EQ(cache.lookup("k", 0, 40)->retry_after_ns, 1000 * kMs);
  EXPECT_FALSE(cache.lookup("k", 0, 11)) << "cost 11's answer, the first to run out, made room";
  EXPECT_TRUE(cache.lookup("k", 0, 12));
}

TEST(RejectionCache, KeepsOnlyRejectionsWithARetry) {
  RejectionCache cache;
  Decision allowed;
  allowed.limit = 10;
  cache.remember("a", 0, 1, allowed);
  Decision too_big = rejected(0);
  too_big.outcome = Outcome::kCostExceedsBurst;
  cache.remember("b", 0, 1, too_big);
  cache.remember("c", 0, 1, rejected(0));
  EXPECT_EQ(cache.stats().keys, 0);
  RejectionCache off({.max_keys = 10, .max_hold_ms = 0});
  off.remember("d", 0, 1, rejected(100));
  EXPECT_EQ(off.stats().keys, 0);
}

TEST(RejectionCache, AnAdmissionOfAnotherCostDropsTheKey) {
  RejectionCache cache;
  cache.remember("k", 0, 3, rejected(100, 10, 2));
  Decision allowed;
  allowed.limit = 10;
  allowed.remaining = 0;
  cache.remember("k", 1, 2, allowed);  // the last two units: cost 3 now waits longer
  EXPECT_FALSE(cache.lookup("k", 2, 3));
}

TEST(RejectionCache, ForgetDropsTheKey) {
  RejectionCache cache;
  cache.remember("k", 0, 1, rejected(100));
  cache.forget("k");
  cache.forget("never-seen");
  EXPECT_FALSE(cache.lookup("k", 1, 1));
}

TEST(RejectionCache, ManyKeysKeepItBoundedAndTheOldestGoFirst) {
  RejectionCache cache({.max_keys = 100, .max_hold_ms = 1000});
  cache.remember("early", 0, 1, rejected(500));
  cache.remember("refreshed", 0, 1, rejected(500));
  for (int i = 0; i < 98; ++i) cache.remember("k" + std::to_string(i), 1, 1, rejected(500));
  cache.remember("refreshed", 2, 1, rejected(500));  // to the back of the line
  for (int i = 0; i < 10'000; ++i) {
    cache.remember("flood-" + std::to_string(i), 3, 1, rejected(500));
    if (i == 0) {
      EXPECT_FALSE(cache.lookup("early", 4, 1)) << "the oldest went first";
      EXPECT_TRUE(cache.lookup("refreshed", 4, 1));
    }
  }
  RejectionCacheStats stats = cache.stats();
  EXPECT_EQ(stats.keys, 100);
  EXPECT_EQ(stats.evicted, 10'000);
  EXPECT_TRUE(cache.lookup("flood-9999", 4, 1));
  EXPECT_FALSE(cache.lookup("flood-9899", 4, 1));
}

TEST(RejectionCache, AHugeKeyIsHeldBoundedAndStillFound) {
  RejectionCache cache;
  const std::string huge(1 << 20, 'k');  // a megabyte of API key header
  std::string other = huge;
  other.back() = 'x';
  cache.remember(huge, 0, 1, rejected(500));
  EXPECT_TRUE(cache.lookup(huge, 1, 1));
  EXPECT_FALSE(cache.lookup(other, 1, 1)) << "a key sharing the prefix is another key";
  cache.forget(huge);
  EXPECT_FALSE(cache.lookup(huge, 1, 1));
}

}  // namespace
}  // namespace floodgate::http
