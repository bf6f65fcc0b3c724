// SPDX-License-Identifier: MIT
// Publishing signed policies to Redis (SET key + PUBLISH channel) and following them from a
// service (GET at start, SUBSCRIBE for changes), against a private redis-server; a forged
// document written with redis-cli, or an older signed one written back, is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "floodgate/fleet/policy_document.h"
#include "floodgate/fleet/policy_publisher.h"
#include "floodgate/fleet/redis_policy_watcher.h"
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
    secret_file_ = dir_ + "/fleet.key";
    std::ofstream(secret_file_) << kSecret << "\n";
    ASSERT_EQ(chmod(secret_file_.c_str(), 0600), 0);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string writeConfig(int limit) {
    std::string path = dir_ + "/floodgate.yaml";
    std::ofstream(path) << "http:\n  store: {type: redis, address: 127.0.0.1:" << server_->port()
                        << "}\n  publish: {redis_key: fg:policies, redis_channel: fg:announce, "
                        << "secret_file: " << secret_file_ << "}\n"
                        << "  policies:\n    - {name: per-ip, key: ip, algorithm: gcra, capacity: "
                        << limit << ", rate_per_s: 1}\n";
    return path;
  }
  RedisPolicySource source() const {
    RedisPolicySource s;
    s.client.seeds = {server_->address()};
    s.key = "fg:policies";
    s.channel = "fg:announce";
    s.secret = kSecret;
    return s;
  }
  // What an attacker with write access to Redis does: redis-cli SET the key to `text` (read
  // from a file, as -x takes the last argument from stdin), then PUBLISH on the channel.
  void writeWithRedisCli(const std::string& text) {
    std::string file = dir_ + "/written.yaml";
    std::ofstream(file) << text;
    std::string cli = "redis-cli -h 127.0.0.1 -p " + std::to_string(server_->port());
    ASSERT_EQ(std::system((cli + " -x SET fg:policies < " + file + " > /dev/null").c_str()), 0);
    ASSERT_EQ(std::system((cli + " PUBLISH fg:announce forged > /dev/null").c_str()), 0);
  }
  template <class Done>
  bool waitFor(Done done) {
    for (int i = 0; i < 250 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return done();
  }

  static constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
  std::unique_ptr<RedisServer> server_;
  std::string dir_;
  std::string secret_file_;
};

TEST_F(RedisPolicyPublish, SetsTheKeyThatAServiceReadsAndFollowsThroughPubSub) {
  auto first = publishHttpPolicies(writeConfig(10));
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->targets, std::vector<std::string>{"redis key fg:policies"});
  auto stored = server_->command({"GET", "fg:policies"});
  ASSERT_TRUE(stored.ok());
  PolicyRefusal refusal = PolicyRefusal::kInvalid;
  auto parsed =
      parseSignedPolicyDocument(stored->str, "redis:fg:policies", source().signing(), &refusal);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->version, first->version);
  EXPECT_EQ(parsed->serial, first->serial);
  EXPECT_GT(first->serial, 1'700'000'000'000'000u) << "Redis's clock in microseconds";

  auto text = fetchPolicyDocument(source());
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto live = makeSignedLiveLimiter(*text, "redis:fg:policies", source().signing(),
                                    std::make_shared<SteadyClock>());
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
  EXPECT_GT(second->serial, first->serial);

  // A bad (and unsigned) document in the key: refused, counted, the last good set stays.
  ASSERT_TRUE(server_->command({"SET", "fg:policies", "version: bad\nhttp: {policies: [{}]}\n"}));
  ASSERT_TRUE(server_->command({"PUBLISH", "fg:announce", "bad"}));
  // At least once: the announce of the second set may still be queued, and its GET then
  // reads the bad document too. Every refusal is of that one unsigned document.
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused() >= 1; }));
  EXPECT_EQ((*live)->updatesRefused(), (*live)->updatesRefused(PolicyRefusal::kUnsigned));
  EXPECT_EQ((*live)->version(), second->version);

  // Redis restarts (its serial counter gone with it): the watcher reconnects and catches up
  // with a publish made meanwhile, whose serial, from Redis's clock, is still the newest.
  server_->kill();
  ASSERT_TRUE(server_->restart());
  auto third = publishHttpPolicies(writeConfig(30));
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_TRUE(waitFor([&] { return (*live)->version() == third->version; }));
  EXPECT_GT(third->serial, second->serial);
  watcher.reset();
}

TEST_F(RedisPolicyPublish, AForgedOrReplayedDocumentIsRefusedAndTheLastGoodOneStays) {
  auto older = publishHttpPolicies(writeConfig(1000));  // an attacker saves this one
  ASSERT_TRUE(older.ok()) << older.error().message;
  auto saved = server_->command({"GET", "fg:policies"});
  ASSERT_TRUE(saved.ok());
  const std::string replay = saved->str;
  auto good = publishHttpPolicies(writeConfig(10));
  ASSERT_TRUE(good.ok()) << good.error().message;

  auto text = fetchPolicyDocument(source());
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto live = makeSignedLiveLimiter(*text, "redis:fg:policies", source().signing(),
                                    std::make_shared<SteadyClock>());
  ASSERT_TRUE(live.ok()) << live.error().message;
  ASSERT_EQ((*live)->serial(), good->serial);
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  auto watcher = RedisPolicyWatcher::start(source(), *live, [&](const std::string& line) {
    std::lock_guard lock(lines_mutex);
    lines.push_back(line);
  });
  // Followed: a signed publish is taken (published until the watcher has subscribed).
  auto followed = publishHttpPolicies(writeConfig(20));
  ASSERT_TRUE(followed.ok()) << followed.error().message;
  ASSERT_TRUE(waitFor([&] { return (*live)->version() == followed->version; }));

  // Forged: the good document with its limit raised, its signature kept.
  std::string forged = *fetchPolicyDocument(source());
  size_t capacity = forged.find("capacity: 20");
  ASSERT_NE(capacity, std::string::npos) << forged;
  forged.replace(capacity, 12, "capacity: 1000000");
  writeWithRedisCli(forged);
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused(PolicyRefusal::kBadSignature) == 1; }));
  // Unsigned: what anyone could write.
  writeWithRedisCli("version: x\nhttp:\n  policies: []\n");
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused(PolicyRefusal::kUnsigned) == 1; }));
  // Replayed: an older document the controller did sign.
  writeWithRedisCli(replay);
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused(PolicyRefusal::kStale) >= 1; }));

  EXPECT_EQ((*live)->version(), followed->version);
  EXPECT_EQ((*live)->serial(), followed->serial);
  EXPECT_EQ((*live)->current()->config().policies[0].algorithm.capacity, 20);
  EXPECT_EQ((*live)->updatesApplied(), 1);
  watcher.reset();
  std::lock_guard lock(lines_mutex);
  EXPECT_NE(lines.back().find("(stale)"), std::string::npos) << lines.back();
}

TEST_F(RedisPolicyPublish, AServiceWithAnotherSecretTakesNothing) {
  auto published = publishHttpPolicies(writeConfig(10));
  ASSERT_TRUE(published.ok()) << published.error().message;
  RedisPolicySource other = source();
  other.secret = "a secret of another fleet entirely";
  auto text = fetchPolicyDocument(other);
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto live = makeSignedLiveLimiter(*text, "redis:fg:policies", other.signing(),
                                    std::make_shared<SteadyClock>());
  ASSERT_FALSE(live.ok());
  EXPECT_NE(live.error().message.find("its signature does not match"), std::string::npos)
      << live.error().message;
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
