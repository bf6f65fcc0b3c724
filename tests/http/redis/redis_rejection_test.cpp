// SPDX-License-Identifier: MIT
// A key Redis rejected is rejected locally until its retry: few calls, exact admitted totals.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/store_factory.h"
#include "floodgate/stores/memory_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::RedisServer;
using testing::window;

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1'000'000;

// Scripts the server has run so far (each decision and each refund is one FCALL; a function
// the server had not loaded costs two, the FCALL answered "Function not found" and again).
int64_t scriptCalls(const RedisServer& server) {
  auto info = server.command({"INFO", "commandstats"});
  EXPECT_TRUE(info.ok());
  if (!info) return -1;
  int64_t calls = 0;
  for (std::string_view name :
       {"cmdstat_fcall:calls=", "cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
    size_t at = info->str.find(name);
    if (at != std::string::npos) calls += std::stoll(info->str.substr(at + name.size()));
  }
  return calls;
}

class RedisRejectionTest : public testing::RedisServerTest {
 protected:
  // A closed-mode failover store over a Redis store on the virtual time it is given.
  std::unique_ptr<FailoverStore> store(const AlgorithmParams& params, const std::string& policy) {
    RedisStoreOptions options;
    options.virtual_time = true;
    auto breaker =
        std::make_shared<CircuitBreaker>(CircuitBreakerOptions{}, std::make_shared<SteadyClock>());
    return std::make_unique<FailoverStore>(
        std::make_unique<RedisStore>(client_, policy, params, options), nullptr,
        FailureMode::kClosed, std::move(breaker));
  }

  int64_t scriptCalls() const { return http::scriptCalls(*server_); }

  // A store on Redis's clock counts a fixed window of a minute from the minute's start on
  // this machine's clock: begins more than 5 s before the next one, so a test that counts
  // down a retry within one window never meets its end, however slowly the machine runs.
  static void startWellInsideAMinute() {
    using namespace std::chrono;
    const int64_t ms = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    const int64_t left = 60'000 - ms % 60'000;
    if (left < 5'000) std::this_thread::sleep_for(milliseconds(left + 100));
  }
};

TEST_F(RedisRejectionTest, TenThousandRequestsOfARejectedKeyCostAHandfulOfCalls) {
  HttpConfig config;
  config.store.type = "redis";
  config.store.address = server_->address().text();
  config.store.timeout_ms = 2000;
  config.retry_after_jitter = 0;  // the exact wait, which the cache answers with
  PolicyConfig api;
  api.name = "api";
  api.key = {KeyKind::kHeader, "X-API-Key"};
  api.algorithm = window(AlgorithmKind::kFixedWindow, 5, 60'000);
  api.failure_mode = FailureMode::kClosed;
  PolicyConfig per_ip;  // decided in the same round trip as "api"
  per_ip.name = "ip";
  per_ip.algorithm = window(AlgorithmKind::kFixedWindow, 100, 60'000);
  config.policies = {api, per_ip};
  auto clock = std::make_shared<ManualClock>(1'000'000 * kMs);
  // Heartbeats are script calls too: this instance's membership beats only when told to.
  FleetMembershipOptions membership;
  membership.heartbeat_ms = 0;
  auto made = Limiter::create(
      config, clock,
      makeStoreFactory(config.store, clock,
                       std::make_shared<FleetMembership>(client_, membership, clock)));
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  auto request = [&](std::string_view key, std::string_view ip) {
    return limiter.check(RequestInfo{"GET", "/", ip, {{"X-API-Key", key}}, {}, {}});
  };

  startWellInsideAMinute();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(request("hot", "192.0.2.1").allowed());
  const int64_t before = scriptCalls();
  // Redis's answer: one script for both policies, which charges "ip" nothing (no refund).
  Verdict first = request("hot", "192.0.2.1");
  ASSERT_FALSE(first.allowed());
  ASSERT_EQ(first.binding.policy, "api");
  ASSERT_GT(first.binding.retry_after_ns, 10'000 * 50 * kUs) << "the window outlasts the test";
  const int64_t after_first = scriptCalls();

  // 10,000 more over 0.5 s (Redis's window has about a minute to go), each from another
  // address: every one is rejected here, with the same headers counting down.
  int64_t last_retry_ns = first.binding.retry_after_ns;
  for (int i = 0; i < 10'000; ++i) {
    clock->advanceNs(50 * kUs);
    std::string ip = "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250);
    Verdict v = request("hot", ip);
    ASSERT_FALSE(v.allowed()) << i;
    ASSERT_EQ(v.binding.outcome, Outcome::kRejected);
    ASSERT_EQ(v.binding.policy, "api");
    ASSERT_EQ(v.binding.remaining, 0);
    ASSERT_EQ(v.binding.limit, 5);
    ASSERT_EQ(v.binding.retry_after_ns, last_retry_ns - 50 * kUs) << i;
    last_retry_ns = v.binding.retry_after_ns;
    // only the policy known to reject is in the verdict: "ip" was not asked
    ASSERT_EQ(v.decisions.size(), 1u);
    ASSERT_EQ(v.violated, std::vector<std::string_view>{"api"});
  }
  EXPECT_EQ(scriptCalls(), after_first) << "not one call for 10,000 requests";
  // in all: one script for both decisions and no refund (its first use on this server may
  // cost an FCALL answered "Function not found", and the FCALL again)
  EXPECT_LE(scriptCalls() - before, 2);
  EXPECT_EQ(dynamic_cast<FailoverStore&>(limiter.store(0)).stats().rejected_locally, 10'000);

  // Nothing was taken from "ip" by the rejected requests: an address of the flood, with a
  // key of its own, has all of its limit but this request.
  Verdict other = request("other-key", "10.0.3.7");
  ASSERT_TRUE(other.allowed());
  ASSERT_EQ(other.decisions.size(), 2u);
  EXPECT_EQ(other.decisions[1].decision.remaining, 99);
  EXPECT_EQ(request("other-key", "192.0.2.1").decisions[1].decision.remaining, 100 - 5 - 1);
}

TEST_F(RedisRejectionTest, AfterTheRetryTheNextRequestGoesToRedis) {
  auto failover = store(window(AlgorithmKind::kFixedWindow, 3, 1000), "window");
  const int64_t window_start = 1'000'000 * kMs;  // whole seconds: a window starts here
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(failover->decide("k", window_start, 1)->allowed());
  int64_t calls = scriptCalls();
  Decision rejected = *failover->decide("k", window_start + 200 * kMs, 1);
  ASSERT_EQ(rejected.outcome, Outcome::kRejected);
  EXPECT_EQ(rejected.retry_after_ns, 800 * kMs);
  EXPECT_EQ(scriptCalls() - calls, 1);
  for (int64_t t = 201; t < 1000; ++t) {
    Decision d = *failover->decide("k", window_start + t * kMs, 1);
    ASSERT_EQ(d.outcome, Outcome::kRejected) << t;
    ASSERT_EQ(d.retry_after_ns, (1000 - t) * kMs) << t;
  }
  EXPECT_EQ(scriptCalls() - calls, 1) << "799 requests answered here";
  // the window has turned: Redis decides again, and admits
  EXPECT_TRUE(failover->decide("k", window_start + 1000 * kMs, 1)->allowed());
  EXPECT_EQ(scriptCalls() - calls, 2);
}

// A client whose key Redis rejected alternates routes of cost 1 and 20: one call per cost,
// then every request is rejected here, where one answer held per key would be replaced at
// every request and send each one to Redis.
TEST_F(RedisRejectionTest, AlternatingCostsCostOneCallPerCost) {
  auto failover = store(window(AlgorithmKind::kFixedWindow, 20, 60'000), "alternating");
  const int64_t window_start = 20'000 * 60'000 * kMs;  // whole minutes: a window starts here
  ASSERT_TRUE(failover->decide("k", window_start, 20)->allowed());
  const int64_t calls = scriptCalls();
  for (int i = 0; i < 200; ++i) {
    const int64_t cost = i % 2 == 0 ? 1 : 20;
    Decision d = *failover->decide("k", window_start + (1 + i) * kMs, cost);
    ASSERT_EQ(d.outcome, Outcome::kRejected) << i;
    ASSERT_EQ(d.retry_after_ns, (60'000 - 1 - i) * kMs) << i;
  }
  EXPECT_EQ(scriptCalls() - calls, 2) << "198 requests answered here";
  EXPECT_EQ(failover->stats().rejected_locally, 198);
}

TEST_F(RedisRejectionTest, ARefundForgetsTheRejection) {
  auto failover = store(window(AlgorithmKind::kFixedWindow, 2, 1000), "refund");
  const int64_t t = 2'000'000 * kMs;
  ASSERT_TRUE(failover->decide("k", t, 1)->allowed());
  ASSERT_TRUE(failover->decide("k", t, 1)->allowed());
  ASSERT_FALSE(failover->decide("k", t, 1)->allowed());
  ASSERT_TRUE(failover->knownRejection("k", t, 1));
  // one admission is given back (another policy rejected its request): a unit is free again
  failover->refund("k", t, t, 1);
  EXPECT_FALSE(failover->knownRejection("k", t, 1));
  EXPECT_TRUE(failover->decide("k", t, 1)->allowed());
}

// Random bursts, costs 1-3 and refunds on a few keys, on whole µs: the store with its
// rejection cache decides exactly as the in-memory algorithm at every request, on fewer calls.
// `pattern` matches the store's keys.
void expectSameOnArrivals(const RedisServer& server, FailoverStore& failover,
                          const AlgorithmParams& params, uint32_t seed, int64_t origin_ns,
                          const std::string& pattern) {
  MemoryStore memory(*makeAlgorithm(params), MemoryStoreOptions{});
  std::mt19937 rng(seed);
  int64_t now_ns = origin_ns;
  int64_t admitted = 0;
  int64_t rejected = 0;
  // the server caches both scripts, so that every call below counts once
  ASSERT_TRUE(failover.decide("warm", origin_ns, 1)->allowed());
  failover.refund("warm", origin_ns, origin_ns, 1);
  // The arrivals are decided by their clock alone: a key the scripts wrote to expire 1 ms
  // (real time) later must not vanish before the next arrival, or the refund, of the same
  // virtual instant when the machine is slow. Each persist is one EVAL, a script call.
  int64_t persists = 0;
  auto persist = [&] {
    Status persisted = server.persistKeys({pattern});
    ASSERT_TRUE(persisted) << persisted.error().message;
    ++persists;
  };
  const int64_t calls_before = scriptCalls(server);
  int64_t refunds = 0;
  for (int i = 0; i < 2000; ++i) {
    now_ns += rng() % 8 != 0 ? static_cast<int64_t>(rng() % 3000) * kUs
                             : static_cast<int64_t>(rng() % 700) * kMs;
    std::string key = "k" + std::to_string(rng() % 3);
    int64_t cost = 1 + static_cast<int64_t>(rng() % 3);
    std::string where = std::string(algorithmName(params.kind)) + " #" + std::to_string(i);
    Decision m = *memory.decide(key, now_ns, cost);
    auto r = failover.decide(key, now_ns, cost);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_NO_FATAL_FAILURE(persist());
    ASSERT_EQ(m.outcome, r->outcome) << where;
    if (!m.allowed()) {
      EXPECT_GE(r->retry_after_ns, m.retry_after_ns) << where;
      EXPECT_LT(r->retry_after_ns, m.retry_after_ns + kUs) << where;
    }
    (m.allowed() ? admitted : rejected) += cost;
    if (m.allowed() && rng() % 7 == 0) {
      memory.refund(key, now_ns, now_ns, cost);
      failover.refund(key, now_ns, now_ns, cost);
      ASSERT_NO_FATAL_FAILURE(persist());
      admitted -= cost;
      ++refunds;
    }
  }
  EXPECT_GT(admitted, 500) << algorithmName(params.kind);
  EXPECT_GT(rejected, 500) << algorithmName(params.kind);
  // fewer calls than requests and refunds: some rejections were answered here
  EXPECT_GT(failover.stats().rejected_locally, 100) << algorithmName(params.kind);
  EXPECT_EQ(scriptCalls(server) - calls_before - persists,
            2000 + refunds - failover.stats().rejected_locally)
      << algorithmName(params.kind);
}

TEST_F(RedisRejectionTest, AdmittedTotalsStayExactForEveryAlgorithm) {
  const AlgorithmParams all[] = {
      window(AlgorithmKind::kFixedWindow, 10, 1000),
      window(AlgorithmKind::kSlidingWindowLog, 10, 1000),
      window(AlgorithmKind::kSlidingWindowCounter, 10, 1000),
      bucket(AlgorithmKind::kTokenBucket, 10, 7.5),
      // 1e9 / rate_milli whole (µs per unit), as the scripts need to match to the ns
      bucket(AlgorithmKind::kGcra, 10, 8),
      bucket(AlgorithmKind::kLeakyBucket, 10, 8),
  };
  uint32_t seed = 1;
  for (const AlgorithmParams& params : all) {
    const std::string policy(algorithmName(params.kind));
    auto failover = store(params, policy);
    expectSameOnArrivals(*server_, *failover, params, seed++, 3'000'000 * kMs,
                         "fg:{" + policy + ":*");
  }
}

}  // namespace
}  // namespace floodgate::http
