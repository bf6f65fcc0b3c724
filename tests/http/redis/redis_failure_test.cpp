// SPDX-License-Identifier: MIT
// Redis killed mid-run and restarted, and Redis frozen: each policy's failure mode decides,
// decisions keep coming while Redis answers nothing, nothing crashes, and service recovers.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/redis_store.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::RedisServer;

constexpr int64_t kTimeoutMs = 100;
// How long a frozen Redis is given to show that decisions go on without it: 100 times the
// timeout. A decision that waited for Redis itself, not for its timeout, would still be
// waiting when this runs out; one that keeps to the timeout lets the tests go on at once.
constexpr milliseconds kStall{10'000};

class RedisFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
    HttpConfig config;
    config.store.type = "redis";
    config.store.address = server_->address().text();
    config.store.timeout_ms = kTimeoutMs;
    config.store.instances = 2;
    config.store.breaker_failures = 2;
    config.store.breaker_open_ms = 200;
    PolicyConfig api;  // open: an outage admits through a local share of the limit
    api.name = "api";
    api.match.path_prefix = "/api";
    api.algorithm.kind = AlgorithmKind::kFixedWindow;
    api.algorithm.limit = 20;
    api.algorithm.window_ms = 600'000;
    api.failure_mode = FailureMode::kOpen;
    PolicyConfig login = api;  // closed: an outage rejects
    login.name = "login";
    login.match.path_prefix = "/login";
    login.failure_mode = FailureMode::kClosed;
    config.policies = {api, login};
    auto made = Limiter::create(config, std::make_shared<SteadyClock>());
    ASSERT_TRUE(made.ok()) << made.error().message;
    limiter_ = std::move(*made);
  }

  Verdict check(std::string_view path, std::string_view ip = "192.0.2.1") {
    return limiter_->check(RequestInfo{"GET", path, ip, {}, {}, {}});
  }
  FailoverStore& store(size_t policy) {
    return dynamic_cast<FailoverStore&>(limiter_->store(policy));
  }
  int64_t storeErrors() { return store(0).stats().store_errors + store(1).stats().store_errors; }

  // Polls until `pred` holds or `limit` has passed (recovery waits for the breaker's probe).
  template <class Pred>
  bool eventually(Pred pred, milliseconds limit = milliseconds(10'000)) {
    auto until = steady_clock::now() + limit;
    while (!pred()) {
      if (steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return true;
  }

  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<Limiter> limiter_;
};

TEST_F(RedisFailureTest, KilledAndRestartedRedisFollowsEachPolicysFailureMode) {
  EXPECT_TRUE(check("/api").allowed());
  EXPECT_TRUE(check("/login").allowed());

  server_->kill();
  // closed: every login is refused while the store cannot answer.
  for (int i = 0; i < 5; ++i) {
    Verdict v = check("/login");
    EXPECT_FALSE(v.allowed());
    EXPECT_EQ(v.binding.outcome, Outcome::kStoreUnavailable);
  }
  // open: admitted through the local fallback, which holds 20 / 2 instances = 10 per window.
  int admitted = 0;
  for (int i = 0; i < 30; ++i) admitted += check("/api").allowed();
  EXPECT_EQ(admitted, 10);
  EXPECT_EQ(store(0).breaker().state(), BreakerState::kOpen);
  FailoverStats api = store(0).stats();
  FailoverStats login = store(1).stats();
  EXPECT_GE(api.store_errors + login.store_errors, 2);  // then the breaker stopped the calls
  EXPECT_EQ(api.fallback_allowed, 10);
  EXPECT_EQ(api.fallback_rejected, 20);
  EXPECT_EQ(login.failed_closed, 5);

  ASSERT_TRUE(server_->restart());  // empty: no state, no functions (loaded again)
  EXPECT_TRUE(eventually([&] { return check("/login").allowed(); }));
  EXPECT_EQ(store(1).breaker().state(), BreakerState::kClosed);
  // Back on Redis: the new server counts from zero, so the full limit is there again.
  int after = 0;
  for (int i = 0; i < 25; ++i) after += check("/api", "192.0.2.2").allowed();
  EXPECT_EQ(after, 20);
}

// A request the fallback admitted during an outage and refunded after it (a 400 costing less,
// from another thread, as an async server refunds) gives its unit back to the fallback that
// took it: sent to Redis, it would hand the fleet a unit Redis never charged.
TEST_F(RedisFailureTest, ARefundOfAFallbackAdmissionNeverReachesRedis) {
  server_->kill();
  Verdict during = check("/api");
  ASSERT_TRUE(during.allowed());
  ASSERT_EQ(store(0).stats().fallback_allowed, 1);

  ASSERT_TRUE(server_->restart());
  // another key's checks carry the breaker's probe once it is due
  ASSERT_TRUE(eventually([&] {
    check("/api", "198.51.100.1");
    return store(0).breaker().state() == BreakerState::kClosed;
  }));
  int admitted = 0;
  for (int i = 0; i < 25; ++i) admitted += check("/api").allowed();
  ASSERT_EQ(admitted, 20) << "Redis holds the whole limit for the key again";

  std::thread([&] { limiter_->refund(during, 0); }).join();
  EXPECT_FALSE(check("/api").allowed()) << "the refund gave Redis a unit it never took";
}

TEST_F(RedisFailureTest, FrozenRedisNeverStallsDecisions) {
  EXPECT_TRUE(check("/api").allowed());
  // Redis answers nothing from here until thaw(), however long that takes, so every call
  // to it that comes back before then was ended by the client's timeout.
  server_->freeze();
  int64_t errors_before = storeErrors();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> checks{0};
  std::atomic<int64_t> login_admitted{0};
  std::atomic<int64_t> api_admitted{0};
  std::thread requests([&] {
    while (!stop.load()) {
      login_admitted += check("/login").allowed();
      api_admitted += check("/api", "192.0.2.9").allowed();
      ++checks;
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  // Progress while frozen: a few calls to Redis (the first two, then the breaker's probes)
  // came back, and the requests around them were decided.
  bool progressed =
      eventually([&] { return storeErrors() >= errors_before + 4 && checks.load() >= 20; }, kStall);
  // Read before the thaw: these are the decisions made while Redis answered nothing.
  int64_t checks_frozen = checks.load();
  int64_t errors_frozen = storeErrors() - errors_before;
  int64_t login_frozen = login_admitted.load();
  int64_t api_frozen = api_admitted.load();
  stop.store(true);
  server_->thaw();
  requests.join();
  EXPECT_TRUE(progressed) << "decisions stalled behind a frozen Redis: " << checks_frozen
                          << " rounds of checks and " << errors_frozen << " store errors in "
                          << kStall.count() << " ms";
  EXPECT_EQ(login_frozen, 0);  // closed: refused while the store cannot answer
  // Admitted by the local fallback, within its share (20 / 2 instances).
  EXPECT_GE(api_frozen, 1);
  EXPECT_LE(api_frozen, 10);
  EXPECT_TRUE(eventually([&] { return check("/login").allowed(); }));
}

TEST_F(RedisFailureTest, ManyThreadsThroughAnOutageNeitherCrashNorHang) {
  constexpr int kThreads = 8;
  std::atomic<bool> stop{false};
  std::array<std::atomic<int64_t>, kThreads> decided{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A new client on every request: a client over its limit is answered from the known
      // rejections without a call to Redis, and each decision here must be one that asks.
      for (int64_t n = 0; !stop.load(); ++n) {
        std::string ip = "10." + std::to_string(t) + "." + std::to_string((n >> 8) & 255) + "." +
                         std::to_string(n & 255);
        limiter_->check(RequestInfo{"GET", t % 2 ? "/api" : "/login", ip, {}, {}, {}});
        ++decided[t];
      }
    });
  }
  // Whether every thread decides `n` more requests than it had when this was called,
  // within `limit`.
  auto everyThreadDecides = [&](int64_t n, milliseconds limit) {
    std::array<int64_t, kThreads> from{};
    for (int t = 0; t < kThreads; ++t) from[t] = decided[t].load();
    return eventually(
        [&] {
          for (int t = 0; t < kThreads; ++t) {
            if (decided[t].load() < from[t] + n) return false;
          }
          return true;
        },
        limit);
  };
  EXPECT_TRUE(everyThreadDecides(1, milliseconds(10'000)));

  // Frozen: every thread goes on deciding while Redis answers nothing, its calls ended by
  // the timeout; judged before the kill, which would end a call that waited for Redis.
  server_->freeze();
  int64_t errors_before = storeErrors();
  bool progressed_frozen = everyThreadDecides(5, kStall);
  bool frozen_calls_returned = storeErrors() >= errors_before + 2;
  // Then dead (the kill ends a frozen server too), and back.
  server_->kill();
  bool progressed_dead = everyThreadDecides(5, kStall);
  ASSERT_TRUE(server_->restart());
  EXPECT_TRUE(eventually([&] { return check("/login", "203.0.113.1").allowed(); }));
  stop.store(true);
  for (auto& t : threads) t.join();
  EXPECT_TRUE(progressed_frozen) << "a thread stalled behind a frozen Redis";
  EXPECT_TRUE(frozen_calls_returned);
  EXPECT_TRUE(progressed_dead) << "a thread stalled behind a dead Redis";
}

TEST_F(RedisFailureTest, WritingToADeadServerIsAnErrorNotSigpipe) {
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.timeout_ms = 1000;
  auto client = std::make_shared<redis::Client>(options);
  AlgorithmParams p;
  p.kind = AlgorithmKind::kGcra;
  p.capacity = 10;
  p.rate_per_s = 1;
  RedisStore store(client, "pipe", p);
  ASSERT_TRUE(store.decide("k", 0, 1).ok());  // leaves a pooled connection to the server
  server_->kill();
  // A pipeline far bigger than the socket buffer keeps writing after the peer reset it;
  // SIGPIPE would end this process, the answer must be an error instead.
  std::vector<std::string> keys(20'000, std::string(64, 'k'));
  std::vector<RedisStore::Request> batch;
  for (const std::string& key : keys) batch.push_back({key, 1, 0});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(store.decideMany(batch, 0).ok());
}

}  // namespace
}  // namespace floodgate::http
