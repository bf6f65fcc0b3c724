// SPDX-License-Identifier: MIT
// Local buckets reconciled with Redis: decisions between syncs make no round trip, a fleet
// of four at three times a key's limit stays within the stated bound, an outage follows each
// failure mode and recovers, and a flood of distinct keys keeps the local state bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/fleet_membership.h"
#include "floodgate/redis/store_factory.h"
#include "floodgate/redis/sync_store.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::RedisServer;
using testing::stateField;

class RedisSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
  }
  std::shared_ptr<redis::Client> newClient() {
    redis::ClientOptions options;
    options.seeds = {server_->address()};
    options.timeout_ms = 2000;
    options.pool_size = 4;
    return std::make_shared<redis::Client>(options);
  }
  // A sync store with no thread (the test syncs every 200 ms of its clock, or not), on the
  // test's clock; `instances` live.
  std::unique_ptr<SyncStore> manualStore(const AlgorithmParams& p, int64_t instances,
                                         int64_t max_keys = 1000) {
    RedisStoreOptions options;
    options.virtual_time = true;
    options.keeps_debt = true;  // as the store factory makes a sync store's
    return std::make_unique<SyncStore>(
        std::make_unique<RedisStore>(newClient(), "sync", p, options),
        [instances] { return instances; }, breaker_, clock_,
        SyncOptions{200, max_keys, /*background=*/false});
  }

  // A config of the Redis store on the test's server, one instance, no retry jitter.
  HttpConfig oneInstanceOnRedis() const {
    HttpConfig config;
    config.store.type = "redis";
    config.store.address = server_->address().text();
    config.store.instances = 1;
    config.retry_after_jitter = 0;
    return config;
  }

  std::unique_ptr<RedisServer> server_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000'000'000'000);
  std::shared_ptr<CircuitBreaker> breaker_ =
      std::make_shared<CircuitBreaker>(CircuitBreakerOptions{3, 1000}, clock_);
};

// A clock that moves only when told to and runs a hook, once, at its next reading after
// once(): the test acts at a point of the store's own sequence, with no race to lose.
class HookClock final : public Clock {
 public:
  explicit HookClock(int64_t start_ns) : now_ns_(start_ns) {}
  int64_t nowNs() const override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      hook = std::exchange(hook_, nullptr);
    }
    if (hook) hook();
    return now_ns_.load();
  }
  void advanceMs(int64_t ms) { now_ns_ += ms * 1'000'000; }
  void once(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
  }

 private:
  std::atomic<int64_t> now_ns_;
  mutable std::mutex mutex_;
  mutable std::function<void()> hook_;
};

AlgorithmParams fixedWindow(int64_t limit, int64_t window_ms) {
  AlgorithmParams p;
  p.kind = AlgorithmKind::kFixedWindow;
  p.limit = limit;
  p.window_ms = window_ms;
  return p;
}

TEST_F(RedisSyncTest, DecisionsBetweenSyncsAreLocalAndSharesFollowTheFleet) {
  // Two instances, limit 100 per (long) window: each holds ceil(100 / 2) = 50 at first.
  AlgorithmParams p = fixedWindow(100, 600'000);
  auto a = manualStore(p, 2);
  auto b = manualStore(p, 2);
  ASSERT_TRUE(a->decide("warm", clock_->nowNs(), 1).ok());  // the script is cached from here
  int64_t trips_before = a->remote().client().roundTrips();
  int admitted_a = 0;
  for (int i = 0; i < 60; ++i) admitted_a += a->decide("k", clock_->nowNs(), 1)->allowed();
  EXPECT_EQ(admitted_a, 50);
  EXPECT_EQ(a->remote().client().roundTrips() - trips_before, 1);  // the first grant only
  EXPECT_EQ(a->stats().decided_locally, 59);  // the first of "k" and of "warm" were grants

  // b gets its share before a reports: the fleet can hold 100 more than Redis knows.
  int admitted_b = 0;
  for (int i = 0; i < 60; ++i) admitted_b += b->decide("k", clock_->nowNs(), 1)->allowed();
  EXPECT_EQ(admitted_b, 50);

  // a reports its 50: 100 - 50 = 50 left, a's new share 25; b reports: 0 left.
  ASSERT_TRUE(a->syncNow().ok());
  auto state = server_->command({"GET", "fg:{sync:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(stateField(state->str, 1), "50");
  ASSERT_TRUE(b->syncNow().ok());
  int more = 0;
  for (int i = 0; i < 30; ++i) more += a->decide("k", clock_->nowNs(), 1)->allowed();
  EXPECT_EQ(more, 25);  // from a's share granted before b reported: within the bound
  ASSERT_TRUE(a->syncNow().ok());
  ASSERT_TRUE(b->syncNow().ok());
  for (auto* s : {a.get(), b.get()}) {
    Result<Decision> d = s->decide("k", clock_->nowNs(), 1);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->outcome, Outcome::kRejected);
    EXPECT_GT(d->retry_after_ns, 0);  // the window's end: nothing is left for the fleet
  }
  // 125 admitted against a limit of 100: under 2 x limit + N - 1 = 201.
  state = server_->command({"GET", "fg:{sync:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(stateField(state->str, 1), "125");  // every admitted unit is counted in Redis
}

TEST_F(RedisSyncTest, AShareEndsWithItsWindowAndGoesStaleWithoutSyncs) {
  AlgorithmParams p = fixedWindow(10, 1000);
  clock_->setMs(1'000'000'000);  // at a window's start
  auto a = manualStore(p, 1);
  EXPECT_TRUE(a->decide("k", clock_->nowNs(), 1)->allowed());
  int64_t trips = a->remote().client().roundTrips();
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(a->decide("k", clock_->nowNs(), 1)->allowed());
  EXPECT_FALSE(a->decide("k", clock_->nowNs(), 1)->allowed());
  EXPECT_EQ(a->remote().client().roundTrips(), trips);
  // The next window: the old share is not spent there; a new one is fetched.
  clock_->advanceMs(1000);
  EXPECT_TRUE(a->decide("k", clock_->nowNs(), 1)->allowed());
  EXPECT_EQ(a->remote().client().roundTrips(), trips + 1);
  ASSERT_TRUE(a->syncNow().ok());
  auto state = server_->command({"GET", "fg:{sync:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  // The previous window's 10 were reported after it ended: they count no more.
  EXPECT_EQ(stateField(state->str, 1), "1");
}

// A refund of a request admitted before the last sync (reported, here in a window since
// ended) goes to Redis, which ignores it for a past window: given to the new share instead,
// it would admit the unit twice and never report it.
TEST_F(RedisSyncTest, ARefundFromBeforeTheLastSyncIsNotGivenToTheShare) {
  AlgorithmParams p = fixedWindow(10, 1000);
  clock_->setMs(1'000'000'000);  // at a window's start
  auto a = manualStore(p, 1);
  std::vector<int64_t> held;
  for (int i = 0; i < 10; ++i) {
    held.push_back(clock_->nowNs());
    ASSERT_TRUE(a->decide("k", held.back(), 1)->allowed());
  }
  clock_->advanceMs(1000);  // the next window: a new share of 10
  ASSERT_TRUE(a->decide("k", clock_->nowNs(), 1)->allowed());
  for (int64_t admitted : held) a->refund("k", admitted, clock_->nowNs(), 1);
  int admitted = 1;
  for (int i = 0; i < 30; ++i) admitted += a->decide("k", clock_->nowNs(), 1)->allowed();
  EXPECT_EQ(admitted, 10);
  ASSERT_TRUE(a->syncNow().ok());
  auto state = server_->command({"GET", "fg:{sync:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(stateField(state->str, 1), "10") << "every unit admitted in the window is reported";
  // a refund of this window's request, reported already, is given back in Redis
  a->refund("k", held.back() + 1000 * 1'000'000, clock_->nowNs(), 1);
  state = server_->command({"GET", "fg:{sync:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(stateField(state->str, 1), "9");
}

// On Redis's own clock (no virtual time), a refund of units a sync reported names the
// admission's time as Redis counts it, which the sync read: with no decision ever made in
// Redis, the refund would name a time of its own clock and miss the window. The window is a
// day long, so none ends in the few milliseconds between the sync and the refund.
TEST_F(RedisSyncTest, ARefundOfReportedUnitsIsGivenBackOnRedissClock) {
  RedisStoreOptions options;
  options.keeps_debt = true;
  SyncStore a(
      std::make_unique<RedisStore>(newClient(), "sync-real", fixedWindow(10, 86'400'000), options),
      [] { return int64_t{1}; }, breaker_, clock_, SyncOptions{200, 1000, false});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.decide("k", clock_->nowNs(), 1)->allowed());
  ASSERT_TRUE(a.syncNow().ok());
  auto state = server_->command({"GET", "fg:{sync-real:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  ASSERT_EQ(stateField(state->str, 1), "3");
  a.refund("k", clock_->nowNs(), clock_->nowNs(), 1);
  state = server_->command({"GET", "fg:{sync-real:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(stateField(state->str, 1), "2") << "the refund was given back in Redis";
}

// A bucket with nothing left for the fleet tells a rejected client when the cost will be
// back (a token a minute, 0.017 a second as the scripts count it: the empty bucket is full
// in 588 s, and one token is back 9 tokens' time, 529 s, before that: after 59 s), not the
// next sync's 200 ms, which it would spend on retries refused for nothing.
TEST_F(RedisSyncTest, ARejectionWithTheFleetsBucketEmptySaysWhenTheCostIsBack) {
  AlgorithmParams p;
  p.kind = AlgorithmKind::kTokenBucket;
  p.capacity = 10;
  p.rate_per_s = 1.0 / 60;
  auto a = manualStore(p, 1);
  int admitted = 0;
  for (int i = 0; i < 12; ++i) admitted += a->decide("k", clock_->nowNs(), 1)->allowed();
  EXPECT_EQ(admitted, 10);
  ASSERT_TRUE(a->syncNow().ok());  // reports the 10: the fleet has none left
  Result<Decision> d = a->decide("k", clock_->nowNs(), 1);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->outcome, Outcome::kRejected);
  EXPECT_GT(d->retry_after_ns, 58 * kNsPerS);
  EXPECT_LE(d->retry_after_ns, 59 * kNsPerS);
}

// Two instances each spend a full share before either reports: the bucket owes 10 tokens
// beyond its capacity, and the fleet waits for them (the bound's accounting). A decision
// made in Redis exactly (a stale share being synced, or no room for the key) must keep
// that debt, not read it as a lowered capacity and write the bucket back merely empty.
TEST_F(RedisSyncTest, AnExactDecisionKeepsTheDebtTheSyncsRecorded) {
  for (AlgorithmKind kind : {AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra}) {
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    AlgorithmParams p;
    p.kind = kind;
    p.capacity = 10;
    p.rate_per_s = 1;
    auto a = manualStore(p, 1);
    auto b = manualStore(p, 1);
    int admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += a->decide("k", clock_->nowNs(), 1)->allowed();
    for (int i = 0; i < 10; ++i) admitted += b->decide("k", clock_->nowNs(), 1)->allowed();
    ASSERT_EQ(admitted, 20) << algorithmName(kind);
    ASSERT_TRUE(a->syncNow().ok());
    ASSERT_TRUE(b->syncNow().ok());
    // 20 tokens missing from a bucket of 10: a token is back after 11 s, decided exactly
    // twice at the same instant
    for (int i = 0; i < 2; ++i) {
      Result<Decision> d = a->remote().decide("k", clock_->nowNs(), 1);
      ASSERT_TRUE(d.ok()) << d.error().message;
      EXPECT_EQ(d->outcome, Outcome::kRejected) << algorithmName(kind) << " #" << i;
      EXPECT_GE(d->retry_after_ns, 10 * kNsPerS) << algorithmName(kind) << " #" << i;
    }
  }
}

TEST_F(RedisSyncTest, DistinctKeysStayWithinMaxKeys) {
  // An attacker's flood of keys: the local state holds at most max_keys; beyond, a key is
  // decided by Redis exactly, and every decision is still right.
  AlgorithmParams p = fixedWindow(2, 600'000);
  auto a = manualStore(p, 1, /*max_keys=*/64);
  for (int i = 0; i < 1000; ++i) {
    std::string key = "flood-" + std::to_string(i);
    EXPECT_TRUE(a->decide(key, clock_->nowNs(), 1)->allowed());
    EXPECT_TRUE(a->decide(key, clock_->nowNs(), 1)->allowed());
    EXPECT_FALSE(a->decide(key, clock_->nowNs(), 1)->allowed());
  }
  SyncStats stats = a->stats();
  EXPECT_LE(stats.keys, 64);
  EXPECT_GT(stats.exact, 0);
  // Once synced and idle, keys make room for new ones.
  ASSERT_TRUE(a->syncNow().ok());
  ASSERT_TRUE(a->syncNow().ok());
  int64_t exact = a->stats().exact;
  EXPECT_TRUE(a->decide("new-key", clock_->nowNs(), 1)->allowed());
  EXPECT_EQ(a->stats().exact, exact);
}

// Client-chosen keys of any length (an 8 KB API key header) are held by their hash, here
// and in Redis: two that differ only at the end stay apart and each is limited.
TEST_F(RedisSyncTest, LongKeysAreHeldByTheirHashAndStayDistinct) {
  AlgorithmParams p = fixedWindow(2, 600'000);
  auto a = manualStore(p, 1);
  std::string first(8000, 'k'), second = first;
  second.back() = 'x';
  for (const std::string* key : {&first, &second}) {
    EXPECT_TRUE(a->decide(*key, clock_->nowNs(), 1)->allowed());
    EXPECT_TRUE(a->decide(*key, clock_->nowNs(), 1)->allowed());
    EXPECT_FALSE(a->decide(*key, clock_->nowNs(), 1)->allowed());
  }
  EXPECT_EQ(a->stats().keys, 2);
  EXPECT_LT(a->stats().key_bytes, 200) << "held by their hashes";
  a->refund(first, clock_->nowNs(), clock_->nowNs(), 1);
  EXPECT_TRUE(a->decide(first, clock_->nowNs(), 1)->allowed());
  EXPECT_FALSE(a->decide(second, clock_->nowNs(), 1)->allowed());
  ASSERT_TRUE(a->syncNow().ok());
  auto keys = server_->command({"KEYS", "*"});
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->elements.size(), 2u);
  for (const auto& key : keys->elements) EXPECT_LT(key.str.size(), 100u) << key.str;
}

// Four instances, each its own Limiter with its own sync task and heartbeat, send one key at
// three times its rate. The fleet's admitted total stays within the stated bound for the
// measured span: 2 x capacity + rate x W + N - 1.
TEST_F(RedisSyncTest, FourInstancesAtThreeTimesTheLimitStayWithinTheBound) {
  constexpr int kInstances = 4;
  constexpr int64_t kCapacity = 50;
  constexpr double kRate = 200;  // per second, for the fleet
  constexpr int64_t kIntervalMs = 200;
  constexpr milliseconds kRun{5000};
  std::vector<std::unique_ptr<Limiter>> fleet;
  std::vector<SyncStore*> stores;
  for (int i = 0; i < kInstances; ++i) {
    HttpConfig config;
    config.store.type = "redis";
    config.store.address = server_->address().text();
    config.store.timeout_ms = 500;
    config.store.instances = kInstances;  // the floor: no instance divides by fewer
    config.store.instance_id = "instance-" + std::to_string(i);
    PolicyConfig api;
    api.name = "api";
    api.key.kind = KeyKind::kHeader;
    api.key.header = "X-API-Key";
    api.algorithm.kind = AlgorithmKind::kTokenBucket;
    api.algorithm.capacity = kCapacity;
    api.algorithm.rate_per_s = kRate;
    api.sync.enabled = true;
    api.sync.interval_ms = kIntervalMs;
    config.policies = {api};
    auto made = Limiter::create(config, std::make_shared<SteadyClock>());
    ASSERT_TRUE(made.ok()) << made.error().message;
    stores.push_back(
        &dynamic_cast<SyncStore&>(dynamic_cast<FailoverStore&>((*made)->store(0)).remote()));
    fleet.push_back(std::move(*made));
  }
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> decided{0};
  const auto start = steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < kInstances; ++i) {
    threads.emplace_back([&, i] {
      // Each instance gets 3 x rate / 4 requests per second, on a schedule it catches up with
      // when a sleep runs long.
      const auto step = std::chrono::duration<double>(kInstances / (3 * kRate));
      int64_t sent = 0;
      const RequestInfo request{"GET", "/", "192.0.2.1", {{"X-API-Key", "hammered"}}, {}, {}};
      while (steady_clock::now() - start < kRun) {
        const auto due = start + std::chrono::duration_cast<steady_clock::duration>(step * sent);
        if (steady_clock::now() < due) std::this_thread::sleep_until(due);
        admitted += fleet[i]->check(request).allowed();
        ++decided;
        ++sent;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double span_s = std::chrono::duration<double>(steady_clock::now() - start).count();
  const double bound = 2.0 * kCapacity + kRate * span_s + (kInstances - 1);
  const double exact = kCapacity + kRate * span_s;
  int64_t trips = 0;
  int64_t local = 0;
  for (SyncStore* s : stores) {
    trips += s->remote().client().roundTrips();
    local += s->stats().decided_locally;
  }
  std::printf(
      "span %.2f s: %lld decided, %lld admitted (exact store at most %.0f, bound %.0f); "
      "%lld round trips, %lld decided locally\n",
      span_s, static_cast<long long>(decided.load()), static_cast<long long>(admitted.load()),
      exact, bound, static_cast<long long>(trips), static_cast<long long>(local));
  EXPECT_LE(admitted.load(), bound);
  EXPECT_GT(admitted.load(), 0);
}

// A request its sync share refuses, locally and for nothing, costs Redis nothing either: the
// exact policy beside it is not asked. A client refused without end would otherwise load
// Redis with a call per request, none of which its per-IP limit counts.
TEST_F(RedisSyncTest, ARequestASyncShareRefusesAsksRedisNothingForTheOtherPolicies) {
  HttpConfig config = oneInstanceOnRedis();
  PolicyConfig per_ip;
  per_ip.name = "per-ip";
  per_ip.algorithm = fixedWindow(4, 600'000);
  per_ip.sync.enabled = true;
  per_ip.sync.interval_ms = 600'000;  // no sync during the test: the share decides
  PolicyConfig per_key;
  per_key.name = "per-key";
  per_key.key = {KeyKind::kHeader, "X-API-Key"};
  per_key.algorithm = fixedWindow(1000, 600'000);
  config.policies = {per_ip, per_key};
  auto made = Limiter::create(config, std::make_shared<SteadyClock>());
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  auto check = [&] {
    return limiter.check(RequestInfo{"GET", "/", "192.0.2.1", {{"X-API-Key", "k1"}}, {}, {}});
  };
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(check().allowed()) << i;
  auto& exact = dynamic_cast<RedisStore&>(dynamic_cast<FailoverStore&>(limiter.store(1)).remote());
  const int64_t trips = exact.client().roundTrips();
  for (int i = 0; i < 50; ++i) {
    Verdict refused = check();
    ASSERT_FALSE(refused.allowed());
    EXPECT_EQ(refused.binding.policy, "per-ip");
  }
  EXPECT_EQ(exact.client().roundTrips(), trips);
}

// A request a local share refuses still has its `key: ip` policy looked at in Redis
// (uncharged): a client whose per-IP limit is spent is reported to the packet layer whatever
// refused it first. The rejection is remembered, so asking again costs Redis nothing.
TEST_F(RedisSyncTest, ARequestASyncShareRefusesIsStillReportedForItsSpentPerIpLimit) {
  HttpConfig config = oneInstanceOnRedis();
  PolicyConfig per_key;
  per_key.name = "per-key";
  per_key.key = {KeyKind::kHeader, "X-API-Key"};
  per_key.algorithm = fixedWindow(2, 600'000);
  per_key.sync.enabled = true;
  per_key.sync.interval_ms = 600'000;  // no sync during the test: the share decides
  PolicyConfig per_ip;
  per_ip.name = "per-ip";
  per_ip.algorithm = fixedWindow(4, 600'000);
  config.policies = {per_key, per_ip};
  auto made = Limiter::create(config, std::make_shared<SteadyClock>());
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  auto check = [&](const std::string& api_key) {
    return limiter.check(RequestInfo{"GET", "/", "192.0.2.1", {{"X-API-Key", api_key}}, {}, {}});
  };
  // the per-IP limit of 4 spent over two keys, each at its own limit of 2
  for (const char* key : {"a", "a", "b", "b"}) ASSERT_TRUE(check(key).allowed()) << key;
  Verdict refused = check("a");  // a's share refuses it first
  ASSERT_FALSE(refused.allowed());
  EXPECT_TRUE(refused.reportable()) << "its per-IP limit is spent: handed to the packet layer";
  auto& exact = dynamic_cast<RedisStore&>(dynamic_cast<FailoverStore&>(limiter.store(1)).remote());
  const int64_t trips = exact.client().roundTrips();
  for (int i = 0; i < 20; ++i) {
    Verdict again = check("a");
    ASSERT_FALSE(again.allowed());
    EXPECT_TRUE(again.reportable()) << i;
  }
  EXPECT_EQ(exact.client().roundTrips(), trips) << "the rejection was remembered";
}

// A background round whose every key began syncing on the request path in between calls
// Redis for nothing, so it leaves a half-open breaker half-open (its probe free for the next
// call) instead of closing it. Redis is stuck meanwhile: closed, the breaker would let
// every decision wait out the timeout. The request's sync starts when the round asks the
// breaker (its clock's hook), and the round goes on once the key is marked syncing (the
// store's clock, read then); a frozen Redis keeps that sync under way until thawed.
TEST_F(RedisSyncTest, ARoundWithNothingLeftToSyncDoesNotCloseAHalfOpenBreaker) {
  auto breaker_clock = std::make_shared<HookClock>(1'000'000'000'000);
  auto breaker = std::make_shared<CircuitBreaker>(CircuitBreakerOptions{1, 1000}, breaker_clock);
  auto store_clock = std::make_shared<HookClock>(1'000'000'000'000);
  redis::ClientOptions client;
  client.seeds = {server_->address()};
  client.timeout_ms = 60'000;  // the request's sync lasts until the thaw
  client.pool_size = 4;
  RedisStoreOptions options;
  options.virtual_time = true;
  options.keeps_debt = true;
  SyncStore store(
      std::make_unique<RedisStore>(std::make_shared<redis::Client>(client), "sync",
                                   fixedWindow(100, 600'000), options),
      [] { return int64_t{1}; }, breaker, store_clock, SyncOptions{200, 1000, false});
  ASSERT_TRUE(store.decide("k", store_clock->nowNs(), 1)->allowed());  // "k" is active
  breaker->onFailure(false);                                           // opens it
  breaker_clock->advanceMs(1001);                                      // the next call is the probe
  server_->freeze();

  // its share gone stale by then, the key is synced on the request path
  const int64_t stale_ns = store_clock->nowNs() + 10'000'000'000;
  std::thread request;
  breaker_clock->once([&] {
    auto syncing = std::make_shared<std::promise<void>>();
    std::future<void> marked = syncing->get_future();
    store_clock->once([syncing] { syncing->set_value(); });
    request = std::thread([&store, stale_ns] { (void)store.decide("k", stale_ns, 1); });
    marked.wait();
  });
  EXPECT_TRUE(store.syncNow().ok());
  EXPECT_NE(breaker->state(), BreakerState::kClosed) << "closed with no call to Redis";
  server_->thaw();
  if (request.joinable()) request.join();
  // the probe was given back: the next round asks Redis, which answers, and closes it
  ASSERT_TRUE(store.syncNow().ok());
  EXPECT_EQ(breaker->state(), BreakerState::kClosed);
}

TEST_F(RedisSyncTest, AnOutageFollowsEachFailureModeAndRecovers) {
  HttpConfig config;
  config.store.type = "redis";
  config.store.address = server_->address().text();
  config.store.timeout_ms = 100;
  config.store.instances = 2;
  config.store.breaker_failures = 1;
  config.store.breaker_open_ms = 100;
  PolicyConfig api;
  api.name = "api";
  api.match.path_prefix = "/api";
  api.algorithm = fixedWindow(20, 600'000);
  api.failure_mode = FailureMode::kOpen;
  api.sync.enabled = true;
  api.sync.interval_ms = 50;
  PolicyConfig login = api;
  login.name = "login";
  login.match.path_prefix = "/login";
  login.failure_mode = FailureMode::kClosed;
  config.policies = {api, login};
  auto made = Limiter::create(config, std::make_shared<SteadyClock>());
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  auto check = [&](std::string_view path, std::string_view ip) {
    return limiter.check(RequestInfo{"GET", path, ip, {}, {}, {}});
  };
  EXPECT_TRUE(check("/api", "192.0.2.1").allowed());
  EXPECT_TRUE(check("/login", "192.0.2.1").allowed());

  server_->freeze();  // mid-sync, as likely as not
  auto& breaker = dynamic_cast<FailoverStore&>(limiter.store(0)).breaker();
  // A sync (every 50 ms) or a new key's grant times out and opens the breaker (failures: 1).
  const auto until = steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; breaker.state() == BreakerState::kClosed && steady_clock::now() < until; ++i) {
    check("/api", "198.51.100." + std::to_string(i % 250));
  }
  ASSERT_NE(breaker.state(), BreakerState::kClosed);
  // closed: rejected while Redis cannot answer; open: the local share of 20 / 2.
  Verdict refused = check("/login", "192.0.2.9");
  EXPECT_EQ(refused.binding.outcome, Outcome::kStoreUnavailable);
  int admitted = 0;
  for (int i = 0; i < 30; ++i) admitted += check("/api", "192.0.2.9").allowed();
  EXPECT_LE(admitted, 10);
  EXPECT_GT(admitted, 0);

  server_->thaw();
  const auto back = steady_clock::now() + std::chrono::seconds(10);
  bool recovered = false;
  while (!recovered && steady_clock::now() < back) {
    recovered = check("/login", "192.0.2.10").allowed();
    if (!recovered) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(recovered);
}

}  // namespace
}  // namespace floodgate::http
