// SPDX-License-Identifier: MIT
// Each algorithm against hand-worked arrival sequences on a virtual clock.
#include <gtest/gtest.h>

#include "http/algorithm_harness.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::kMs;
using testing::OneKey;
using testing::window;

// ---- fixed window: limit 3 per 1000 ms ----

TEST(FixedWindow, AdmitsLimitPerWindowAndRetriesAtTheNextWindow) {
  OneKey key(window(AlgorithmKind::kFixedWindow, 3, 1000));
  EXPECT_EQ(key.at(0).remaining, 2);
  EXPECT_EQ(key.at(100).remaining, 1);
  Decision third = key.at(200);
  EXPECT_TRUE(third.allowed());
  EXPECT_EQ(third.remaining, 0);
  EXPECT_EQ(third.reset_ns, 800 * kMs);

  Decision over = key.at(300);
  EXPECT_EQ(over.outcome, Outcome::kRejected);
  EXPECT_EQ(over.retry_after_ns, 700 * kMs);
  EXPECT_EQ(over.limit, 3);
  EXPECT_EQ(key.at(999).retry_after_ns, 1 * kMs);

  Decision next = key.at(1000);  // the window boundary starts empty
  EXPECT_TRUE(next.allowed());
  EXPECT_EQ(next.remaining, 2);
}

TEST(FixedWindow, BoundaryBurstAdmitsTwiceTheLimitAcrossTheEdge) {
  OneKey key(window(AlgorithmKind::kFixedWindow, 3, 1000));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(key.at(999).allowed());
  EXPECT_FALSE(key.at(999).allowed());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(key.at(1000).allowed());
  EXPECT_FALSE(key.at(1000).allowed());
}

TEST(FixedWindow, WeightedCostAndCostAboveLimit) {
  OneKey key(window(AlgorithmKind::kFixedWindow, 3, 1000));
  EXPECT_EQ(key.at(0, 2).remaining, 1);
  Decision over = key.at(10, 2);
  EXPECT_EQ(over.outcome, Outcome::kRejected);
  EXPECT_EQ(over.remaining, 1);
  EXPECT_TRUE(key.at(20, 1).allowed());
  Decision never = key.at(30, 4);
  EXPECT_EQ(never.outcome, Outcome::kCostExceedsBurst);
  EXPECT_EQ(never.retry_after_ns, 0);
}

TEST(FixedWindow, StaleReadingCountsAgainstTheNewestWindow) {
  OneKey key(window(AlgorithmKind::kFixedWindow, 3, 1000));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(key.at(1000).allowed());
  Decision stale = key.at(500);  // another thread's older clock reading, window 0
  EXPECT_EQ(stale.outcome, Outcome::kRejected);
  EXPECT_EQ(stale.retry_after_ns, 1500 * kMs);  // not before window 2 starts
  EXPECT_TRUE(key.at(2000).allowed());
}

TEST(FixedWindow, RefundGivesBackOnlyInTheSameWindow) {
  OneKey key(window(AlgorithmKind::kFixedWindow, 1, 1000));
  EXPECT_TRUE(key.at(0).allowed());
  key.refund(0);
  EXPECT_TRUE(key.at(10).allowed());
  key.refund(5000);  // a refund for another window changes nothing
  EXPECT_FALSE(key.at(20).allowed());
}

// ---- sliding window log: limit 3 per 1000 ms ----

TEST(SlidingWindowLog, ExactWindowAndAgeEqualToWindowIsOutside) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 3, 1000));
  EXPECT_TRUE(key.at(0).allowed());
  EXPECT_TRUE(key.at(100).allowed());
  EXPECT_TRUE(key.at(200).allowed());
  Decision over = key.at(999);
  EXPECT_EQ(over.outcome, Outcome::kRejected);
  EXPECT_EQ(over.retry_after_ns, 1 * kMs);
  EXPECT_TRUE(key.at(1000).allowed());  // the t=0 request is exactly 1000 ms old: outside
  Decision again = key.at(1050);
  EXPECT_FALSE(again.allowed());
  EXPECT_EQ(again.retry_after_ns, 50 * kMs);  // when t=100 ages out
  EXPECT_EQ(again.reset_ns, 950 * kMs);       // when t=1000 ages out
}

TEST(SlidingWindowLog, NoBoundaryBurst) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 3, 1000));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(key.at(999).allowed());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(key.at(1000).allowed());
  EXPECT_TRUE(key.at(1999).allowed());
}

TEST(SlidingWindowLog, RejectionsAreNotLogged) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 2, 1000));
  EXPECT_TRUE(key.at(0).allowed());
  EXPECT_TRUE(key.at(500).allowed());
  for (int t = 600; t < 1000; t += 50) EXPECT_FALSE(key.at(t).allowed());
  EXPECT_TRUE(key.at(1000).allowed());  // only t=0 aged out; the rejections left no trace
  EXPECT_FALSE(key.at(1001).allowed());
  EXPECT_TRUE(key.at(1500).allowed());
}

TEST(SlidingWindowLog, WeightedCostRetryWaitsForEnoughUnits) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 3, 1000));
  EXPECT_EQ(key.at(0, 2).remaining, 1);
  EXPECT_TRUE(key.at(300, 1).allowed());
  Decision over = key.at(400, 2);  // needs 2 units: both t=0 units must age out
  EXPECT_FALSE(over.allowed());
  EXPECT_EQ(over.retry_after_ns, 600 * kMs);
  EXPECT_TRUE(key.at(1000, 2).allowed());
  EXPECT_EQ(key.at(1000, 4).outcome, Outcome::kCostExceedsBurst);
}

TEST(SlidingWindowLog, StaleReadingIsLoggedAtTheNewestTime) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 2, 1000));
  EXPECT_TRUE(key.at(500).allowed());
  EXPECT_TRUE(key.at(400).allowed());    // stale: logged at 500, not 400
  EXPECT_FALSE(key.at(1450).allowed());  // had it been logged at 400 this would pass
  EXPECT_TRUE(key.at(1500).allowed());
}

TEST(SlidingWindowLog, RefundRemovesTheRequest) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 1, 1000));
  EXPECT_TRUE(key.at(0).allowed());
  key.refund(0);
  EXPECT_TRUE(key.at(10).allowed());
  EXPECT_FALSE(key.at(20).allowed());
}

// A request held past the window that then ends in a refund (a 400 after a slow body): its
// units aged out, and the earliest units at or after its arrival are newer requests'.
// Removing those would admit more than the limit within one window.
TEST(SlidingWindowLog, ARefundAfterTheRequestsUnitsAgedOutGivesNothingBack) {
  OneKey key(window(AlgorithmKind::kSlidingWindowLog, 10, 1000));
  EXPECT_TRUE(key.at(0, 5).allowed());
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(key.at(1000 + i).allowed()) << i;
  key.refundLate(0, 1020, 5);
  EXPECT_FALSE(key.at(1020).allowed()) << "the refund freed units of later requests";
  // the same once the log was pruned empty in between
  OneKey emptied(window(AlgorithmKind::kSlidingWindowLog, 10, 1000));
  EXPECT_TRUE(emptied.at(0, 5).allowed());
  EXPECT_FALSE(emptied.at(5000, 20).allowed());  // prunes the log empty, admits nothing
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(emptied.at(5100 + i).allowed()) << i;
  emptied.refundLate(0, 5200, 5);
  EXPECT_FALSE(emptied.at(5200).allowed());
}

// ---- sliding window counter: limit 10 per 1000 ms ----

TEST(SlidingWindowCounter, PreviousWindowWeighsByTheTimeLeft) {
  // The classic rule: admitted while the estimate before the request is below the limit.
  OneKey key(window(AlgorithmKind::kSlidingWindowCounter, 10, 1000));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(key.at(0).allowed());
  Decision start = key.at(1000);  // prev 10 x (1000 - 0) / 1000 = 10
  EXPECT_FALSE(start.allowed());
  EXPECT_EQ(start.retry_after_ns, 1);  // 10 x (W - 1 ns) / W < 10
  Decision at1001 = key.at(1001);      // 9.99 < 10
  EXPECT_TRUE(at1001.allowed());
  EXPECT_EQ(at1001.remaining, 0);  // 10 - 1 - floor(9.99)
  Decision next = key.at(1001);    // 9.99 + 1
  EXPECT_FALSE(next.allowed());
  EXPECT_EQ(next.retry_after_ns, 99 * kMs + 1);  // 10 x (W - e) / W + 1 < 10 past e = 100 ms
  EXPECT_FALSE(key.at(1100).allowed());          // 9 + 1, not below 10
  EXPECT_TRUE(key.atNs(1100 * kMs + 1).allowed());
  Decision half = key.at(1500);  // 5 + 2 = 7
  EXPECT_TRUE(half.allowed());
  EXPECT_EQ(half.remaining, 2);
}

TEST(SlidingWindowCounter, RetryMovesIntoTheNextWindowWhenThisOneIsFull) {
  OneKey key(window(AlgorithmKind::kSlidingWindowCounter, 10, 1000));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(key.at(0).allowed());
  Decision over = key.at(500);
  EXPECT_FALSE(over.allowed());
  EXPECT_EQ(over.retry_after_ns, 500 * kMs + 1);  // 1 ns into the next: 10 x (W - 1 ns) / W
  EXPECT_FALSE(key.at(1000).allowed());
  EXPECT_TRUE(key.atNs(1000 * kMs + 1).allowed());
}

TEST(SlidingWindowCounter, TwoIdleWindowsForgetEverything) {
  OneKey key(window(AlgorithmKind::kSlidingWindowCounter, 2, 1000));
  EXPECT_TRUE(key.at(0, 2).allowed());
  EXPECT_EQ(key.at(100, 3).outcome, Outcome::kCostExceedsBurst);
  EXPECT_TRUE(key.algorithm().idle(key.state(), 2000 * kMs));
  EXPECT_TRUE(key.at(2000, 2).allowed());
}

TEST(SlidingWindowCounter, StaleReadingNeverAdmitsMore) {
  OneKey fresh(window(AlgorithmKind::kSlidingWindowCounter, 4, 1000));
  OneKey stale(window(AlgorithmKind::kSlidingWindowCounter, 4, 1000));
  for (int i = 0; i < 4; ++i) {
    fresh.at(500);
    stale.at(500);
  }
  fresh.at(1500);
  stale.at(1500);
  int fresh_admitted = 0, stale_admitted = 0;
  for (int i = 0; i < 10; ++i) fresh_admitted += fresh.at(1500).allowed();
  for (int i = 0; i < 10; ++i) stale_admitted += stale.at(900).allowed();  // older reading
  EXPECT_LE(stale_admitted, fresh_admitted);
}

// ---- token bucket: capacity 5, 2 per second (one token every 500 ms) ----

TEST(TokenBucket, BurstThenRefill) {
  OneKey key(bucket(AlgorithmKind::kTokenBucket, 5, 2));
  for (int i = 4; i >= 0; --i) EXPECT_EQ(key.at(0).remaining, i);
  Decision empty = key.at(0);
  EXPECT_EQ(empty.outcome, Outcome::kRejected);
  EXPECT_EQ(empty.retry_after_ns, 500 * kMs);
  EXPECT_EQ(empty.reset_ns, 2500 * kMs);
  EXPECT_EQ(key.at(499).retry_after_ns, 1 * kMs);
  EXPECT_TRUE(key.at(500).allowed());
  EXPECT_FALSE(key.at(500).allowed());
  // Long idle: the bucket refills to capacity, never beyond.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(key.at(60'000).allowed());
  EXPECT_FALSE(key.at(60'000).allowed());
}

TEST(TokenBucket, WeightedCost) {
  OneKey key(bucket(AlgorithmKind::kTokenBucket, 5, 2));
  EXPECT_EQ(key.at(0, 3).remaining, 2);
  Decision over = key.at(0, 3);
  EXPECT_FALSE(over.allowed());
  EXPECT_EQ(over.retry_after_ns, 500 * kMs);  // one token short
  EXPECT_EQ(over.remaining, 2);
  EXPECT_TRUE(key.at(500, 3).allowed());
  Decision never = key.at(100'000, 6);
  EXPECT_EQ(never.outcome, Outcome::kCostExceedsBurst);
}

TEST(TokenBucket, FractionalRateIsExact) {
  OneKey key(bucket(AlgorithmKind::kTokenBucket, 1, 3));  // a token every 333.33 ms
  EXPECT_TRUE(key.at(0).allowed());
  Decision d = key.at(0);
  EXPECT_EQ(d.retry_after_ns, 333'333'334);  // rounded up: never earlier than possible
  EXPECT_FALSE(key.atNs(333'333'333).allowed());
  EXPECT_TRUE(key.atNs(333'333'334).allowed());
}

TEST(TokenBucket, TimeGoingBackwardsRefillsNothing) {
  OneKey key(bucket(AlgorithmKind::kTokenBucket, 5, 2));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(key.at(1000).allowed());
  Decision stale = key.at(0);
  EXPECT_FALSE(stale.allowed());
  EXPECT_EQ(stale.retry_after_ns, 1500 * kMs);  // counted from 1000, the newest reading
  EXPECT_FALSE(key.at(1499).allowed());
  EXPECT_TRUE(key.at(1500).allowed());
}

// ---- GCRA: the same parameters make the same decisions as the token bucket ----

TEST(Gcra, BurstRefillAndWeightedCost) {
  OneKey key(bucket(AlgorithmKind::kGcra, 5, 2));
  for (int i = 4; i >= 0; --i) EXPECT_EQ(key.at(0).remaining, i);
  Decision empty = key.at(0);
  EXPECT_FALSE(empty.allowed());
  EXPECT_EQ(empty.retry_after_ns, 500 * kMs);
  EXPECT_EQ(empty.reset_ns, 2500 * kMs);
  EXPECT_TRUE(key.at(500).allowed());
  EXPECT_FALSE(key.at(500, 1).allowed());
  Decision heavy = key.at(1000, 3);  // one token back at 1000; two more by 2000
  EXPECT_FALSE(heavy.allowed());
  EXPECT_EQ(heavy.retry_after_ns, 1000 * kMs);
  EXPECT_TRUE(key.at(2000, 3).allowed());
  EXPECT_EQ(key.at(9000, 6).outcome, Outcome::kCostExceedsBurst);
}

TEST(Gcra, SameDecisionsAsTokenBucket) {
  OneKey gcra(bucket(AlgorithmKind::kGcra, 7, 4));
  OneKey tb(bucket(AlgorithmKind::kTokenBucket, 7, 4));
  uint64_t seed = 12345;
  int64_t t_ms = 0;
  for (int i = 0; i < 5000; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    t_ms += static_cast<int64_t>((seed >> 33) % 300);
    int64_t cost = 1 + static_cast<int64_t>((seed >> 20) % 3);
    Decision a = gcra.at(t_ms, cost);
    Decision b = tb.at(t_ms, cost);
    ASSERT_EQ(a.outcome, b.outcome) << "request " << i << " at " << t_ms;
    ASSERT_EQ(a.remaining, b.remaining) << "request " << i;
    ASSERT_EQ(a.retry_after_ns, b.retry_after_ns) << "request " << i;
  }
}

TEST(Gcra, TimeGoingBackwardsNeverAdmitsMore) {
  OneKey key(bucket(AlgorithmKind::kGcra, 2, 1));
  EXPECT_TRUE(key.at(5000).allowed());
  EXPECT_TRUE(key.at(5000).allowed());
  Decision stale = key.at(4000);
  EXPECT_FALSE(stale.allowed());
  EXPECT_EQ(stale.retry_after_ns, 2000 * kMs);  // at 6000, as for a fresh reading
  EXPECT_FALSE(key.at(5999).allowed());
  EXPECT_TRUE(key.at(6000).allowed());
}

// ---- leaky bucket (queue): depth 3, drains 10 per second (one every 100 ms) ----

TEST(LeakyBucket, BurstBecomesDelayAndAFullQueueRejects) {
  OneKey key(bucket(AlgorithmKind::kLeakyBucket, 3, 10));
  EXPECT_EQ(key.at(0).delay_ns, 0);
  EXPECT_EQ(key.at(0).delay_ns, 100 * kMs);
  Decision third = key.at(0);
  EXPECT_TRUE(third.allowed());
  EXPECT_EQ(third.delay_ns, 200 * kMs);
  EXPECT_EQ(third.remaining, 0);
  EXPECT_EQ(third.reset_ns, 300 * kMs);

  Decision full = key.at(0);
  EXPECT_EQ(full.outcome, Outcome::kRejected);
  EXPECT_EQ(full.retry_after_ns, 100 * kMs);
  EXPECT_EQ(full.delay_ns, 0);

  Decision later = key.at(100);  // one slot drained; upstream at 300 = 100 + 200
  EXPECT_TRUE(later.allowed());
  EXPECT_EQ(later.delay_ns, 200 * kMs);
  EXPECT_EQ(key.at(1000).delay_ns, 0);  // drained by then
}

TEST(LeakyBucket, WeightedCostTakesLongerToDrain) {
  OneKey key(bucket(AlgorithmKind::kLeakyBucket, 3, 10));
  EXPECT_EQ(key.at(0, 2).delay_ns, 0);
  Decision over = key.at(0, 2);  // would leave at 200 and drain at 400 > depth 300
  EXPECT_FALSE(over.allowed());
  EXPECT_EQ(over.retry_after_ns, 100 * kMs);
  Decision at100 = key.at(100, 2);
  EXPECT_TRUE(at100.allowed());
  EXPECT_EQ(at100.delay_ns, 100 * kMs);
  EXPECT_EQ(key.at(100, 4).outcome, Outcome::kCostExceedsBurst);
}

TEST(LeakyBucket, StaleReadingSeesAFullerQueueNeverAnEmptierOne) {
  OneKey key(bucket(AlgorithmKind::kLeakyBucket, 2, 10));
  EXPECT_EQ(key.at(1000).delay_ns, 0);
  Decision stale = key.at(900);  // from 900 the backlog looks 100 ms longer
  EXPECT_FALSE(stale.allowed());
  EXPECT_EQ(stale.retry_after_ns, 100 * kMs);
  Decision fresh = key.at(1000);  // leaves when the first has drained
  EXPECT_TRUE(fresh.allowed());
  EXPECT_EQ(fresh.delay_ns, 100 * kMs);
  EXPECT_FALSE(key.at(1000).allowed());
  EXPECT_FALSE(key.at(900).allowed());
  EXPECT_TRUE(key.at(1100).allowed());
}

// ---- every bucket: capacity 100, 10 per second ----

class EveryBucket : public ::testing::TestWithParam<AlgorithmKind> {
 protected:
  AlgorithmParams params() const { return bucket(GetParam(), 100, 10); }
};

// Two requests of cost 50 admitted at 0 trickle their bodies; at 10 s the bucket is full
// again and 100 more are spent; then both end in a 400 that keeps one unit each. The bucket
// refilled their charge long ago: 49 given back twice would let 98 more through at once,
// 198 units in an instant against a capacity of 100.
TEST_P(EveryBucket, ARefundAfterTheBucketRefilledGivesNothingBack) {
  OneKey key(params());
  EXPECT_TRUE(key.at(0, 50).allowed());
  EXPECT_TRUE(key.at(0, 50).allowed());
  EXPECT_TRUE(key.at(10'000, 100).allowed());
  key.refundLate(0, 10'000, 49);
  key.refundLate(0, 10'000, 49);
  EXPECT_FALSE(key.at(10'000, 1).allowed()) << "the late refunds gave back refilled units";
}

// By 1 s, 10 of a charge of 50 at 0 are back: of 49 given back then, 39 still count. The
// bucket then holds 99, 1 short of where it would be had the request cost only the unit kept.
TEST_P(EveryBucket, ARefundGivesBackWhatHasNotRefilledSince) {
  OneKey key(params());
  EXPECT_TRUE(key.at(0, 50).allowed());
  key.refundLate(0, 1000, 49);
  EXPECT_TRUE(key.at(1000, 99).allowed());
  EXPECT_FALSE(key.at(1000, 1).allowed());
  // a refund read on a clock behind the admission gives back the charge, no more
  OneKey behind(params());
  EXPECT_TRUE(behind.at(1000, 100).allowed());
  behind.refundLate(1000, 900, 100);
  EXPECT_TRUE(behind.at(1000, 100).allowed());
  EXPECT_FALSE(behind.at(1000, 1).allowed());
}

INSTANTIATE_TEST_SUITE_P(All, EveryBucket,
                         ::testing::Values(AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra,
                                           AlgorithmKind::kLeakyBucket),
                         [](const auto& info) { return std::string(algorithmName(info.param)); });

// ---- all algorithms ----

class EveryAlgorithm : public ::testing::TestWithParam<AlgorithmKind> {
 protected:
  AlgorithmParams params() const {
    return isWindowAlgorithm(GetParam()) ? window(GetParam(), 4, 1000) : bucket(GetParam(), 4, 4);
  }
};

TEST_P(EveryAlgorithm, AbsentKeyIsAFullBucket) {
  OneKey key(params());
  EXPECT_TRUE(key.algorithm().idle(key.state(), 0));
  Decision d = key.at(0, 4);
  EXPECT_TRUE(d.allowed());
  EXPECT_EQ(d.limit, 4);
  EXPECT_EQ(d.remaining, 0);
}

TEST_P(EveryAlgorithm, RefundMakesTheKeyAsIfTheRequestNeverCame) {
  OneKey key(params());
  EXPECT_TRUE(key.at(0, 3).allowed());
  EXPECT_TRUE(key.at(0, 1).allowed());
  key.refund(0, 1);
  EXPECT_TRUE(key.at(0, 1).allowed());
  EXPECT_FALSE(key.at(0, 1).allowed());
}

TEST_P(EveryAlgorithm, RetryAfterIsNeverEarlyAndIsEnough) {
  OneKey key(params());
  EXPECT_TRUE(key.at(0, 4).allowed());
  Decision over = key.at(10, 2);
  ASSERT_EQ(over.outcome, Outcome::kRejected);
  int64_t retry_ns = 10 * kMs + over.retry_after_ns;
  // One nanosecond earlier fails (copy of the state: deciding records admissions).
  KeyState copy = key.state();
  EXPECT_FALSE(key.algorithm().decide(copy, retry_ns - 1, 2).allowed());
  EXPECT_TRUE(key.atNs(retry_ns, 2).allowed());
}

TEST_P(EveryAlgorithm, StateSizeIsReportedAndFitsTheSlot) {
  OneKey key(params());
  size_t bytes = key.algorithm().stateBytes();
  EXPECT_GE(bytes, sizeof(int64_t));
  if (GetParam() == AlgorithmKind::kSlidingWindowLog) {
    EXPECT_EQ(bytes, 2 * sizeof(int64_t) + sizeof(std::vector<int64_t>) + 4 * sizeof(int64_t));
  } else {
    EXPECT_LE(bytes, sizeof(KeyState::word));  // fits the words kept inline in the store
  }
  EXPECT_EQ(sizeof(KeyState), 32u);
}

INSTANTIATE_TEST_SUITE_P(All, EveryAlgorithm,
                         ::testing::Values(AlgorithmKind::kFixedWindow,
                                           AlgorithmKind::kSlidingWindowLog,
                                           AlgorithmKind::kSlidingWindowCounter,
                                           AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra,
                                           AlgorithmKind::kLeakyBucket),
                         [](const auto& info) { return std::string(algorithmName(info.param)); });

TEST(MakeAlgorithm, RejectsParametersOutOfRange) {
  EXPECT_FALSE(makeAlgorithm(window(AlgorithmKind::kFixedWindow, 0, 1000)).ok());
  EXPECT_FALSE(makeAlgorithm(window(AlgorithmKind::kSlidingWindowLog, 5, 0)).ok());
  EXPECT_FALSE(makeAlgorithm(bucket(AlgorithmKind::kGcra, 5, 0)).ok());
  auto error = makeAlgorithm(bucket(AlgorithmKind::kTokenBucket, 0, 1));
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message.find("capacity"), std::string::npos);
}

}  // namespace
}  // namespace floodgate::http
