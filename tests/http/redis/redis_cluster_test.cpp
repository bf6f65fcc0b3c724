// SPDX-License-Identifier: MIT
// A three-master Redis Cluster: keys spread over every master, multi-key scripts and
// multi-policy requests work (hash tags: no CROSSSLOT), redirections are followed.
#include <gtest/gtest.h>

#include <set>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/stores/memory_store.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using testing::RedisCluster;

class RedisClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::haveRedis()) cluster_ = RedisCluster::start().release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (cluster_ == nullptr) GTEST_SKIP() << "could not start a 3-master Redis Cluster";
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(cluster_->node(i).command({"FLUSHALL"}));
  }
  static redis::ClientOptions clusterOptions(size_t seed) {
    redis::ClientOptions options;
    options.cluster = true;
    options.seeds = {cluster_->addresses()[seed]};  // one seed: the rest is learnt
    options.timeout_ms = 2000;
    return options;
  }

  static RedisCluster* cluster_;
};
RedisCluster* RedisClusterTest::cluster_ = nullptr;

TEST_F(RedisClusterTest, KeySlotsMatchRedis) {
  for (std::string key : {"foo", "{user1000}.following", "fg:{p:10.0.0.1}:log", "a{}b", "{}x"}) {
    auto slot = cluster_->node(0).command({"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(slot);
    EXPECT_EQ(redis::keySlot(key), slot->integer) << key;
  }
}

TEST_F(RedisClusterTest, MultiKeyScriptsSpreadOverEveryMasterWithoutCrossslot) {
  auto client = std::make_shared<redis::Client>(clusterOptions(1));
  AlgorithmParams p;
  p.kind = AlgorithmKind::kSlidingWindowLog;  // two Redis keys per decision: log + sequence
  p.limit = 3;
  p.window_ms = 60'000;
  RedisStore store(client, "log", p);
  MemoryStore memory(*makeAlgorithm(p), MemoryStoreOptions{});
  // Pipelined, so each master gets its share in one round trip.
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) keys.push_back("client-" + std::to_string(i));
  for (int round = 0; round < 4; ++round) {
    std::vector<RedisStore::Request> batch;
    for (const std::string& key : keys) batch.push_back({key, 1, 0});
    auto answers = store.decideMany(batch, 0);
    ASSERT_TRUE(answers.ok()) << answers.error().message;
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE((*answers)[i].ok()) << (*answers)[i].error().message;
      EXPECT_EQ((*answers)[i]->decision.allowed(), round < 3) << keys[i] << " round " << round;
    }
  }
  for (int i = 0; i < 3; ++i) {
    auto size = cluster_->node(i).command({"DBSIZE"});
    ASSERT_TRUE(size);
    EXPECT_GT(size->integer, 50) << "master " << i << " holds too few keys";
  }
}

TEST_F(RedisClusterTest, EveryAlgorithmDecidesAcrossTheCluster) {
  auto client = std::make_shared<redis::Client>(clusterOptions(0));
  for (AlgorithmKind kind :
       {AlgorithmKind::kFixedWindow, AlgorithmKind::kSlidingWindowCounter,
        AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra, AlgorithmKind::kLeakyBucket}) {
    AlgorithmParams p;
    p.kind = kind;
    p.limit = p.capacity = 2;
    p.window_ms = 60'000;
    p.rate_per_s = 0.001;
    // The windows decide at virtual time 0: a minute of Redis's clock could end between two
    // decisions of a key, and admit its third (the fixed window starts over, the counter's
    // previous count weighs less). The buckets, on Redis's clock, refill too slowly to matter.
    RedisStoreOptions options;
    options.virtual_time =
        kind == AlgorithmKind::kFixedWindow || kind == AlgorithmKind::kSlidingWindowCounter;
    RedisStore store(client, std::string(algorithmName(kind)), p, options);
    for (int k = 0; k < 30; ++k) {
      std::string key = "u" + std::to_string(k);
      for (int i = 0; i < 3; ++i) {
        auto d = store.decide(key, 0, 1);
        ASSERT_TRUE(d.ok()) << d.error().message;
        EXPECT_EQ(d->allowed(), i < 2) << algorithmName(kind) << " " << key;
      }
    }
  }
}

TEST_F(RedisClusterTest, LimiterWithSeveralPoliciesOnTheCluster) {
  HttpConfig config;
  config.store.type = "redis";
  for (const auto& a : cluster_->addresses()) config.store.cluster.push_back(a.text());
  config.store.timeout_ms = 2000;
  PolicyConfig per_ip;
  per_ip.name = "per-ip";
  per_ip.algorithm.kind = AlgorithmKind::kSlidingWindowLog;
  per_ip.algorithm.limit = 5;
  per_ip.algorithm.window_ms = 60'000;
  PolicyConfig per_user = per_ip;
  per_user.name = "per-user";
  per_user.key.kind = KeyKind::kUser;
  per_user.algorithm.kind = AlgorithmKind::kGcra;
  per_user.algorithm.capacity = 3;
  per_user.algorithm.rate_per_s = 0.001;
  per_user.failure_mode = FailureMode::kClosed;
  config.policies = {per_ip, per_user};
  auto limiter = Limiter::create(config, std::make_shared<SteadyClock>());
  ASSERT_TRUE(limiter.ok());
  for (int u = 0; u < 20; ++u) {
    std::string user = "user-" + std::to_string(u);
    std::string ip = "10.0.0." + std::to_string(u);
    for (int i = 0; i < 4; ++i) {
      RequestInfo request{"GET", "/", ip, {}, user, {}};
      Verdict v = (*limiter)->check(request);
      ASSERT_EQ(v.decisions.size(), 2u);
      for (const PolicyDecision& pd : v.decisions) {
        EXPECT_NE(pd.decision.outcome, Outcome::kStoreUnavailable) << pd.policy->name;
      }
      EXPECT_EQ(v.allowed(), i < 3) << user << " #" << i;
    }
  }
}

TEST_F(RedisClusterTest, FollowsMovedAfterASlotMigrates) {
  auto client = std::make_shared<redis::Client>(clusterOptions(0));
  AlgorithmParams p;
  p.kind = AlgorithmKind::kFixedWindow;
  p.limit = 5;
  p.window_ms = 600'000;
  RedisStore store(client, "move", p);
  ASSERT_TRUE(store.decide("k", 0, 1).ok());  // learns the slot map
  // Move the key's (empty after FLUSHALL) slot to another master behind the client's back.
  std::string redis_key = "fg:{move:k}:fixed_window:v3";
  uint16_t slot = redis::keySlot(redis_key);
  int owner = -1;
  for (int i = 0; i < 3; ++i) {
    auto reply = cluster_->node(i).command({"GET", redis_key});  // others answer MOVED
    ASSERT_TRUE(reply);
    if (!reply->isError("MOVED")) owner = i;
    ASSERT_TRUE(cluster_->node(i).command({"FLUSHALL"}));  // an empty slot moves at once
  }
  ASSERT_GE(owner, 0);
  int target = (owner + 1) % 3;
  auto target_id = cluster_->node(target).command({"CLUSTER", "MYID"});
  ASSERT_TRUE(target_id);
  // Every master agrees the slot now belongs to the target.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cluster_->node(i).command(
        {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", target_id->str}));
  }
  auto d = store.decide("k", 0, 1);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_TRUE(d->allowed());
  auto size = cluster_->node(target).command({"EXISTS", redis_key});
  ASSERT_TRUE(size);
  EXPECT_EQ(size->integer, 1);
}

// One master refuses functions to the user (ACL): only its calls are run again as scripts;
// the calls the other masters answered by FCALL are not run twice (each key charged once).
TEST_F(RedisClusterTest, OneMasterWithoutFunctionsChargesEveryKeyOnce) {
  AlgorithmParams p;
  p.kind = AlgorithmKind::kFixedWindow;
  p.limit = 5;
  p.window_ms = 60'000;
  std::vector<std::string> keys;
  for (int i = 0; i < 60; ++i) keys.push_back("client-" + std::to_string(i));
  {
    // every master holds the library
    auto warm = std::make_shared<redis::Client>(clusterOptions(0));
    RedisStore store(warm, "warm", p);
    std::vector<RedisStore::Request> batch;
    for (const std::string& key : keys) batch.push_back({key, 1, 0});
    ASSERT_TRUE(store.decideMany(batch, 0));
    ASSERT_FALSE(warm->scriptsOnly());
  }
  ASSERT_TRUE(
      cluster_->node(2).command({"ACL", "SETUSER", "default", "-fcall", "-fcall_ro", "-function"}));
  auto client = std::make_shared<redis::Client>(clusterOptions(0));
  RedisStore store(client, "once", p);
  std::vector<RedisStore::Request> batch;
  for (const std::string& key : keys) batch.push_back({key, 1, 0});
  auto answers = store.decideMany(batch, 0);
  ASSERT_TRUE(cluster_->node(2).command({"ACL", "SETUSER", "default", "+@all"}));
  ASSERT_TRUE(answers.ok()) << answers.error().message;
  EXPECT_TRUE(client->scriptsOnly());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE((*answers)[i].ok()) << (*answers)[i].error().message;
    EXPECT_EQ((*answers)[i]->decision.remaining, 4) << keys[i];
  }
  // the keys spread over every master, the refusing one too
  std::set<uint16_t> owners;
  for (int n = 0; n < 3; ++n) {
    auto count = cluster_->node(n).command({"DBSIZE"});
    ASSERT_TRUE(count);
    if (count->integer > static_cast<int64_t>(keys.size() / 10)) owners.insert(n);
  }
  EXPECT_EQ(owners.size(), 3u);
}

}  // namespace
}  // namespace floodgate::http
