// SPDX-License-Identifier: MIT
// A request's Redis policies decided in one script run, all or nothing: the same decisions
// as one script per policy with refunds, one FCALL per request, and hostile cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/scripts.h"
#include "floodgate/redis/store_factory.h"
#include "floodgate/stores/local_share_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::calls;
using testing::RedisCluster;
using testing::RedisServer;
using testing::stateField;
using testing::window;

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1'000'000;

// Every algorithm, with limits small enough that the arrivals below are often refused, on
// whole µs per unit (the scripts then match the in-memory algorithms to the ns).
std::vector<AlgorithmParams> everyAlgorithm() {
  return {
      window(AlgorithmKind::kFixedWindow, 8, 1000),
      window(AlgorithmKind::kSlidingWindowLog, 8, 1000),
      window(AlgorithmKind::kSlidingWindowCounter, 8, 1000),
      bucket(AlgorithmKind::kTokenBucket, 8, 7.5),
      bucket(AlgorithmKind::kGcra, 8, 8),
      bucket(AlgorithmKind::kLeakyBucket, 8, 8),
  };
}

// Three policies every request meets: per IP, per API key (X-API-Key; a /big request costs
// 3 there) and per user.
HttpConfig threePolicies(const AlgorithmParams& ip, const AlgorithmParams& api,
                         const AlgorithmParams& user, FailureMode api_mode = FailureMode::kClosed) {
  HttpConfig config;
  config.retry_after_jitter = 0;
  PolicyConfig per_ip;
  per_ip.name = "per-ip";
  per_ip.algorithm = ip;
  per_ip.failure_mode = FailureMode::kClosed;
  PolicyConfig per_key;
  per_key.name = "per-key";
  per_key.key = {KeyKind::kHeader, "X-API-Key"};
  per_key.algorithm = api;
  per_key.routes = {{RouteMatch{{}, "/big"}, 3}};
  per_key.failure_mode = api_mode;
  PolicyConfig per_user;
  per_user.name = "per-user";
  per_user.key = {KeyKind::kUser, ""};
  per_user.algorithm = user;
  per_user.failure_mode = FailureMode::kClosed;
  config.policies = {per_ip, per_key, per_user};
  return config;
}

struct Arrival {
  std::string path, ip, api_key, user;
};

// A limiter on `config`'s Redis store (`server`), as a service makes it: the store factory
// with a fleet membership of its own that sends no heartbeat.
Result<std::unique_ptr<Limiter>> redisStoreLimiter(const HttpConfig& config,
                                                   const RedisServer& server) {
  auto clock = std::make_shared<SteadyClock>();
  FleetMembershipOptions membership;
  membership.heartbeat_ms = 0;
  redis::ClientOptions options;
  options.seeds = {server.address()};
  return Limiter::create(
      config, clock,
      makeStoreFactory(config.store, clock,
                       std::make_shared<FleetMembership>(std::make_shared<redis::Client>(options),
                                                         membership, clock)));
}

Verdict check(Limiter& limiter, const Arrival& a) {
  return limiter.check(RequestInfo{"GET", a.path, a.ip, {{"X-API-Key", a.api_key}}, a.user, {}});
}

class RedisTogetherTest : public testing::RedisServerTest {
 protected:
  void SetUp() override {
    RedisServerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(server_->command({"CONFIG", "RESETSTAT"}));
  }

  // Redis stores on the limiter's virtual clock under `prefix`: with `together`, failover
  // stores whose policies are decided together (closed mode, or open with a local share of
  // the whole limit; no rejection cache, so every request reaches Redis); without, plain
  // Redis stores, one script per policy and refunds after, as before batching.
  StoreFactory factory(const std::string& prefix, bool together) {
    auto breaker =
        std::make_shared<CircuitBreaker>(CircuitBreakerOptions{}, std::make_shared<SteadyClock>());
    return [this, prefix, together, breaker](
               const PolicyConfig& policy,
               std::shared_ptr<const Algorithm> /*algorithm*/) -> std::unique_ptr<Store> {
      RedisStoreOptions options;
      options.prefix = prefix;
      options.virtual_time = true;
      auto redis = std::make_unique<RedisStore>(client_, policy.name, policy.algorithm, options);
      if (!together) return redis;
      std::unique_ptr<Store> fallback;
      if (policy.failure_mode == FailureMode::kOpen) {
        fallback = std::make_unique<LocalShareStore>(
            policy.algorithm, [] { return int64_t{1}; }, MemoryStoreOptions{});
      }
      return std::make_unique<FailoverStore>(std::move(redis), std::move(fallback),
                                             policy.failure_mode, breaker,
                                             RejectionCacheOptions{10'000, 0});
    };
  }

  std::unique_ptr<Limiter> limiter(const HttpConfig& config, std::shared_ptr<ManualClock> clock,
                                   StoreFactory stores = {}) {
    auto made = Limiter::create(config, std::move(clock), std::move(stores));
    EXPECT_TRUE(made.ok()) << made.error().message;
    return made ? std::move(*made) : nullptr;
  }

  // A limiter of `config` whose Redis policies are decided together, under `prefix`, on
  // clock_ (virtual, stepped by the test).
  std::unique_ptr<Limiter> together(const HttpConfig& config, const std::string& prefix) {
    return limiter(config, clock_, factory(prefix, true));
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(5'000'000 * kMs);
};

// The same arrivals through three limiters: Redis policies decided together, one script per
// policy with refunds (as before), and memory. Together and one by one agree on every field
// of every decision; memory on every outcome. And together costs one FCALL per request.
TEST_F(RedisTogetherTest, TogetherDecidesAsOneByOneForEveryAlgorithmInOneScriptPerRequest) {
  const std::vector<AlgorithmParams> all = everyAlgorithm();
  for (size_t first = 0; first < all.size(); ++first) {
    // every algorithm in every place (per IP, per key, per user) once
    HttpConfig config =
        threePolicies(all[first], all[(first + 1) % all.size()], all[(first + 2) % all.size()]);
    const std::string name(algorithmName(all[first].kind));
    auto clock = std::make_shared<ManualClock>(5'000'000 * kMs);
    auto together = limiter(config, clock, factory("together-" + name, true));
    auto one_by_one = limiter(config, clock, factory("each-" + name, false));
    auto memory = limiter(config, clock);
    ASSERT_TRUE(together && one_by_one && memory);
    std::mt19937 rng(static_cast<uint32_t>(first + 1));
    int requests = 0, refused = 0, partly_admitted = 0, refunds = 0;
    const int64_t fcall_before = calls(*server_, "fcall");
    const int64_t load_before = calls(*server_, "function|load");
    auto last = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
      // Redis expires keys on its own clock: the virtual one must never fall behind it, or
      // a state would vanish before it equals an absent key (which a slow moment can cause
      // when a step is shorter than the time the previous request took).
      const auto now = std::chrono::steady_clock::now();
      const int64_t real_us =
          std::chrono::duration_cast<std::chrono::microseconds>(now - last).count() + 1;
      last = now;
      clock->advanceNs(std::max(real_us * kUs, rng() % 8 != 0
                                                   ? static_cast<int64_t>(rng() % 3000) * kUs
                                                   : static_cast<int64_t>(rng() % 400) * kMs));
      Arrival a{rng() % 4 == 0 ? "/big" : "/", "192.0.2." + std::to_string(rng() % 3),
                "key-" + std::to_string(rng() % 2), "user-" + std::to_string(rng() % 3)};
      const std::string where = name + " #" + std::to_string(i);
      Verdict t = check(*together, a);
      Verdict e = check(*one_by_one, a);
      Verdict m = check(*memory, a);
      ++requests;
      ASSERT_EQ(t.allowed(), e.allowed()) << where;
      ASSERT_EQ(t.allowed(), m.allowed()) << where;
      ASSERT_EQ(t.violated, e.violated) << where;
      ASSERT_EQ(t.binding.policy, e.binding.policy) << where;
      ASSERT_EQ(t.binding.remaining, e.binding.remaining) << where;
      ASSERT_EQ(t.binding.retry_after_ns, e.binding.retry_after_ns) << where;
      ASSERT_EQ(t.binding.reset_ns, e.binding.reset_ns) << where;
      ASSERT_EQ(t.binding.delay_ns, e.binding.delay_ns) << where;
      ASSERT_EQ(t.decisions.size(), 3u) << where;
      ASSERT_EQ(e.decisions.size(), 3u) << where;
      for (size_t p = 0; p < 3; ++p) {
        const PolicyDecision& td = t.decisions[p];
        const PolicyDecision& ed = e.decisions[p];
        const std::string at = where + " policy " + std::to_string(p);
        ASSERT_EQ(td.decision.outcome, ed.decision.outcome) << at;
        ASSERT_EQ(td.decision.outcome, m.decisions[p].decision.outcome) << at;
        ASSERT_EQ(td.decision.remaining, ed.decision.remaining) << at;
        ASSERT_EQ(td.decision.reset_ns, ed.decision.reset_ns) << at;
        ASSERT_EQ(td.decision.retry_after_ns, ed.decision.retry_after_ns) << at;
        ASSERT_EQ(td.decision.delay_ns, ed.decision.delay_ns) << at;
        ASSERT_EQ(td.cost, ed.cost) << at;
        ASSERT_EQ(td.reserved, ed.reserved) << at;
      }
      if (!t.allowed()) {
        ++refused;
        partly_admitted += t.violated.size() < 3;
        for (const PolicyDecision& pd : e.decisions) refunds += pd.decision.allowed();
      }
      // The step above covers the real time since the last request began, not a check of
      // this one that ran later into it than its counterpart did last time (a slow round
      // trip of the together limiter delays the one-by-one check after it), so a key could
      // still vanish while its state differed from an absent key's. Taking every expiry
      // off between requests leaves the states to say when they are over, as they must.
      Status persisted = server_->persistKeys({"together-" + name + ":*", "each-" + name + ":*"});
      ASSERT_TRUE(persisted) << persisted.error().message;
    }
    EXPECT_GT(refused, 200) << name;
    EXPECT_GT(partly_admitted, 100) << name << ": refusals where some policy admitted";
    EXPECT_LT(refused, requests - 200) << name;
    // Together: one script run per request, refused or not. One by one: one per policy,
    // and a refund for each admission of a refused request. Each is one FCALL (the library is
    // loaded once, when the first FCALL does not find it; that FCALL runs again).
    EXPECT_EQ(calls(*server_, "fcall") - fcall_before,
              requests + 3 * requests + refunds + (calls(*server_, "function|load") - load_before))
        << name;
    EXPECT_LE(calls(*server_, "function|load") - load_before, 1) << name;
  }
}

// A request of the together limiter alone: exactly one FCALL per request, measured by the
// server's own command counts.
TEST_F(RedisTogetherTest, OneFcallPerRequestWhateverTheDecision) {
  HttpConfig config = threePolicies(bucket(AlgorithmKind::kGcra, 100, 1),
                                    bucket(AlgorithmKind::kTokenBucket, 5, 0.001),
                                    window(AlgorithmKind::kSlidingWindowCounter, 100, 60'000));
  auto limiter = together(config, "count");
  ASSERT_TRUE(limiter);
  Arrival a{"/", "192.0.2.1", "key", "user"};
  ASSERT_TRUE(check(*limiter, a).allowed());  // the library is loaded from here on
  const int64_t fcall_before = calls(*server_, "fcall");
  const int64_t load_before = calls(*server_, "function|load");
  int admitted = 0;
  for (int i = 0; i < 50; ++i) {
    clock_->advanceNs(kMs);
    admitted += check(*limiter, a).allowed();
  }
  EXPECT_EQ(admitted, 4) << "the API key's bucket holds 5";
  EXPECT_EQ(calls(*server_, "fcall") - fcall_before, 50) << "requests, not requests x 3";
  EXPECT_EQ(calls(*server_, "function|load") - load_before, 0);
  EXPECT_EQ(calls(*server_, "evalsha") + calls(*server_, "eval"), 0) << "no script ran";
}

// The API key's bucket refuses: the per-IP and per-user policies, which admitted, were not
// charged at all (their state in Redis is as before the request), and read as given back.
TEST_F(RedisTogetherTest, ARefusalByOnePolicyChargesNoneOfTheOthers) {
  HttpConfig config = threePolicies(window(AlgorithmKind::kFixedWindow, 10, 60'000),
                                    bucket(AlgorithmKind::kTokenBucket, 2, 0.001),
                                    window(AlgorithmKind::kSlidingWindowLog, 10, 60'000));
  auto limiter = together(config, "refuse");
  ASSERT_TRUE(limiter);
  Arrival a{"/", "192.0.2.1", "key", "user"};
  ASSERT_TRUE(check(*limiter, a).allowed());
  ASSERT_TRUE(check(*limiter, a).allowed());
  const int64_t fcall_before = calls(*server_, "fcall");
  for (int i = 0; i < 3; ++i) {
    Verdict v = check(*limiter, a);
    ASSERT_FALSE(v.allowed());
    EXPECT_EQ(v.violated, std::vector<std::string_view>{"per-key"});
    EXPECT_EQ(v.binding.policy, "per-key");
    EXPECT_EQ(v.binding.outcome, Outcome::kRejected);
    for (size_t p : {0u, 2u}) {
      EXPECT_TRUE(v.decisions[p].decision.allowed());
      EXPECT_FALSE(v.decisions[p].reserved) << "nothing to refund";
      EXPECT_EQ(v.decisions[p].cost, 0);
      EXPECT_EQ(v.decisions[p].decision.remaining, 8) << "as after the refund";
    }
  }
  // three requests, three scripts: no refund ran
  EXPECT_EQ(calls(*server_, "fcall") - fcall_before, 3);
  auto counted = server_->command({"GET", "refuse:{per-ip:192.0.2.1}:fixed_window:v3"});
  ASSERT_TRUE(counted);
  EXPECT_EQ(stateField(counted->str, 1), "2");
  auto logged = server_->command({"ZCARD", "refuse:{per-user:user}:log"});
  ASSERT_TRUE(logged);
  EXPECT_EQ(logged->integer, 2);
}

// A refusal writes nothing: the policies that admitted were not charged, and the one that
// refused holds its state as read (it refills or rolls over on the next read alike).
TEST_F(RedisTogetherTest, ARefusalWritesNoState) {
  HttpConfig config = threePolicies(window(AlgorithmKind::kFixedWindow, 10, 60'000),
                                    bucket(AlgorithmKind::kTokenBucket, 2, 0.001),
                                    window(AlgorithmKind::kSlidingWindowCounter, 10, 60'000));
  auto limiter = together(config, "quiet");
  ASSERT_TRUE(limiter);
  Arrival a{"/", "192.0.2.1", "key", "user"};
  ASSERT_TRUE(check(*limiter, a).allowed());
  ASSERT_TRUE(check(*limiter, a).allowed());
  const std::vector<std::string> keys = {"quiet:{per-ip:192.0.2.1}:fixed_window:v3",
                                         "quiet:{per-key:key}:token_bucket:v3",
                                         "quiet:{per-user:user}:sliding_window_counter:v3"};
  std::vector<std::string> before;
  for (const std::string& key : keys) {
    auto value = server_->command({"GET", key});
    ASSERT_TRUE(value);
    ASSERT_EQ(value->type, redis::Reply::Type::kString) << key;
    before.push_back(value->str);
  }
  EXPECT_EQ(stateField(before[0], 1), "2");
  EXPECT_EQ(stateField(before[2], 1), "2");
  const int64_t writes_before = calls(*server_, "set");
  for (int i = 0; i < 3; ++i) {
    clock_->advanceNs(kMs);
    Verdict v = check(*limiter, a);
    ASSERT_FALSE(v.allowed());
    EXPECT_EQ(v.binding.policy, "per-key");
  }
  EXPECT_EQ(calls(*server_, "set") - writes_before, 0);
  for (size_t k = 0; k < keys.size(); ++k) {
    auto value = server_->command({"GET", keys[k]});
    ASSERT_TRUE(value);
    EXPECT_EQ(value->str, before[k]) << keys[k];
  }
}

// The state of a fixed window, a sliding window counter and a token bucket was a hash under
// the name without ":v2": an older fleet's hashes are never read (they would read as
// another state, or fail as another type), and are left to expire as they are.
TEST_F(RedisTogetherTest, AnOlderFleetsHashesAreNeverRead) {
  HttpConfig config = threePolicies(window(AlgorithmKind::kFixedWindow, 10, 60'000),
                                    bucket(AlgorithmKind::kTokenBucket, 10, 0.001),
                                    window(AlgorithmKind::kSlidingWindowCounter, 10, 60'000));
  auto limiter = together(config, "old");
  ASSERT_TRUE(limiter);
  const std::vector<std::vector<std::string>> hashes = {
      {"HSET", "old:{per-ip:192.0.2.1}:fixed_window", "w", "0", "n", "10", "l", "60000000"},
      {"HSET", "old:{per-key:key}:token_bucket", "m", "10000000000", "t", "0"},
      {"HSET", "old:{per-user:user}:sliding_window_counter", "w", "0", "c", "10", "p", "0", "l",
       "60000000"}};
  for (const auto& hash : hashes) ASSERT_TRUE(server_->command(hash));
  Verdict v = check(*limiter, Arrival{"/", "192.0.2.1", "key", "user"});
  ASSERT_TRUE(v.allowed());
  for (const auto& d : v.decisions) EXPECT_EQ(d.decision.remaining, 9);
  for (const auto& hash : hashes) {
    auto type = server_->command({"TYPE", hash[1]});
    ASSERT_TRUE(type);
    EXPECT_EQ(type->str, "hash") << hash[1];
    auto first = server_->command({"HGET", hash[1], hash[2]});
    ASSERT_TRUE(first);
    EXPECT_EQ(first->str, hash[3]) << hash[1];
  }
}

// A key of the wrong type (written by something else) fails its own policy alone: closed,
// the request is refused as the store being unavailable and the others give back what they
// took; open, its local share decides and the others are charged. The key is left as it was.
TEST_F(RedisTogetherTest, AKeyOfTheWrongTypeFailsItsOwnPolicyAlone) {
  for (FailureMode mode : {FailureMode::kClosed, FailureMode::kOpen}) {
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    HttpConfig config =
        threePolicies(window(AlgorithmKind::kFixedWindow, 10, 60'000),
                      bucket(AlgorithmKind::kTokenBucket, 10, 0.001),
                      window(AlgorithmKind::kSlidingWindowCounter, 10, 60'000), mode);
    auto limiter = together(config, "hostile");
    ASSERT_TRUE(limiter);
    ASSERT_TRUE(server_->command({"RPUSH", "hostile:{per-key:bad}:token_bucket:v3", "x"}));
    Arrival bad{"/", "192.0.2.1", "bad", "user"};
    // two: a third failure in a row would open the breaker (an error is a failure)
    for (int i = 0; i < 2; ++i) {
      Verdict v = check(*limiter, bad);
      if (mode == FailureMode::kClosed) {
        ASSERT_FALSE(v.allowed());
        EXPECT_EQ(v.binding.outcome, Outcome::kStoreUnavailable);
        EXPECT_EQ(v.binding.policy, "per-key");
        EXPECT_EQ(v.decisions[0].decision.remaining, 10) << "given back";
      } else {
        ASSERT_TRUE(v.allowed());
        EXPECT_EQ(v.decisions[0].decision.remaining, 9 - i);
        EXPECT_EQ(v.decisions[1].decision.remaining, 9 - i) << "the local share's";
      }
    }
    auto& per_key = dynamic_cast<FailoverStore&>(limiter->store(1));
    EXPECT_EQ(per_key.stats().store_errors, 2);
    auto type = server_->command({"TYPE", "hostile:{per-key:bad}:token_bucket:v3"});
    ASSERT_TRUE(type);
    EXPECT_EQ(type->str, "list");
    // another API key, same address and user: Redis decides all three again
    Verdict good = check(*limiter, Arrival{"/", "192.0.2.1", "good", "user"});
    ASSERT_TRUE(good.allowed());
    EXPECT_EQ(good.decisions[0].decision.remaining, mode == FailureMode::kClosed ? 9 : 7);
    EXPECT_EQ(good.decisions[1].decision.remaining, 9);
  }
}

// A server whose functions were flushed answers "Function not found": the library is loaded
// again and the call made once more, and the request is decided as if nothing had happened.
TEST_F(RedisTogetherTest, FlushedFunctionsAreLoadedAgain) {
  HttpConfig config = threePolicies(window(AlgorithmKind::kFixedWindow, 10, 60'000),
                                    bucket(AlgorithmKind::kGcra, 10, 1),
                                    window(AlgorithmKind::kSlidingWindowCounter, 10, 60'000));
  auto limiter = together(config, "flush");
  ASSERT_TRUE(limiter);
  Arrival a{"/", "192.0.2.1", "key", "user"};
  ASSERT_TRUE(check(*limiter, a).allowed());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(server_->command({"FUNCTION", "FLUSH"}));
    const int64_t fcall_before = calls(*server_, "fcall");
    const int64_t load_before = calls(*server_, "function|load");
    Verdict v = check(*limiter, a);
    ASSERT_TRUE(v.allowed()) << round;
    for (const PolicyDecision& pd : v.decisions) EXPECT_EQ(pd.decision.remaining, 8 - round);
    EXPECT_EQ(calls(*server_, "fcall") - fcall_before, 2) << "not found, then run";
    EXPECT_EQ(calls(*server_, "function|load") - load_before, 1);
  }
}

// Redis dies between requests of a run and comes back: while it is gone every request
// follows each policy's failure mode (open: its local share; closed: refused as unavailable),
// and once it is back they are decided together again.
TEST(RedisTogetherOutage, RedisDyingMidRunFollowsEachPolicysFailureMode) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server did not start";
  HttpConfig config = threePolicies(window(AlgorithmKind::kFixedWindow, 1000, 600'000),
                                    window(AlgorithmKind::kFixedWindow, 1000, 600'000),
                                    window(AlgorithmKind::kFixedWindow, 1000, 600'000));
  config.policies[0].failure_mode = FailureMode::kOpen;
  config.policies[1].failure_mode = FailureMode::kOpen;
  config.policies[2].match.path_prefix = "/closed";  // closed, and only on /closed
  config.store.type = "redis";
  config.store.address = server->address().text();
  config.store.timeout_ms = 100;
  config.store.instances = 2;
  config.store.breaker_failures = 2;
  config.store.breaker_open_ms = 200;
  auto made = redisStoreLimiter(config, *server);
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  const Arrival open{"/", "192.0.2.1", "key", "user"};
  const Arrival closed{"/closed", "192.0.2.1", "key", "user"};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(check(limiter, open).allowed());
  ASSERT_TRUE(check(limiter, closed).allowed());
  // (the first FCALL found no library: it was loaded, and that FCALL made again)
  EXPECT_EQ(calls(*server, "fcall") - calls(*server, "function|load"), 6)
      << "one script run per request";

  server->kill();
  for (int i = 0; i < 20; ++i) {
    Verdict o = check(limiter, open);
    EXPECT_TRUE(o.allowed()) << i << ": open policies admit through their local shares";
    Verdict c = check(limiter, closed);
    ASSERT_FALSE(c.allowed()) << i;
    EXPECT_EQ(c.binding.outcome, Outcome::kStoreUnavailable);
    EXPECT_EQ(c.binding.policy, "per-user");
  }
  auto& per_ip = dynamic_cast<FailoverStore&>(limiter.store(0));
  auto& per_user = dynamic_cast<FailoverStore&>(limiter.store(2));
  EXPECT_EQ(per_ip.breaker().state(), BreakerState::kOpen);
  EXPECT_EQ(per_ip.stats().fallback_allowed, 40);
  EXPECT_EQ(per_user.stats().failed_closed, 20);

  ASSERT_TRUE(server->restart());  // empty: no state, no functions
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!check(limiter, closed).allowed()) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "Redis never decided again";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Verdict back = check(limiter, open);
  ASSERT_TRUE(back.allowed());
  // the new server counts from zero: the closed request that got through, and this one
  EXPECT_EQ(back.decisions[0].decision.remaining, 1000 - 2);
}

// An API key and a user id are secrets or identities: whoever can read Redis (a replica, a
// backup, a key listing) finds only their SHA1 in its key names. An address is neither, and
// an operator looks for it, so it is written as it is.
TEST(RedisTogetherKeys, ApiKeysAndUserIdsAreHiddenInRedisAddressesAreNot) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server did not start";
  HttpConfig config = threePolicies(window(AlgorithmKind::kFixedWindow, 10, 600'000),
                                    bucket(AlgorithmKind::kGcra, 10, 1),
                                    window(AlgorithmKind::kSlidingWindowLog, 10, 600'000));
  config.store.type = "redis";
  config.store.address = server->address().text();
  auto made = redisStoreLimiter(config, *server);
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  // a short key, and one that spells the hashed form (hashed either way, never confused)
  for (const std::string api_key : {"s3cret-Key", "sha1:0000"}) {
    Verdict v = check(limiter, {"/", "192.0.2.7", api_key, "alice@example.com"});
    ASSERT_TRUE(v.allowed());
    EXPECT_EQ(v.decisions[1].decision.remaining, 9) << api_key << ": a key of its own";
  }
  auto keys = server->command({"KEYS", "*"});
  ASSERT_TRUE(keys.ok());
  std::vector<std::string> names;
  for (const redis::Reply& e : keys->elements) names.push_back(e.str);
  auto has = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_TRUE(has("fg:{per-ip:192.0.2.7}:fixed_window:v3"));
  for (const std::string api_key : {"s3cret-Key", "sha1:0000"}) {
    EXPECT_TRUE(has("fg:{per-key:" + RedisStore::hiddenKey(api_key) + "}:gcra:v3")) << api_key;
  }
  EXPECT_TRUE(has("fg:{per-user:" + RedisStore::hiddenKey("alice@example.com") + "}:log"));
  for (const std::string& name : names) {
    EXPECT_EQ(name.find("s3cret"), std::string::npos) << name;
    EXPECT_EQ(name.find("alice"), std::string::npos) << name;
  }
  EXPECT_EQ(RedisStore::hiddenKey("s3cret-Key"), "sha1:" + redis::sha1Hex("s3cret-Key"));
}

// A cluster: keys of one slot are decided in one script; keys of several slots (the usual
// case: each key is its own hash tag) one script each, charged on their own and refunded
// when one refuses, with the same decisions.
TEST(RedisTogetherCluster, OneSlotInOneScriptSeveralSlotsOneScriptEach) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto cluster = RedisCluster::start();
  if (!cluster) GTEST_SKIP() << "could not start a 3-master Redis Cluster";
  redis::ClientOptions options;
  options.cluster = true;
  options.seeds = {cluster->addresses()[0]};
  options.timeout_ms = 2000;
  auto client = std::make_shared<redis::Client>(options);
  auto scripts = [&] {
    int64_t n = 0;
    // FCALLs run, less those that found no library yet (one each load)
    for (size_t i = 0; i < 3; ++i) {
      n += calls(cluster->node(i), "fcall") - calls(cluster->node(i), "function|load");
    }
    return n;
  };
  // An API key whose per-key tag shares the per-IP tag's slot, and one that does not.
  const std::string ip = "192.0.2.1";
  const uint16_t ip_slot = redis::keySlot("{per-ip:" + ip + "}");
  std::string same, other;
  for (int i = 0; same.empty() || other.empty(); ++i) {
    std::string key = "k" + std::to_string(i);
    (redis::keySlot("{per-key:" + key + "}") == ip_slot ? same : other) = key;
  }
  HttpConfig config;
  config.retry_after_jitter = 0;
  config.policies = threePolicies(window(AlgorithmKind::kFixedWindow, 10, 60'000),
                                  bucket(AlgorithmKind::kTokenBucket, 2, 0.001),
                                  window(AlgorithmKind::kFixedWindow, 10, 60'000))
                        .policies;
  config.policies.pop_back();  // no user: two policies per request
  auto clock = std::make_shared<ManualClock>(10'000'000 * kMs);
  auto breaker =
      std::make_shared<CircuitBreaker>(CircuitBreakerOptions{}, std::make_shared<SteadyClock>());
  StoreFactory stores = [&](const PolicyConfig& policy,
                            std::shared_ptr<const Algorithm>) -> std::unique_ptr<Store> {
    RedisStoreOptions redis_options;
    redis_options.prefix = "fg";
    redis_options.virtual_time = true;
    return std::make_unique<FailoverStore>(
        std::make_unique<RedisStore>(client, policy.name, policy.algorithm, redis_options), nullptr,
        FailureMode::kClosed, breaker, RejectionCacheOptions{10'000, 0});
  };
  auto made = Limiter::create(config, clock, stores);
  ASSERT_TRUE(made.ok()) << made.error().message;
  Limiter& limiter = **made;
  for (const std::string& key : {same, other}) {
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(check(limiter, {"/", ip, key, ""}).allowed());
  }
  const int64_t before = scripts();
  for (const std::string& key : {same, other}) {
    Verdict v = check(limiter, {"/", ip, key, ""});
    ASSERT_FALSE(v.allowed()) << key;
    EXPECT_EQ(v.violated, std::vector<std::string_view>{"per-key"});
    EXPECT_EQ(v.decisions[0].decision.remaining, 10 - 4) << key << ": as after the refund";
  }
  // one slot: one script, nothing to refund; two slots: two scripts and the per-IP refund
  EXPECT_EQ(scripts() - before, 1 + 3);
  // nothing stayed taken from the address either way: 4 admitted requests of 10
  Verdict next = check(limiter, {"/", ip, "fresh-key", ""});
  ASSERT_TRUE(next.allowed());
  EXPECT_EQ(next.decisions[0].decision.remaining, 10 - 5);
}

}  // namespace
}  // namespace floodgate::http
