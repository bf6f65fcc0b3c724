// SPDX-License-Identifier: MIT
// Each Redis script decides exactly as its in-memory algorithm on the same arrivals.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "floodgate/core/algorithm.h"
#include "floodgate/core/clock.h"
#include "floodgate/redis/client.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/scripts.h"
#include "floodgate/stores/memory_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::RedisServer;

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1'000'000;

class RedisScriptsTest : public testing::RedisServerTest {
 protected:
  // A store whose scripts read the time they are given, not Redis TIME, so that both
  // sides see the same instants: comparing on real arrivals with sleeps would differ by
  // scheduling jitter, and could not be exact.
  std::unique_ptr<RedisStore> virtualTimeStore(const AlgorithmParams& params,
                                               const std::string& policy = "p") {
    RedisStoreOptions options;
    options.virtual_time = true;
    return std::make_unique<RedisStore>(client_, policy, params, options);
  }
};

using testing::bucket;
using testing::window;

// The scripts count in whole µs and round retry/reset times up to the next µs (never
// earlier than the in-memory answer); everything else must be identical.
void expectSame(const Decision& memory, const Decision& redis, const std::string& where) {
  EXPECT_EQ(memory.outcome, redis.outcome) << where;
  EXPECT_EQ(memory.remaining, redis.remaining) << where;
  EXPECT_EQ(memory.limit, redis.limit) << where;
  EXPECT_EQ(memory.delay_ns, redis.delay_ns) << where;
  EXPECT_GE(redis.retry_after_ns, memory.retry_after_ns) << where;
  EXPECT_LT(redis.retry_after_ns, memory.retry_after_ns + kUs) << where;
  EXPECT_GE(redis.reset_ns, memory.reset_ns) << where;
  EXPECT_LT(redis.reset_ns, memory.reset_ns + kUs) << where;
}

// Bursty arrivals on whole µs (the scripts' resolution), a few keys, costs 1-3, and a
// refund now and then (as when another policy rejects, or later, as after a 400 that
// came up to 0.9 s on); some readings are stale. The keys are the only ones on `server`,
// which the fixture emptied.
void compareOnArrivals(const RedisServer& server, RedisStore& redis, const AlgorithmParams& params,
                       uint32_t seed) {
  MemoryStore memory(*makeAlgorithm(params), MemoryStoreOptions{});
  std::mt19937 rng(seed);
  int64_t now_ns = 1'000'000 * kMs;  // arbitrary origin, well past 0
  int allowed = 0;
  int rejected = 0;
  // The arrivals are decided by their clock alone: a key the scripts wrote to expire 1 ms
  // (real time) later must not vanish before the next arrival, or the refund, of the same
  // virtual instant when the machine is slow.
  auto persist = [&server] {
    Status persisted = server.persistKeys({"*"});
    ASSERT_TRUE(persisted) << persisted.error().message;
  };
  for (int i = 0; i < 600; ++i) {
    int gap = static_cast<int>(rng() % 10);
    now_ns += gap < 6 ? static_cast<int64_t>(rng() % 2000) * kUs
                      : static_cast<int64_t>(rng() % 400) * kMs;
    int64_t at_ns = (rng() % 20 == 0) ? now_ns - static_cast<int64_t>(rng() % 500) * kUs : now_ns;
    std::string key = "k" + std::to_string(rng() % 3);
    int64_t cost = 1 + static_cast<int64_t>(rng() % 3);
    std::string where = algorithmName(params.kind).data() + std::string(" #") + std::to_string(i);
    Decision m = *memory.decide(key, at_ns, cost);
    auto r = redis.decide(key, at_ns, cost);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_NO_FATAL_FAILURE(persist());
    expectSame(m, *r, where);
    (m.allowed() ? allowed : rejected)++;
    if (m.allowed() && rng() % 7 == 0) {
      const int64_t refund_ns =
          rng() % 2 == 0 ? now_ns : now_ns + static_cast<int64_t>(rng() % 900'000) * kUs;
      memory.refund(key, at_ns, refund_ns, cost);
      redis.refund(key, at_ns, refund_ns, cost);
      ASSERT_NO_FATAL_FAILURE(persist());
    }
  }
  // The arrivals must exercise both answers, or the comparison proves little.
  EXPECT_GT(allowed, 100);
  EXPECT_GT(rejected, 50);
}

// As SlidingWindowLog.ARefundAfterTheRequestsUnitsAgedOutGivesNothingBack, on Redis's own
// clock: a refund whose request is a window old removes none of the units logged since,
// however long the decisions in between took.
TEST_F(RedisScriptsTest, ASlidingLogRefundAfterTheUnitsAgedOutGivesNothingBack) {
  RedisStore store(client_, "late", window(AlgorithmKind::kSlidingWindowLog, 10, 1000),
                   RedisStoreOptions{});
  SteadyClock clock;
  const int64_t first_ns = clock.nowNs();
  ASSERT_TRUE(store.decide("k", first_ns, 5)->allowed());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // at least: the units aged out
  int admitted = 0;
  for (int i = 0; i < 5; ++i) admitted += store.decide("k", clock.nowNs(), 1)->allowed();
  EXPECT_GE(admitted, 1);
  auto logged = [&] { return server_->command({"ZCARD", "fg:{late:k}:log"})->integer; };
  const int64_t before = logged();
  ASSERT_GE(before, 1);
  store.refund("k", first_ns, clock.nowNs(), 5);
  EXPECT_EQ(logged(), before) << "the late refund removed units of later requests";
  // a refund within the window still gives back (a second is far more than these calls take)
  const int64_t now_ns = clock.nowNs();
  ASSERT_TRUE(store.decide("k", now_ns, 1)->allowed());
  const int64_t with_it = logged();
  store.refund("k", now_ns, now_ns, 1);
  EXPECT_EQ(logged(), with_it - 1);
}

// Two requests of cost 50 admitted at 0 trickle their bodies; at 10 s the bucket is full
// again and 100 more are spent; then both end in a 400 that keeps one unit each. Their
// charge refilled long ago: 49 given back twice would let 98 more through at once, 198
// units in an instant against a capacity of 100. The same in memory and in Redis.
TEST_F(RedisScriptsTest, ABucketRefundAfterTheBucketRefilledGivesNothingBack) {
  for (AlgorithmKind kind :
       {AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra, AlgorithmKind::kLeakyBucket}) {
    SCOPED_TRACE(std::string(algorithmName(kind)));
    const AlgorithmParams p = bucket(kind, 100, 10);
    MemoryStore memory(*makeAlgorithm(p), MemoryStoreOptions{});
    auto redis = virtualTimeStore(p, "late-" + std::string(algorithmName(kind)));
    for (Store* store : std::initializer_list<Store*>{&memory, redis.get()}) {
      const int64_t origin_ns = 1'000'000 * kMs;
      const int64_t later_ns = origin_ns + 10'000 * kMs;
      EXPECT_TRUE(store->decide("k", origin_ns, 50)->allowed());
      EXPECT_TRUE(store->decide("k", origin_ns, 50)->allowed());
      EXPECT_TRUE(store->decide("k", later_ns, 100)->allowed());
      store->refund("k", origin_ns, later_ns, 49);
      store->refund("k", origin_ns, later_ns, 49);
      auto next = store->decide("k", later_ns, 1);
      ASSERT_TRUE(next.ok()) << next.error().message;
      EXPECT_FALSE(next->allowed()) << (store == &memory ? "memory" : "redis");
      // what has not refilled still comes back: 10 of a charge of 50 by 1 s, 39 of 49
      const int64_t second_ns = later_ns + 20'000 * kMs;
      EXPECT_TRUE(store->decide("j", second_ns, 50)->allowed());
      store->refund("j", second_ns, second_ns + 1000 * kMs, 49);
      EXPECT_TRUE(store->decide("j", second_ns + 1000 * kMs, 99)->allowed());
      EXPECT_FALSE(store->decide("j", second_ns + 1000 * kMs, 1)->allowed());
    }
  }
}

// On Redis's own clock the refund reads Redis TIME: an admission named 10^4 s before now is
// long refilled at one unit per 100 s (49 units took 4900 s), and nothing comes back; one
// named now gives back all but the few µs since, at least 48 units, however long the
// calls took (under 100 s).
TEST_F(RedisScriptsTest, ABucketRefundOnRedissClockGivesBackOnlyWhatHasNotRefilled) {
  for (AlgorithmKind kind : {AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra}) {
    SCOPED_TRACE(std::string(algorithmName(kind)));
    RedisStore store(client_, "clock-" + std::string(algorithmName(kind)), bucket(kind, 100, 0.01),
                     RedisStoreOptions{});
    SteadyClock clock;
    ASSERT_TRUE(store.decide("k", clock.nowNs(), 100)->allowed());
    store.refund("k", clock.nowNs() - 10'000'000 * kMs, clock.nowNs(), 49);
    EXPECT_FALSE(store.decide("k", clock.nowNs(), 1)->allowed()) << "the late refund gave back";
    const int64_t now_ns = clock.nowNs();
    store.refund("k", now_ns, now_ns, 49);
    EXPECT_TRUE(store.decide("k", clock.nowNs(), 48)->allowed()) << "the prompt refund did not";
  }
}

TEST_F(RedisScriptsTest, FixedWindowMatchesMemory) {
  auto p = window(AlgorithmKind::kFixedWindow, 10, 1000);
  compareOnArrivals(*server_, *virtualTimeStore(p), p, 1);
}

TEST_F(RedisScriptsTest, SlidingWindowLogMatchesMemory) {
  auto p = window(AlgorithmKind::kSlidingWindowLog, 10, 1000);
  compareOnArrivals(*server_, *virtualTimeStore(p), p, 2);
}

TEST_F(RedisScriptsTest, SlidingWindowCounterMatchesMemory) {
  auto p = window(AlgorithmKind::kSlidingWindowCounter, 10, 1000);
  compareOnArrivals(*server_, *virtualTimeStore(p), p, 3);
}

TEST_F(RedisScriptsTest, SlidingWindowCounterMatchesMemoryOnAWeekLongWindow) {
  // limit x window in µs is ~6e17 here, past a double's exact integers: mulcmp keeps it exact.
  auto p = window(AlgorithmKind::kSlidingWindowCounter, kMaxLimit, kMaxWindowMs);
  auto redis = virtualTimeStore(p);
  MemoryStore memory(*makeAlgorithm(p), MemoryStoreOptions{});
  int64_t now_ns = 3 * kMaxWindowMs * kMs / 2;
  for (int64_t cost : {600'000, 399'999, 2, 1}) {
    expectSame(*memory.decide("k", now_ns, cost), *redis->decide("k", now_ns, cost), "week");
  }
  now_ns += kMaxWindowMs * kMs;  // the next window: the count above becomes "previous"
  for (int i = 0; i < 4; ++i) {
    now_ns += 7 * 3600 * 1000 * kMs;
    expectSame(*memory.decide("k", now_ns, 150'000), *redis->decide("k", now_ns, 150'000),
               "week, later " + std::to_string(i));
  }
}

TEST_F(RedisScriptsTest, TokenBucketMatchesMemory) {
  auto p = bucket(AlgorithmKind::kTokenBucket, 10, 7.5);
  compareOnArrivals(*server_, *virtualTimeStore(p), p, 4);
}

TEST_F(RedisScriptsTest, GcraMatchesMemory) {
  // 1e9 / rate_milli must be whole (µs per unit) for GCRA to match to the ns: 8 per second.
  auto p = bucket(AlgorithmKind::kGcra, 10, 8);
  compareOnArrivals(*server_, *virtualTimeStore(p), p, 5);
}

TEST_F(RedisScriptsTest, LeakyBucketMatchesMemory) {
  auto p = bucket(AlgorithmKind::kLeakyBucket, 10, 8);
  compareOnArrivals(*server_, *virtualTimeStore(p), p, 6);
}

TEST_F(RedisScriptsTest, EveryKeyGetsAnExpiry) {
  for (auto p : {window(AlgorithmKind::kFixedWindow, 5, 1000),
                 window(AlgorithmKind::kSlidingWindowLog, 5, 1000),
                 window(AlgorithmKind::kSlidingWindowCounter, 5, 1000),
                 bucket(AlgorithmKind::kTokenBucket, 5, 1), bucket(AlgorithmKind::kGcra, 5, 1),
                 bucket(AlgorithmKind::kLeakyBucket, 5, 1)}) {
    // at the start of a window, so no key's expiry is a few ms that pass before KEYS
    auto store = virtualTimeStore(p, std::string(algorithmName(p.kind)));
    ASSERT_TRUE(store->decide("user-1", 1'000'000'000'000LL, 2).ok());
  }
  auto keys = server_->command({"KEYS", "*"});
  ASSERT_TRUE(keys);
  EXPECT_EQ(keys->elements.size(), 7u);  // the log has a sequence key too
  for (const redis::Reply& key : keys->elements) {
    auto ttl = server_->command({"PTTL", key.str});
    ASSERT_TRUE(ttl);
    EXPECT_GT(ttl->integer, 0) << key.str;
    EXPECT_LE(ttl->integer, 5000) << key.str;
    EXPECT_NE(key.str.find("{"), std::string::npos) << "hash tag in " << key.str;
  }
}

// A key over 200 bytes is stored as "sha1:" and its hash. A client who sends that name as
// its own key gets a state of its own, not the long key's: it cannot spend that client's
// limit, nor read its own as fresh through it. Every decision is at virtual time 0, in one
// window whenever the test runs (a window of Redis's clock could end between two of them).
TEST_F(RedisScriptsTest, AKeyNamedLikeAHashedOneHasItsOwnState) {
  auto p = window(AlgorithmKind::kFixedWindow, 3, 60'000);
  auto store = virtualTimeStore(p);
  const std::string long_key(300, 'k');
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->decide(long_key, 0, 1)->allowed());
  EXPECT_FALSE(store->decide(long_key, 0, 1)->allowed());
  auto keys = server_->command({"KEYS", "*"});
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->elements.size(), 1u);
  const std::string stored = keys->elements[0].str;
  const std::string hashed = "sha1:" + redis::sha1Hex(long_key);
  ASSERT_NE(stored.find(hashed), std::string::npos) << stored;
  // the same name sent as a key: a fresh state, and the long key's is untouched
  auto named = store->decide(hashed, 0, 1);
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_TRUE(named->allowed());
  EXPECT_EQ(named->remaining, 2);
  EXPECT_FALSE(store->decide(long_key, 0, 1)->allowed());
  keys = server_->command({"KEYS", "*"});
  ASSERT_TRUE(keys);
  EXPECT_EQ(keys->elements.size(), 2u);
}

// A client key with a brace would end the hash tag early: "x}1", "x}2", ... would all be
// tagged "<policy>:x" and land in one cluster slot of the client's choosing. Such keys are
// hashed, and their slots spread as any keys' do.
TEST_F(RedisScriptsTest, AKeyWithABraceIsHashedSoItCannotChooseItsSlot) {
  auto store = virtualTimeStore(window(AlgorithmKind::kFixedWindow, 3, 60'000));
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(store->decide("x}" + std::to_string(i), 0, 1)->allowed());
  auto keys = server_->command({"KEYS", "*"});
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->elements.size(), 50u);
  std::set<uint16_t> slots;
  for (const auto& key : keys->elements) {
    EXPECT_EQ(key.str.find("x}"), std::string::npos) << key.str;
    slots.insert(redis::keySlot(key.str));
  }
  EXPECT_GT(slots.size(), 40u) << "50 keys hashed into so few slots";
  std::string scratch;
  EXPECT_EQ(RedisStore::boundedKey("a{b", scratch), "sha1:" + redis::sha1Hex("a{b"));
  EXPECT_EQ(RedisStore::boundedKey("plain-key", scratch), "plain-key");
}

// After SCRIPT FLUSH (as after a restart) a store on scripts finds NOSCRIPT, sends the script
// again and decides as it would have. On a server without FCALL, so that its decisions are
// scripts: SCRIPT FLUSH leaves a function library alone.
TEST(RedisScriptsWithoutFunctions, ReloadsScriptsAfterNoscript) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start({"--rename-command", "FCALL", ""});
  if (!server) GTEST_SKIP() << "redis-server did not start";
  auto client = testing::clientOf(*server);
  RedisStoreOptions options;
  options.virtual_time = true;  // one window whenever the test runs
  RedisStore store(client, "p", window(AlgorithmKind::kFixedWindow, 3, 60'000), options);
  EXPECT_TRUE(store.decide("k", 0, 1)->allowed());
  ASSERT_TRUE(client->scriptsOnly());
  const int64_t sent = testing::calls(*server, "eval");
  ASSERT_TRUE(server->command({"SCRIPT", "FLUSH"}));
  auto d = store.decide("k", 0, 1);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->remaining, 1);
  EXPECT_EQ(testing::calls(*server, "eval"), sent + 1) << "the script was sent again";
}

TEST_F(RedisScriptsTest, PipelinedBatchDecidesLikeOneByOne) {
  auto p = window(AlgorithmKind::kSlidingWindowLog, 4, 1000);
  auto batched = virtualTimeStore(p, "batched");
  auto single = virtualTimeStore(p, "single");
  std::vector<RedisStore::Request> requests;
  for (int i = 0; i < 20; ++i) requests.push_back({i % 2 ? "a" : "b", 1, 0});
  ASSERT_TRUE(batched->decide("warm-up", 0, 1).ok());  // the script is cached from here on
  int64_t trips = client_->roundTrips();
  auto answers = batched->decideMany(requests, 5 * kMs);
  ASSERT_TRUE(answers.ok());
  EXPECT_EQ(client_->roundTrips() - trips, 1);
  for (size_t i = 0; i < requests.size(); ++i) {
    auto one = single->decide(requests[i].key, 5 * kMs, 1);
    ASSERT_TRUE((*answers)[i].ok() && one.ok());
    EXPECT_EQ((*answers)[i]->decision.outcome, one->outcome) << i;
    EXPECT_EQ((*answers)[i]->decision.remaining, one->remaining) << i;
  }
}

TEST_F(RedisScriptsTest, LeasesNeverTakeMoreThanRemains) {
  auto p = window(AlgorithmKind::kFixedWindow, 10, 60'000);
  auto store = virtualTimeStore(p);
  auto first = store->decideMany({{"k", 1, 7}}, kMs);
  ASSERT_TRUE(first.ok() && (*first)[0].ok());
  EXPECT_EQ((*first)[0]->leased, 7);
  EXPECT_EQ((*first)[0]->decision.remaining, 2);
  auto second = store->decideMany({{"k", 1, 7}}, kMs);
  EXPECT_EQ((*second)[0]->leased, 1);  // min(batch, remaining)
  EXPECT_EQ((*second)[0]->decision.remaining, 0);
  ASSERT_TRUE(store->giveBack("k", kMs, kMs, 5).ok());
  EXPECT_EQ(store->decide("k", kMs, 1)->remaining, 4);
}

// A policy's limits changed while its keys live in Redis: the first decision under the new
// limits carries each key's state across (as state_migration does in memory). Two keys get
// the same history under the old limits; then one decides under the old limits and the
// other under the new ones: the raised limit must admit whenever the old one did.
TEST_F(RedisScriptsTest, ARaisedLimitNeverRejectsWhatTheOldOneAdmittedInRedis) {
  const std::vector<testing::Raise> raises = testing::raisedLimits();
  std::mt19937_64 random(11);
  for (const testing::Raise& raise : raises) {
    SCOPED_TRACE(std::string(algorithmName(raise.from.kind)));
    ASSERT_TRUE(server_->command({"FLUSHALL"}));  // each raise on keys of its own
    auto before = virtualTimeStore(raise.from);
    auto after = virtualTimeStore(raise.to);
    int old_admitted = 0, trials = 0;
    for (int trial = 0; trial < 60; ++trial) {
      const std::string old_key = "old" + std::to_string(trial);
      const std::string new_key = "new" + std::to_string(trial);
      int64_t now = 10'000 * kMs;
      for (int i = 0, n = static_cast<int>(random() % 12); i < n; ++i) {
        now += static_cast<int64_t>(random() % 400) * kMs;
        const int64_t cost = 1 + static_cast<int64_t>(random() % 2);
        ASSERT_TRUE(before->decide(old_key, now, cost).ok());
        ASSERT_TRUE(before->decide(new_key, now, cost).ok());
      }
      const int64_t at = now + static_cast<int64_t>(random() % 800) * kMs;
      const int64_t cost = 1 + static_cast<int64_t>(random() % 3);
      auto old_decision = before->decide(old_key, at, cost);
      auto new_decision = after->decide(new_key, at, cost);
      ASSERT_TRUE(old_decision.ok() && new_decision.ok());
      old_admitted += old_decision->allowed();
      ++trials;
      EXPECT_TRUE(!old_decision->allowed() || new_decision->allowed())
          << "trial " << trial << " cost " << cost;
    }
    EXPECT_GT(old_admitted, 0);
    EXPECT_LT(old_admitted, trials) << "some states must be over the old limit";
  }
}

TEST_F(RedisScriptsTest,
       ALoweredLimitKeepsWhatWasUsedAnotherWindowHoldsToItsEndAnotherAlgorithmStartsFresh) {
  // GCRA: 3 of 10 used at 1/s; at 4 units the 3 stay used: one left
  auto big = virtualTimeStore(bucket(AlgorithmKind::kGcra, 10, 1));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(big->decide("k", kMs, 1)->allowed());
  auto small = virtualTimeStore(bucket(AlgorithmKind::kGcra, 4, 4));
  auto next = small->decide("k", kMs, 1);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->allowed());
  EXPECT_EQ(next->remaining, 0) << "3 used of 4, then this one";
  EXPECT_FALSE(small->decide("k", kMs, 1)->allowed());
  // a full GCRA key whose capacity alone is lowered: at most all of it used, so the next
  // unit comes one interval later, not after the old backlog
  auto hundred = virtualTimeStore(bucket(AlgorithmKind::kGcra, 100, 1));
  ASSERT_TRUE(hundred->decide("g", kMs, 100)->allowed());
  auto ten = virtualTimeStore(bucket(AlgorithmKind::kGcra, 10, 1));
  auto full = ten->decide("g", kMs, 1);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->allowed());
  EXPECT_EQ(full->retry_after_ns, 1000 * kMs);
  EXPECT_TRUE(ten->decide("g", 1001 * kMs, 1)->allowed());
  // ... and with the rate raised too, a refused key drains at the new rate from then on
  ASSERT_TRUE(hundred->decide("h", kMs, 100)->allowed());
  auto fast = virtualTimeStore(bucket(AlgorithmKind::kGcra, 10, 10));
  EXPECT_FALSE(fast->decide("h", kMs, 1)->allowed());
  EXPECT_TRUE(fast->decide("h", 101 * kMs, 1)->allowed());
  // a token bucket lowered below what it used: nothing left, never a negative count
  auto tokens = virtualTimeStore(bucket(AlgorithmKind::kTokenBucket, 10, 1));
  ASSERT_TRUE(tokens->decide("t", kMs, 8)->allowed());
  auto fewer = virtualTimeStore(bucket(AlgorithmKind::kTokenBucket, 4, 1));
  auto refused = fewer->decide("t", kMs, 1);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->allowed());
  EXPECT_EQ(refused->remaining, 0);
  // a fixed window of another length holds, at its length, until it ends; then the next
  // one starts at the new length
  auto minute = virtualTimeStore(window(AlgorithmKind::kFixedWindow, 5, 60'000));
  ASSERT_TRUE(minute->decide("w", kMs, 5)->allowed());
  EXPECT_FALSE(minute->decide("w", kMs, 1)->allowed());
  auto second = virtualTimeStore(window(AlgorithmKind::kFixedWindow, 5, 1000));
  auto held = second->decide("w", 2000 * kMs, 1);
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->allowed());
  EXPECT_EQ(held->retry_after_ns, 58'000 * kMs) << "the minute's end";
  EXPECT_EQ(second->decide("w", 60'000 * kMs, 1)->remaining, 4);
  // another algorithm under the same policy name: its own keys, fresh (never WRONGTYPE)
  auto counter = virtualTimeStore(window(AlgorithmKind::kSlidingWindowCounter, 5, 60'000));
  auto fresh = counter->decide("w", kMs, 1);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_EQ(fresh->remaining, 4);
}

// While a fleet runs a policy's old and new window side by side (a rolling deploy), a client
// alternating between them is counted once: neither length starts the other's window over.
TEST_F(RedisScriptsTest, TwoWindowLengthsSideBySideCountOnInOneWindow) {
  for (AlgorithmKind kind : {AlgorithmKind::kFixedWindow, AlgorithmKind::kSlidingWindowCounter}) {
    SCOPED_TRACE(std::string(algorithmName(kind)));
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    auto old_length = virtualTimeStore(window(kind, 3, 60'000));
    auto new_length = virtualTimeStore(window(kind, 3, 120'000));
    int admitted = 0;
    for (int i = 0; i < 20; ++i) {
      RedisStore& store = i % 2 == 0 ? *old_length : *new_length;
      auto d = store.decide("k", (1000 + i * 100) * kMs, 1);
      ASSERT_TRUE(d.ok()) << d.error().message;
      admitted += d->allowed();
    }
    EXPECT_EQ(admitted, 3);
    // a refund made under the other length still finds the units it gave
    auto d = new_length->decide("k", 3000 * kMs, 1);
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d->allowed());
    new_length->refund("k", 1000 * kMs, 3000 * kMs, 1);
    EXPECT_TRUE(old_length->decide("k", 3000 * kMs, 1)->allowed());
  }
}

}  // namespace
}  // namespace floodgate::http
