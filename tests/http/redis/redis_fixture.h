// SPDX-License-Identifier: MIT
// The fixture of tests against a private redis-server: one server a test suite, emptied
// before each test, and a client on it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "floodgate/redis/client.h"
#include "redis/redis_server.h"

namespace floodgate::http::testing {

// Calls of `command` ("fcall", "evalsha", "eval", "function|load") `server` has run so far.
inline int64_t calls(const RedisServer& server, std::string_view command) {
  auto info = server.command({"INFO", "commandstats"});
  EXPECT_TRUE(info.ok());
  if (!info) return -1;
  const std::string name = "cmdstat_" + std::string(command) + ":calls=";
  size_t at = info->str.find(name);
  return at == std::string::npos ? 0 : std::stoll(info->str.substr(at + name.size()));
}

// A client of its own on `server`, keeping up to `pool_size` idle connections; 2 s a call,
// so that a busy machine does not fail a test with a timeout.
inline std::shared_ptr<redis::Client> clientOf(const RedisServer& server,
                                               int pool_size = redis::ClientOptions{}.pool_size) {
  redis::ClientOptions options;
  options.seeds = {server.address()};
  options.timeout_ms = 2000;
  options.pool_size = pool_size;
  return std::make_shared<redis::Client>(options);
}

class RedisServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (haveRedis()) server_ = RedisServer::start().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  // Skips the test without a server; otherwise empties the server and opens client_.
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    client_ = newClient();
  }

  // A client of its own on the server (clientOf).
  static std::shared_ptr<redis::Client> newClient(
      int pool_size = redis::ClientOptions{}.pool_size) {
    return clientOf(*server_, pool_size);
  }

  inline static RedisServer* server_ = nullptr;
  std::shared_ptr<redis::Client> client_;
};

}  // namespace floodgate::http::testing
