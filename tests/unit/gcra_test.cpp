// SPDX-License-Identifier: MIT
// Unit tests of the GCRA math in bpf/include/fg_gcra.h, run natively with a virtual clock.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "controller/rule_compiler.h"
#include "fg_gcra.h"

namespace floodgate {
namespace {

constexpr uint64_t kNsPerMs = 1000000ULL;
constexpr uint64_t kNsPerSecond = 1000000000ULL;
constexpr uint64_t kNsPerDay = 86400ULL * kNsPerSecond;
using Times = std::initializer_list<uint64_t>;

// Bucket time units for a time in ns, wrapping in 64 bits the way the program's clock does.
constexpr uint64_t units(uint64_t ns) { return ns << FG_TIME_SHIFT; }

// One bucket time word and its limit, charged the way the XDP program charges it.
struct Bucket {
  uint64_t interval;
  uint64_t capacity;
  uint64_t tat = 0;

  static Bucket pps(uint64_t rate, uint64_t burst) {
    uint64_t interval = packetInterval(rate);
    return {interval, interval * burst};
  }

  bool admit(uint64_t now, uint64_t cost = 1) {
    __u64 next = 0;
    if (!fg_gcra_admit(tat, now, interval * cost, capacity, &next)) return false;
    tat = next;
    return true;
  }

  // Offers `count` packets at `now`; returns how many were admitted.
  uint64_t flood(uint64_t now, uint64_t count) {
    uint64_t admitted = 0;
    for (uint64_t i = 0; i < count; ++i) admitted += admit(now) ? 1 : 0;
    return admitted;
  }

  uint64_t remaining(uint64_t now) const { return fg_gcra_remaining(tat, now, interval, capacity); }
};

// An arbitrary boot time, far from 0 so that "tat = 0" is a long-idle bucket.
constexpr uint64_t kStartNs = 5000 * kNsPerSecond;

TEST(Gcra, FullBucketAdmitsExactlyTheBurstThenRefuses) {
  Bucket bucket = Bucket::pps(1000, 100);
  ASSERT_EQ(bucket.interval, units(kNsPerMs));  // 1 ms per packet, exact
  const uint64_t now = units(kStartNs);
  EXPECT_EQ(bucket.remaining(now), 100u);
  EXPECT_EQ(bucket.flood(now, 100), 100u);
  EXPECT_EQ(bucket.remaining(now), 0u);
  const uint64_t drained = bucket.tat;
  EXPECT_EQ(drained, now + units(100 * kNsPerMs));
  EXPECT_EQ(bucket.flood(now, 1000), 0u);
  EXPECT_EQ(bucket.tat, drained) << "a refusal must leave the bucket time alone";
}

TEST(Gcra, RefillsOnePacketPerInterval) {
  Bucket bucket = Bucket::pps(1000, 100);
  const uint64_t t0 = kStartNs;
  ASSERT_EQ(bucket.flood(units(t0), 100), 100u);

  EXPECT_FALSE(bucket.admit(units(t0 + kNsPerMs - 1)));
  EXPECT_EQ(bucket.remaining(units(t0 + kNsPerMs - 1)), 0u);
  EXPECT_EQ(bucket.remaining(units(t0 + kNsPerMs)), 1u);
  EXPECT_TRUE(bucket.admit(units(t0 + kNsPerMs)));
  EXPECT_FALSE(bucket.admit(units(t0 + kNsPerMs)));

  // 10 ms later ten more, no more.
  EXPECT_EQ(bucket.flood(units(t0 + 11 * kNsPerMs), 50), 10u);
  // After a second of silence the bucket is full again: the burst, not a second of packets.
  EXPECT_EQ(bucket.remaining(units(t0 + 2 * kNsPerSecond)), 100u);
  EXPECT_EQ(bucket.flood(units(t0 + 2 * kNsPerSecond), 1000), 100u);
}

TEST(Gcra, RefillWithARoundedUpInterval) {
  // 3 pps: 1/3 s is 333333333.3 ns; the interval is rounded up so 3 pps is never exceeded.
  Bucket bucket = Bucket::pps(3, 1);
  ASSERT_EQ(bucket.interval, 21845333333334u);  // ceil(10^9 * 2^16 / 3)
  const uint64_t t0 = kStartNs;
  ASSERT_TRUE(bucket.admit(units(t0)));
  EXPECT_FALSE(bucket.admit(units(t0 + 333333333)));  // 21845333311488 units: short of one
  EXPECT_TRUE(bucket.admit(units(t0 + 333333334)));   // 21845333377024 units: enough
  EXPECT_FALSE(bucket.admit(units(t0 + 333333334)));
}

TEST(Gcra, WeightedCostChargesBytesAtTheByteInterval) {
  // 1 Mbit/s is 125000 bytes/s: 8 us per byte.
  const uint64_t byte_interval = byteInterval(1000000);
  ASSERT_EQ(byte_interval, units(8000));
  Bucket bucket{byte_interval, byte_interval * 3036};  // two full-size frames of burst
  const uint64_t t0 = units(kStartNs);
  EXPECT_TRUE(bucket.admit(t0, 1000));
  EXPECT_TRUE(bucket.admit(t0, 1000));
  EXPECT_TRUE(bucket.admit(t0, 1000));
  EXPECT_FALSE(bucket.admit(t0, 1000));
  EXPECT_TRUE(bucket.admit(t0, 36));  // exactly fills the 3036 bytes
  EXPECT_FALSE(bucket.admit(t0, 1));
  EXPECT_EQ(bucket.remaining(t0), 0u);

  // 1000 bytes take 8 ms to refill.
  EXPECT_FALSE(bucket.admit(t0 + units(8 * kNsPerMs - 1), 1000));
  EXPECT_TRUE(bucket.admit(t0 + units(8 * kNsPerMs), 1000));
  EXPECT_FALSE(bucket.admit(t0 + units(8 * kNsPerMs), 1));
}

TEST(Gcra, CostAboveTheCapacityNeverAdmits) {
  Bucket bucket{units(8000), units(8000) * 1518};
  for (uint64_t idle_ns : Times{0, kNsPerSecond, 3600 * kNsPerSecond, kNsPerDay}) {
    const uint64_t now = units(kStartNs + idle_ns);
    EXPECT_FALSE(bucket.admit(now, 1519)) << idle_ns;
    __u64 next = 0;
    EXPECT_EQ(fg_gcra_admit(bucket.tat, now, UINT64_MAX, bucket.capacity, &next), 0);
    EXPECT_EQ(next, 0u);
  }
  EXPECT_TRUE(bucket.admit(units(kStartNs + 2 * kNsPerDay), 1518));  // exactly the capacity
}

TEST(Gcra, ReadingsLateByLessThanTheStaleLimitAreRefused) {
  // Another CPU drained the bucket at t; this CPU's clock reading is older than t.
  Bucket bucket = Bucket::pps(1000, 5);
  const uint64_t t = kStartNs;
  ASSERT_EQ(bucket.flood(units(t), 5), 5u);
  EXPECT_FALSE(bucket.admit(units(t - 1)));
  EXPECT_FALSE(bucket.admit(units(t - FG_STALE_MAX_NS + 1)));
  EXPECT_FALSE(bucket.admit(units(t - FG_STALE_MAX_NS)));
  EXPECT_EQ(fg_gcra_ahead(bucket.tat, units(t - FG_STALE_MAX_NS), bucket.capacity),
            bucket.capacity + FG_STALE_MAX_UNITS);
  EXPECT_EQ(bucket.remaining(units(t - FG_STALE_MAX_NS)), 0u);
}

// A small deterministic generator, so a failure is reproducible from the seed.
struct Lcg {
  uint64_t state;
  uint64_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  }
  uint64_t below(uint64_t bound) { return next() % bound; }
};

// Readings that run backwards (late by up to FG_STALE_MAX_NS - 1 behind the newest one seen)
// never admit more than the same readings clamped to a monotonic clock.
TEST(Gcra, TimeGoingBackwardsNeverOverAdmits) {
  for (uint64_t seed : {1ULL, 2ULL, 3ULL, 42ULL, 1234567ULL}) {
    Lcg rng{seed};
    Bucket late = Bucket::pps(1000, 5);
    Bucket monotonic = late;
    uint64_t true_ns = kStartNs, newest_ns = 0;
    uint64_t admitted_late = 0, admitted_monotonic = 0, backwards = 0;
    for (int i = 0; i < 200000; ++i) {
      true_ns += rng.below(2 * kNsPerMs);
      uint64_t reading_ns = true_ns;
      switch (rng.below(4)) {
        case 0:
          reading_ns -= rng.below(FG_STALE_MAX_NS);
          break;
        case 1:
          reading_ns -= rng.below(5 * kNsPerMs);
          break;
        default:
          break;
      }
      if (reading_ns < newest_ns) ++backwards;
      newest_ns = std::max(newest_ns, reading_ns);
      admitted_late += late.admit(units(reading_ns)) ? 1 : 0;
      admitted_monotonic += monotonic.admit(units(newest_ns)) ? 1 : 0;
      ASSERT_LE(admitted_late, admitted_monotonic) << "seed " << seed << " packet " << i;
    }
    EXPECT_GT(backwards, 50000u) << "the clock should have run backwards often";
    EXPECT_GT(admitted_late, 0u);
  }
}

// Idle buckets are full, however long they were idle: past 2^63 units (2^47 ns, ~1.63 days)
// the bucket time looks ahead of now, and is taken for an old time that wrapped around.
TEST(Gcra, LongIdleBucketsAreFull) {
  const uint64_t wrap_ns = 1ULL << (64 - FG_TIME_SHIFT);  // the unit clock wraps: ~3.26 days
  Bucket template_bucket = Bucket::pps(1000, 100);
  const uint64_t guard_ns = (template_bucket.capacity >> FG_TIME_SHIFT) + FG_STALE_MAX_NS;
  for (uint64_t idle_ns :
       Times{kNsPerSecond, 3600 * kNsPerSecond, kNsPerDay, (1ULL << 47) - 1, 1ULL << 47,
             (1ULL << 47) + 1, 2 * kNsPerDay, 3 * kNsPerDay, wrap_ns - guard_ns - 1}) {
    Bucket bucket = template_bucket;
    const uint64_t t0 = kStartNs;
    ASSERT_EQ(bucket.flood(units(t0), 100), 100u);  // empty: tat = t0 + 100 ms
    const uint64_t now = units(t0 + 100 * kNsPerMs + idle_ns);
    EXPECT_EQ(fg_gcra_ahead(bucket.tat, now, bucket.capacity), 0u) << idle_ns;
    EXPECT_EQ(bucket.remaining(now), 100u) << idle_ns;
    EXPECT_EQ(bucket.flood(now, 1000), 100u) << idle_ns;
  }
}

// A rule's bucket is read up to the largest capacity: a debt run up under a larger burst
// stands after the burst is lowered (and is clamped to the new capacity), where the caps'
// narrow reading would take it for a wrapped time and refill the bucket.
TEST(Gcra, ARulesBucketKeepsADebtLeftByALargerBurst) {
  Bucket big = Bucket::pps(1, 100);
  const uint64_t now = units(kStartNs);
  ASSERT_EQ(big.flood(now, 100), 100u);  // 100 s ahead
  const Bucket small = Bucket::pps(1, 3);
  EXPECT_EQ(fg_gcra_ahead(big.tat, now, small.capacity), 0u) << "the narrow reading";
  EXPECT_EQ(fg_bucket_ahead(big.tat, now, small.capacity), big.tat - now);
  __u64 next = 0;
  EXPECT_EQ(fg_bucket_admit(big.tat, now, small.interval, small.capacity, &next), 0);
  EXPECT_EQ(fg_gcra_clamp(big.tat, now, small.capacity, 0, &next), 1);
  EXPECT_EQ(next, now + small.capacity);
  // a debt of the largest capacity any limit may have, read a second late, still stands
  const uint64_t largest = FG_MAX_CAPACITY_UNITS + FG_STALE_MAX_UNITS;
  EXPECT_EQ(fg_bucket_ahead(now + largest, now, 0), largest);
}

// The price of that reading: only a bucket idle for the last hour or so of a wrap period
// reads as a debt (which a charge clamps to empty).
TEST(Gcra, ARulesBucketIdleForAlmostAWrapPeriodIsFull) {
  const uint64_t wrap_ns = 1ULL << (64 - FG_TIME_SHIFT);
  Bucket bucket = Bucket::pps(1000, 100);
  const uint64_t t0 = units(kStartNs);
  ASSERT_EQ(bucket.flood(t0, 100), 100u);
  const uint64_t guard_ns =
      (bucket.capacity >> FG_TIME_SHIFT) + FG_MAX_CAPACITY_NS + FG_STALE_MAX_NS;
  for (uint64_t idle_ns : Times{kNsPerSecond, kNsPerDay, 3 * kNsPerDay, wrap_ns - guard_ns - 1}) {
    const uint64_t now = bucket.tat + units(idle_ns);
    EXPECT_EQ(fg_bucket_ahead(bucket.tat, now, bucket.capacity), 0u) << idle_ns;
    __u64 next = 0;
    EXPECT_EQ(fg_bucket_admit(bucket.tat, now, bucket.capacity, bucket.capacity, &next), 1)
        << idle_ns << ": the whole burst at once";
  }
  const uint64_t late = bucket.tat + units(wrap_ns - kNsPerSecond);
  EXPECT_NE(fg_bucket_ahead(bucket.tat, late, bucket.capacity), 0u);
}

TEST(Gcra, NowFarPastTheBucketTimeByMoreThanHalfTheUnitClockIsFull) {
  Bucket bucket = Bucket::pps(1000, 100);
  const uint64_t t0 = units(kStartNs);
  ASSERT_EQ(bucket.flood(t0, 100), 100u);
  const uint64_t now = bucket.tat + (1ULL << 63) + 1;  // tat - now reads as 2^63 - 1 ahead
  EXPECT_GT(static_cast<int64_t>(bucket.tat - now), 0);
  EXPECT_EQ(fg_gcra_ahead(bucket.tat, now, bucket.capacity), 0u);
  EXPECT_EQ(bucket.flood(now, 1000), 100u);
}

// Within capacity + FG_STALE_MAX_NS of a whole wrap period an idle bucket cannot be told from
// a busy one; it may be refused then, but it never admits more than the burst.
TEST(Gcra, IdleForAWholeWrapPeriodNeverOverAdmits) {
  const uint64_t wrap_ns = 1ULL << (64 - FG_TIME_SHIFT);
  for (uint64_t offset_ns : Times{0, 1, 50 * kNsPerMs, 100 * kNsPerMs, FG_STALE_MAX_NS}) {
    Bucket bucket = Bucket::pps(1000, 100);
    ASSERT_EQ(bucket.flood(units(kStartNs), 100), 100u);
    const uint64_t now = units(kStartNs + wrap_ns + offset_ns);
    EXPECT_LE(bucket.flood(now, 1000), 100u) << offset_ns;
  }
}

TEST(Gcra, UnitClockWrapIsSeamless) {
  // The unit clock wraps 2^48 ns after boot; buckets work across it by modular arithmetic.
  const uint64_t wrap_ns = 1ULL << (64 - FG_TIME_SHIFT);
  Bucket bucket = Bucket::pps(1000, 100);
  const uint64_t t0 = wrap_ns - 30 * kNsPerMs;
  // A bucket idle since an hour before. (A never-used bucket time of 0 would read as 30 ms
  // ahead here: within capacity + FG_STALE_MAX_NS before the wrap a fresh bucket is not full.)
  bucket.tat = units(t0 - 3600 * kNsPerSecond);
  ASSERT_EQ(bucket.flood(units(t0), 100), 100u);
  ASSERT_LT(bucket.tat, units(t0)) << "the bucket time itself wrapped past 0";
  const uint64_t later = units(t0 + 50 * kNsPerMs);  // 20 ms past the wrap
  EXPECT_LT(later, units(t0));
  EXPECT_EQ(bucket.remaining(later), 50u);
  EXPECT_EQ(bucket.flood(later, 1000), 50u);
}

TEST(Gcra, RemainingCountsWholeUnitsOfCost) {
  Bucket bucket = Bucket::pps(1000, 10);
  const uint64_t now = units(kStartNs);
  EXPECT_EQ(bucket.remaining(now), 10u);
  ASSERT_EQ(bucket.flood(now, 3), 3u);
  EXPECT_EQ(bucket.remaining(now), 7u);
  EXPECT_EQ(bucket.remaining(now + units(kNsPerMs / 2)), 7u);  // half a packet is not one
  EXPECT_EQ(bucket.remaining(now + units(kNsPerMs)), 8u);
  EXPECT_EQ(fg_gcra_remaining(bucket.tat, now, 0, bucket.capacity), 0u);  // no limit set
}

TEST(Gcra, TickUnits) {
  EXPECT_EQ(fg_tick_units(250), 262144000000ULL);  // 4 ms << 16
  EXPECT_EQ(fg_tick_units(1000), 65536000000ULL);  // 1 ms << 16
  EXPECT_EQ(fg_tick_units(100), 655360000000ULL);  // 10 ms << 16
  EXPECT_EQ(fg_tick_units(300), 218453311488ULL);  // 3333333 ns << 16 (TICK_NSEC, truncated)
}

// The program's clock: jiffies × tick units. `true_ns` counts from a jiffy boundary.
struct TickClock {
  uint64_t hz;
  uint64_t base_jiffies;
  uint64_t tick_ns() const { return kNsPerSecond / hz; }
  uint64_t jiffies(uint64_t true_ns) const { return base_jiffies + true_ns / tick_ns(); }
  uint64_t now(uint64_t true_ns) const { return jiffies(true_ns) * fg_tick_units(hz); }
};

TEST(GcraTickClock, FloodAtHz250AdmitsTheRateWithinOneTick) {
  // 1000 pps, burst 50; HZ=250 brings 4 packets of tokens per tick. A packet every 100 us
  // for 10 s (the last at 9.9999 s) spans jiffies 0..2499: 50 + 4 × 2499 admitted.
  const TickClock clock{250, 4294892296ULL};  // jiffies64 at boot with HZ=250
  Bucket bucket = Bucket::pps(1000, 50);
  uint64_t admitted = 0, last_ns = 0;
  for (uint64_t t = 0; t < 10 * kNsPerSecond; t += 100000) {
    admitted += bucket.admit(clock.now(t)) ? 1 : 0;
    last_ns = t;
  }
  EXPECT_EQ(admitted, 10046u);
  const double elapsed_s = static_cast<double>(last_ns) / kNsPerSecond;
  const double tick_s = 0.004;
  EXPECT_LE(admitted, 50 + 1000 * (elapsed_s + tick_s));
  EXPECT_GE(admitted, 50 + 1000 * (elapsed_s - tick_s));
}

struct TickCase {
  uint64_t hz;
  uint64_t pps;
  uint64_t burst;  // at least pps / hz: a tick's worth of tokens (see the DISABLED test)
  uint64_t first_ns;
  uint64_t seed;
};

class GcraTickFlood : public ::testing::TestWithParam<TickCase> {};

// An irregular flood from an instant inside a tick, ending in a burst at its last instant:
// the admitted count is within one tick of tokens of burst + rate × elapsed.
TEST_P(GcraTickFlood, AdmittedIsWithinOneTickOfTheRate) {
  const TickCase c = GetParam();
  const TickClock clock{c.hz, 1000000};
  Bucket bucket = Bucket::pps(c.pps, c.burst);
  Lcg rng{c.seed};
  // The flood opens with more than the burst, so the bucket is empty from its first reading.
  uint64_t admitted = bucket.flood(clock.now(c.first_ns), c.burst + 1), t = c.first_ns;
  const uint64_t end_ns = c.first_ns + 10 * kNsPerSecond;
  while (true) {
    const uint64_t gap = 1000 + rng.below(49000);  // 1 to 50 us
    if (t + gap > end_ns) break;
    t += gap;
    admitted += bucket.admit(clock.now(t)) ? 1 : 0;
  }
  admitted += bucket.flood(clock.now(t), c.pps / c.hz + 2);  // take what the last tick brought

  // Exactly what GCRA gives: the capacity plus the clock's advance, in whole intervals.
  const uint64_t advance = clock.now(t) - clock.now(c.first_ns);
  EXPECT_EQ(admitted, (bucket.capacity + advance) / bucket.interval);

  const double elapsed_s = static_cast<double>(t - c.first_ns) / kNsPerSecond;
  const double tick_s = 1.0 / c.hz;
  const double rate = static_cast<double>(c.pps);
  EXPECT_LE(admitted, c.burst + rate * (elapsed_s + tick_s));
  EXPECT_GE(admitted, std::floor(c.burst + rate * (elapsed_s - tick_s)));
}

INSTANTIATE_TEST_SUITE_P(
    Rates, GcraTickFlood,
    ::testing::Values(TickCase{250, 333, 7, 1700000, 1}, TickCase{250, 10000, 1000, 3999999, 2},
                      TickCase{250, 1000, 4, 1, 3}, TickCase{1000, 777, 3, 500000, 4},
                      TickCase{100, 12345, 200, 9999999, 5}, TickCase{300, 1000, 10, 1234567, 6}),
    [](const ::testing::TestParamInfo<TickCase>& info) {
      return "Hz" + std::to_string(info.param.hz) + "Pps" + std::to_string(info.param.pps) +
             "Burst" + std::to_string(info.param.burst);
    });

// A bucket that held less than one tick of tokens would refill to full and stop at every
// tick, capping the rate at burst × HZ (10 × 250 = 2500 pps for a 10000 pps limit);
// compileRule, given the tick, makes it hold one tick of tokens more.
TEST(GcraTickClock, BurstSmallerThanATickStillReachesTheRate) {
  const TickClock clock{250, 1000000};
  RuleSpec spec;
  spec.limit.pps = 10000;
  spec.limit.burst = 10;
  auto rule = compileRule(spec, fg_tick_units(250));
  ASSERT_TRUE(rule.ok());
  Bucket bucket{rule->limits[FG_LIMIT_PPS].interval, rule->limits[FG_LIMIT_PPS].capacity};
  uint64_t admitted = 0;
  for (uint64_t t = 0; t < kNsPerSecond; t += 10000) admitted += bucket.admit(clock.now(t)) ? 1 : 0;
  const double elapsed_s = 0.99999;
  EXPECT_GE(admitted, std::floor(10 + 10000 * (elapsed_s - 0.004)));
  // and never more than the burst, the rate over the time, and one tick of tokens
  EXPECT_LE(admitted, std::ceil(10 + 10000 * (elapsed_s + 0.004)) + 1);
}

TEST(Gcra, ByteIntervalAt100GbitIsPreciseAndNeverFast) {
  // 8 × 10^9 × 2^16 / 10^11 = 5242.88 units per byte, rounded up to 5243.
  const uint64_t interval = byteInterval(100000000000ULL);
  EXPECT_EQ(interval, 5243u);
  const double enforced_bps = 8.0 * static_cast<double>(units(kNsPerSecond)) / interval;
  EXPECT_LE(enforced_bps, 100e9);
  EXPECT_LT((100e9 - enforced_bps) / 100e9, 1e-4);

  // A second of 1500-byte frames, 15 GB/s offered, against a burst of 1000 frames: past the
  // burst the bucket admits the rate, never more than 100 Gbit and within 1e-4 of it.
  const uint64_t burst_bytes = 1500000;
  Bucket bucket{interval, interval * burst_bytes};
  uint64_t bytes = 0;
  const uint64_t t0 = units(kStartNs);
  for (uint64_t ns = 0; ns <= kNsPerSecond; ns += 100) {
    if (bucket.admit(t0 + units(ns), 1500)) bytes += 1500;
  }
  // Exactly: whole frames of (capacity + one second) / interval bytes.
  EXPECT_EQ(bytes, (bucket.capacity + units(kNsPerSecond)) / (1500 * interval) * 1500);
  EXPECT_LE((bytes - burst_bytes) * 8, 100000000000ULL);
  EXPECT_GE((bytes - burst_bytes) * 8, static_cast<uint64_t>(100e9 * (1 - 1e-4)));
}

// The fingerprint of a key, as the program makes it: the address hash, then the rule.
uint64_t fingerprint(uint64_t seed, uint32_t rule_id, uint32_t epoch, uint32_t family, uint64_t hi,
                     uint64_t lo) {
  return fg_key_fingerprint(fg_addr_hash(seed, family, hi, lo), rule_id, epoch, family);
}

TEST(KeyFingerprint, NeverZero) {
  // fmix64(0) is 0, so an all-zero key under seed 0 hashes to 0, which marks an unused slot.
  EXPECT_EQ(fg_mix64(0), 0u);
  EXPECT_EQ(fingerprint(0, 0, 0, 0, 0, 0), 1u);
}

TEST(KeyFingerprint, EveryFieldOfTheKeyCounts) {
  const uint64_t base = fingerprint(0x1234, 5, 1, FG_FAMILY_V6, 0xc0000201ULL << 32, 0);
  EXPECT_EQ(base, fingerprint(0x1234, 5, 1, FG_FAMILY_V6, 0xc0000201ULL << 32, 0));
  std::vector<uint64_t> variants = {
      fingerprint(0x5678, 5, 1, FG_FAMILY_V6, 0xc0000201ULL << 32, 0),
      fingerprint(0x1234, 6, 1, FG_FAMILY_V6, 0xc0000201ULL << 32, 0),
      fingerprint(0x1234, 5, 2, FG_FAMILY_V6, 0xc0000201ULL << 32, 0),
      fingerprint(0x1234, 5, 1, FG_FAMILY_V4, 0xc0000201ULL << 32, 0),
      fingerprint(0x1234, 5, 1, FG_FAMILY_V6, 0xc0000202ULL << 32, 0),
      fingerprint(0x1234, 5, 1, FG_FAMILY_V6, 0xc0000201ULL << 32, 1),
  };
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_NE(variants[i], base) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(variants[i], variants[j]) << i << " " << j;
  }
}

TEST(KeyFingerprint, TheAddressHashIsSharedAndTheRuleStillSeparatesKeys) {
  // IPv4 has no low half: the hash of an address is the same whatever is below it
  EXPECT_EQ(fg_addr_hash(7, FG_FAMILY_V4, 0xc0000201ULL << 32, 0),
            fg_addr_hash(7, FG_FAMILY_V4, 0xc0000201ULL << 32, 9));
  const uint64_t addr = fg_addr_hash(7, FG_FAMILY_V4, 0xc0000201ULL << 32, 0);
  EXPECT_NE(fg_key_fingerprint(addr, 1, 1, FG_FAMILY_V4),
            fg_key_fingerprint(addr, 2, 1, FG_FAMILY_V4));
}

TEST(KeyFingerprint, EveryRuleOfOneSourceHasAFingerprintOfItsOwn) {
  // the rule enters as an odd multiple of (epoch, id, family), a bijection: two rules or two
  // epochs of one rule never share a source's fingerprint, whatever the seed
  for (uint64_t seed : {0ULL, 7ULL, 0x9e3779b97f4a7c15ULL}) {
    const uint64_t addr = fg_addr_hash(seed, FG_FAMILY_V4, 0xc0000201ULL << 32, 0);
    std::set<uint64_t> seen;
    for (uint32_t epoch = 0; epoch < 4; ++epoch) {
      for (uint32_t id = 0; id < FG_MAX_RULE_IDS; ++id) {
        EXPECT_TRUE(seen.insert(fg_key_fingerprint(addr, id, epoch, FG_FAMILY_V4)).second)
            << seed << " " << id << " " << epoch;
      }
    }
  }
}

TEST(KeyFingerprint, MatchesMurmur3Finalizer) {
  // fmix64(1) from MurmurHash3's reference finalizer.
  EXPECT_EQ(fg_mix64(1), 0xb456bcfc34c2cb2cULL);
}

}  // namespace
}  // namespace floodgate
