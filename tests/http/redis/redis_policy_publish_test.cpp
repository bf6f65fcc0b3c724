// SPDX-License-Identifier: MIT
// Publishing policies to Redis (SET key + PUBLISH channel) and following them from a
// service (GET at start, SUBSCRIBE for changes), against a private redis-server.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "http/policy_document.h"
#include "http/policy_publisher.h"
#include "http/redis_policy_watcher.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using testing::RedisServer;

class RedisPolicyPublish : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
    char name[] = "/tmp/fg-redis-publish-XXXXXX";
    dir_ = mkdtemp(name);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string writeConfig(int limit) {
    std::string path = dir_ + "/floodgate.yaml";
    std::ofstream(path) << "http:\n  store: {type: redis, address: 127.0.0.1:" << server_->port()
                        << "}\n  publish: {redis_key: fg:policies, redis_channel: fg:announce}\n"
                        << "  policies:\n    - {name: per-ip, key: ip, algorithm: gcra, capacity: "
                        << limit << ", rate_per_s: 1}\n";
    return path;
  }
  RedisPolicySource source() const {
    RedisPolicySource s;
    s.client.seeds = {server_->address()};
    s.key = "fg:policies";
    s.channel = "fg:announce";
    return s;
  }
  template <class Done>
  bool waitFor(Done done) {
    for (int i = 0; i < 250 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return done();
  }

  std::unique_ptr<RedisServer> server_;
  std::string dir_;
};

TEST_F(RedisPolicyPublish, SetsTheKeyThatAServiceReadsAndFollowsThroughPubSub) {
  auto first = publishHttpPolicies(writeConfig(10));
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->targets, std::vector<std::string>{"redis key fg:policies"});
  auto stored = server_->command({"GET", "fg:policies"});
  ASSERT_TRUE(stored.ok());
  auto parsed = parsePolicyDocument(stored->str, "redis:fg:policies");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->version, first->version);

  auto text = fetchPolicyDocument(source());
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto live = makeLiveLimiter(*text, "redis:fg:policies", std::make_shared<SteadyClock>());
  ASSERT_TRUE(live.ok()) << live.error().message;
  EXPECT_EQ((*live)->version(), first->version);
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  auto watcher = RedisPolicyWatcher::start(source(), *live, [&](const std::string& line) {
    std::lock_guard lock(lines_mutex);
    lines.push_back(line);
  });

  // The watcher subscribes on its thread; publish until it has seen one (a message sent
  // before it subscribed is caught by its GET after subscribing anyway).
  auto second = publishHttpPolicies(writeConfig(20));
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_TRUE(waitFor([&] { return (*live)->version() == second->version; }));
  EXPECT_EQ((*live)->current()->config().policies[0].algorithm.capacity, 20);

  // A bad document in the key: refused, counted, the last good set stays.
  ASSERT_TRUE(server_->command({"SET", "fg:policies", "version: bad\nhttp: {policies: [{}]}\n"}));
  ASSERT_TRUE(server_->command({"PUBLISH", "fg:announce", "bad"}));
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused() == 1; }));
  EXPECT_EQ((*live)->version(), second->version);

  // Redis restarts: the watcher reconnects and catches up with a publish made meanwhile.
  server_->kill();
  ASSERT_TRUE(server_->restart());
  auto third = publishHttpPolicies(writeConfig(30));
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_TRUE(waitFor([&] { return (*live)->version() == third->version; }));
  watcher.reset();
}

TEST_F(RedisPolicyPublish, NothingPublishedAndNoServerAreClearErrors) {
  auto empty = fetchPolicyDocument(source());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("holds no policies yet"), std::string::npos);
  std::string config = writeConfig(10);
  server_->kill();
  auto down = publishHttpPolicies(config);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().message.find('\n'), std::string::npos);
  EXPECT_NE(down.error().message.find("redis key fg:policies"), std::string::npos)
      << down.error().message;
}

}  // namespace
}  // namespace floodgate::http
