// SPDX-License-Identifier: MIT
// A Redis that asks for a login (requirepass, or an ACL user): the store logs in with the
// password of http.store.password_file, and says so when Redis refuses it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "floodgate/core/config_parser.h"
#include "floodgate/core/limiter.h"
#include "floodgate/redis/client.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using testing::RedisServer;

class RedisLoginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
    ASSERT_TRUE(
        server_->command({"ACL", "SETUSER", "limiter", "on", ">acl-pass", "~*", "&*", "+@all"})
            .ok());
    ASSERT_TRUE(server_->command({"CONFIG", "SET", "requirepass", "default-pass"}).ok());
    server_->loginAs({"", "default-pass"});
    dir_ = std::filesystem::temp_directory_path() / ("fg-login-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string passwordFile(const std::string& name, const std::string& password,
                           mode_t mode = 0600) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << password << "\n";
    chmod(path.c_str(), mode);
    return path;
  }

  // The http section of a config with one closed policy of 2 a minute on this server.
  std::string config(const std::string& login) {
    return "http:\n  store:\n    type: redis\n    address: " + server_->address().text() + "\n" +
           login +
           "  policies:\n    - name: api\n      match: {path_prefix: /}\n      key: ip\n"
           "      algorithm: fixed_window\n      limit: 2\n      window_ms: 60000\n"
           "      failure_mode: closed\n";
  }

  // The verdicts of three requests from `ip` through a limiter made from `http`: allowed,
  // allowed, refused when the store works, all refused (closed) when it does not.
  std::vector<bool> threeRequests(const std::string& http, const char* ip = "192.0.2.7") {
    auto parsed = parseHttpConfigText(http, "test.yaml");
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
    if (!parsed.ok()) return {};
    auto limiter = Limiter::create(*parsed, std::make_shared<SteadyClock>());
    EXPECT_TRUE(limiter.ok()) << (limiter.ok() ? "" : limiter.error().message);
    if (!limiter.ok()) return {};
    std::vector<bool> allowed;
    for (int i = 0; i < 3; ++i) {
      allowed.push_back((*limiter)->check(RequestInfo{"GET", "/", ip, {}, {}, {}}).allowed());
    }
    return allowed;
  }

  std::unique_ptr<RedisServer> server_;
  std::filesystem::path dir_;
};

TEST_F(RedisLoginTest, TheStoreLogsInWithRequirepassOrAnAclUser) {
  EXPECT_EQ(
      threeRequests(config("    password_file: " + passwordFile("default", "default-pass") + "\n")),
      (std::vector<bool>{true, true, false}))
      << "the limit is kept in Redis";
  EXPECT_EQ(threeRequests(config("    username: limiter\n    password_file: " +
                                 passwordFile("acl", "acl-pass") + "\n"),
                          "192.0.2.8"),
            (std::vector<bool>{true, true, false}))
      << "as the ACL user";
}

TEST_F(RedisLoginTest, WithoutTheRightPasswordEveryCallFailsAndSaysWhy) {
  EXPECT_EQ(threeRequests(config("")), (std::vector<bool>{false, false, false}))
      << "no login: every call fails, and a closed policy refuses";
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.credentials = {"", "wrong"};
  redis::Client client(options);
  auto replies = client.run({{"k", {"PING"}}});
  ASSERT_FALSE(replies.ok());
  EXPECT_NE(replies.error().message.find("refused the login"), std::string::npos)
      << replies.error().message;
  EXPECT_NE(replies.error().message.find("password_file"), std::string::npos);
  options.credentials = {"", "default-pass"};
  redis::Client right(options);
  auto pong = right.run({{"k", {"PING"}}});
  ASSERT_TRUE(pong.ok()) << pong.error().message;
  EXPECT_EQ((*pong)[0].str, "PONG");
}

TEST_F(RedisLoginTest, APasswordFileMustBeAbsoluteKeptFromOthersAndNotEmpty) {
  auto error = [&](const std::string& login) {
    auto parsed = parseHttpConfigText(config(login), "test.yaml");
    return parsed.ok() ? std::string() : parsed.error().message;
  };
  EXPECT_NE(error("    password_file: relative\n").find("must be an absolute path"),
            std::string::npos);
  EXPECT_NE(error("    password_file: " + passwordFile("open", "x", 0644) + "\n")
                .find("readable by every user"),
            std::string::npos);
  EXPECT_NE(error("    password_file: " + passwordFile("empty", "") + "\n").find("is empty"),
            std::string::npos);
  EXPECT_NE(
      error("    password_file: " + (dir_ / "missing").string() + "\n").find("does not exist"),
      std::string::npos);
  EXPECT_NE(error("    username: limiter\n").find("needs password_file"), std::string::npos);
}

}  // namespace
}  // namespace floodgate::http
