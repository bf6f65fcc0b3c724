// SPDX-License-Identifier: MIT
// Redis killed mid-run and restarted, and Redis made slow: each policy's failure mode
// decides, decisions stay within the timeout, nothing crashes, and service recovers.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "http/failover_store.h"
#include "http/limiter.h"
#include "http/redis_store.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::RedisServer;

constexpr int64_t kTimeoutMs = 100;
// Decision latency must stay under the timeout plus this (scheduling on a busy 2-core VM);
// without a bound, a slow Redis would stall every request thread.
constexpr int64_t kMarginMs = 400;

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

  // Checks one request, and that the answer came within the timeout (plus a margin).
  Verdict check(std::string_view path, std::string_view ip = "192.0.2.1") {
    auto start = steady_clock::now();
    Verdict v = limiter_->check(RequestInfo{"GET", path, ip, {}, {}});
    auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start).count();
    EXPECT_LE(took, kTimeoutMs + kMarginMs) << path;
    return v;
  }
  FailoverStore& store(size_t policy) {
    return dynamic_cast<FailoverStore&>(limiter_->store(policy));
  }

  // Retries until `pred` holds or 10 s pass (recovery waits for the breaker's probe).
  template <class Pred>
  bool eventually(Pred pred) {
    for (int i = 0; i < 200; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
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

  ASSERT_TRUE(server_->restart());  // empty: no state, no scripts (NOSCRIPT → EVAL)
  EXPECT_TRUE(eventually([&] { return check("/login").allowed(); }));
  EXPECT_EQ(store(1).breaker().state(), BreakerState::kClosed);
  // Back on Redis: the new server counts from zero, so the full limit is there again.
  int after = 0;
  for (int i = 0; i < 25; ++i) after += check("/api", "192.0.2.2").allowed();
  EXPECT_EQ(after, 20);
}

TEST_F(RedisFailureTest, SlowRedisStillAnswersWithinTheTimeout) {
  EXPECT_TRUE(check("/api").allowed());
  // CLIENT PAUSE stalls every client of the server, as a long-running command would; the
  // stall is in force when the command returns, so no guess at a start-up time is needed,
  // and it outlasts the loop below by more than one round of checks.
  ASSERT_TRUE(server_->command({"CLIENT", "PAUSE", "2500", "ALL"}).ok());
  auto until = steady_clock::now() + milliseconds(1200);
  int checks = 0;
  int api_admitted = 0;
  while (steady_clock::now() < until) {
    Verdict login = check("/login");  // check() asserts the latency bound
    EXPECT_FALSE(login.allowed());
    api_admitted += check("/api", "192.0.2.9").allowed();
    ++checks;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_GT(checks, 10);
  // Admitted by the local fallback, within its share (20 / 2 instances).
  EXPECT_GE(api_admitted, 1);
  EXPECT_LE(api_admitted, 10);
  EXPECT_GE(store(0).stats().store_errors + store(1).stats().store_errors, 2);
  EXPECT_TRUE(eventually([&] { return check("/login").allowed(); }));
}

TEST_F(RedisFailureTest, ManyThreadsThroughAnOutageNeitherCrashNorHang) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> slow{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::string ip = "198.51.100." + std::to_string(t);
      while (!stop.load()) {
        auto start = steady_clock::now();
        limiter_->check(RequestInfo{"GET", t % 2 ? "/api" : "/login", ip, {}, {}});
        if (steady_clock::now() - start > milliseconds(kTimeoutMs + kMarginMs)) slow.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(200));
  server_->kill();
  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_TRUE(server_->restart());
  EXPECT_TRUE(eventually([&] { return check("/login", "203.0.113.1").allowed(); }));
  stop.store(true);
  for (auto& t : threads) t.join();
  EXPECT_EQ(slow.load(), 0);
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
