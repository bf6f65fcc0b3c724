// SPDX-License-Identifier: MIT
// Live instance counts: instances heartbeat into one private redis-server, on a clock the
// test steps, and every instance's open-mode fallback share follows the count (2, 4, 3).
#include <gtest/gtest.h>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/fleet_membership.h"
#include "floodgate/redis/store_factory.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using testing::RedisServer;

constexpr int64_t kExpireMs = 3000;
constexpr int64_t kLimit = 12;  // shares: 6 of 2, 4 of 3, 3 of 4

class RedisFleetSizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
  }

  // An instance: its membership (no thread: the test beats for it, scored by clock_) and a
  // limiter whose decisions go to a Redis that refuses connections, so its open-mode
  // fallback decides every request.
  struct Instance {
    std::shared_ptr<FleetMembership> fleet;
    std::unique_ptr<Limiter> limiter;
  };
  Instance join(const std::string& id) {
    redis::ClientOptions options;
    options.seeds = {server_->address()};
    options.timeout_ms = 2000;
    options.pool_size = 1;
    FleetMembershipOptions membership;
    membership.instance_id = id;
    membership.heartbeat_ms = 0;
    membership.expire_ms = kExpireMs;
    membership.virtual_time = true;
    Instance instance;
    instance.fleet = std::make_shared<FleetMembership>(std::make_shared<redis::Client>(options),
                                                       membership, clock_);
    HttpConfig config;
    config.store.type = "redis";
    config.store.address = "127.0.0.1:1";  // nothing listens: every decision falls back
    config.store.timeout_ms = 100;
    config.store.instances = 1;  // the floor, below every live count here
    PolicyConfig api;
    api.name = "api";
    api.algorithm.kind = AlgorithmKind::kFixedWindow;
    api.algorithm.limit = kLimit;
    api.algorithm.window_ms = 600'000;
    api.failure_mode = FailureMode::kOpen;
    config.policies = {api};
    auto made =
        Limiter::create(config, clock_, makeStoreFactory(config.store, clock_, instance.fleet));
    EXPECT_TRUE(made.ok());
    if (made) instance.limiter = std::move(*made);
    return instance;
  }
  // What `instance`'s fallback admits of 20 requests from a client not seen before.
  int admittedOfNewClient(Instance& instance) {
    std::string ip = "192.0.2." + std::to_string(++clients_);
    int admitted = 0;
    for (int i = 0; i < 20; ++i) {
      admitted += instance.limiter->check(RequestInfo{"GET", "/", ip, {}, {}, {}}).allowed();
    }
    return admitted;
  }
  void beatAll(std::vector<Instance*> instances) {
    for (Instance* i : instances) ASSERT_TRUE(i->fleet->beat().ok());
  }

  std::unique_ptr<RedisServer> server_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000'000'000'000);
  int clients_ = 0;
};

TEST_F(RedisFleetSizeTest, FallbackShareFollowsTheLiveCount) {
  Instance a = join("a");
  Instance b = join("b");
  // Before any beat is answered the share divides by the floor (1): the whole limit.
  EXPECT_EQ(a.fleet->instances(), 1);
  EXPECT_EQ(admittedOfNewClient(a), kLimit);

  beatAll({&a, &b});
  beatAll({&a, &b});  // a's first beat saw only itself
  EXPECT_EQ(a.fleet->liveCount(), 2);
  EXPECT_EQ(admittedOfNewClient(a), kLimit / 2);
  EXPECT_EQ(admittedOfNewClient(b), kLimit / 2);

  // Scale out to 4: every share halves at the next beat.
  Instance c = join("c");
  Instance d = join("d");
  clock_->advanceMs(1000);
  beatAll({&c, &d, &a, &b});
  for (Instance* i : {&a, &b, &c, &d}) {
    ASSERT_TRUE(i->fleet->beat().ok());
    EXPECT_EQ(i->fleet->liveCount(), 4);
    EXPECT_EQ(admittedOfNewClient(*i), kLimit / 4);
  }

  // d stops beating (frozen, partitioned): still counted until its last beat is expire_ms
  // old, gone from the first beat after that.
  clock_->advanceMs(kExpireMs - 1);
  beatAll({&a, &b, &c});
  EXPECT_EQ(a.fleet->liveCount(), 4);
  EXPECT_EQ(admittedOfNewClient(a), kLimit / 4);
  clock_->advanceMs(1);
  beatAll({&a, &b, &c});
  for (Instance* i : {&a, &b, &c}) {
    EXPECT_EQ(i->fleet->liveCount(), 3);
    EXPECT_EQ(admittedOfNewClient(*i), kLimit / 3);
  }

  // A key part used carries its use into the new share: 3 taken from a's share of 4,
  // then d is back (4 live, a share of 3): nothing more, not a fresh 3.
  const RequestInfo request{"GET", "/", "198.51.100.1", {}, {}, {}};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(a.limiter->check(request).allowed());
  beatAll({&d, &a});
  EXPECT_EQ(a.fleet->liveCount(), 4);
  EXPECT_FALSE(a.limiter->check(request).allowed());
}

TEST_F(RedisFleetSizeTest, CleanShutdownLeavesAtOnceAndAnOutageKeepsTheLastCount) {
  Instance a = join("a");
  {
    Instance b = join("b");
    Instance c = join("c");
    beatAll({&b, &c, &a});
    EXPECT_EQ(a.fleet->liveCount(), 3);
  }  // b and c shut down: they leave the set
  beatAll({&a});
  EXPECT_EQ(a.fleet->liveCount(), 1);

  Instance b = join("b");
  beatAll({&b, &a});
  EXPECT_EQ(a.fleet->liveCount(), 2);
  server_->kill();
  EXPECT_FALSE(a.fleet->beat().ok());
  EXPECT_EQ(a.fleet->liveCount(), 2);  // kept: Redis cannot say otherwise
  EXPECT_EQ(a.fleet->failedBeats(), 1);
  EXPECT_EQ(admittedOfNewClient(a), kLimit / 2);
}

TEST_F(RedisFleetSizeTest, ScoresAreRedisTimeAndTheSetExpires) {
  // With Redis's clock (no virtual time): a beat scores the member by Redis TIME, and the
  // set lives 2 x expire_ms past the last beat.
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.timeout_ms = 2000;
  FleetMembershipOptions membership;
  membership.instance_id = "real";
  membership.heartbeat_ms = 0;
  membership.expire_ms = kExpireMs;
  FleetMembership fleet(std::make_shared<redis::Client>(options), membership, clock_);
  ASSERT_TRUE(fleet.beat().ok());
  auto time = server_->command({"TIME"});
  auto score = server_->command({"ZSCORE", fleet.key(), "real"});
  ASSERT_TRUE(time && score);
  const double redis_us = std::stod(time->elements[0].str) * 1e6 + std::stod(time->elements[1].str);
  EXPECT_LE(std::stod(score->str), redis_us);
  EXPECT_GT(std::stod(score->str), redis_us - 60e6);  // Redis's clock, not the test's
  auto ttl = server_->command({"PTTL", fleet.key()});
  ASSERT_TRUE(ttl);
  EXPECT_GT(ttl->integer, 0);
  EXPECT_LE(ttl->integer, 2 * kExpireMs);
  EXPECT_NE(fleet.key().find('{'), std::string::npos);
}

}  // namespace
}  // namespace floodgate::http
