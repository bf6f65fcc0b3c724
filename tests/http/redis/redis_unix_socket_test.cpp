// SPDX-License-Identifier: MIT
// A Redis store on a server's Unix socket ("unix:/PATH"), against a real redis-server
// that listens on one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "floodgate/redis/redis_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using testing::RedisServer;
using testing::window;

TEST(RedisUnixSocket, DecidesOverTheSocket) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("floodgate-redis-" + std::to_string(getpid()) + ".sock"))
                               .string();
  auto server = RedisServer::start({"--unixsocket", path, "--unixsocketperm", "700"});
  if (!server) GTEST_SKIP() << "redis-server did not start";
  auto address = redis::Address::parse("unix:" + path);
  ASSERT_TRUE(address) << address.error().message;
  EXPECT_EQ(address->text(), "unix:" + path);
  redis::ClientOptions options;
  options.seeds = {*address};
  options.timeout_ms = 2000;
  auto client = std::make_shared<redis::Client>(options);
  // Every decision at virtual time 0: one window whenever the test runs (a minute of Redis's
  // clock could end between two decisions, and the count start over).
  RedisStoreOptions on_window_zero;
  on_window_zero.virtual_time = true;
  RedisStore store(client, "p", window(AlgorithmKind::kFixedWindow, 3, 60'000), on_window_zero);
  int admitted = 0;
  for (int i = 0; i < 5; ++i) {
    auto d = store.decide("k", 0, 1);
    ASSERT_TRUE(d) << d.error().message;
    admitted += d->allowed();
  }
  EXPECT_EQ(admitted, 3);
  // The connection is the socket's: the server names its local address by the path.
  auto me = client->run({{"", {"CLIENT", "INFO"}}});
  ASSERT_TRUE(me) << me.error().message;
  EXPECT_NE((*me)[0].str.find("laddr=" + path), std::string::npos) << (*me)[0].str;
  auto state = server->command({"GET", "fg:{p:k}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(testing::stateField(state->str, 1), "3");
  server.reset();
  std::filesystem::remove(path);
}

// A socket nobody listens on: a connection error naming the socket, not a hang or a crash.
TEST(RedisUnixSocket, NoServerIsAnErrorNamingTheSocket) {
  redis::ClientOptions options;
  options.seeds = {*redis::Address::parse("unix:/nonexistent/floodgate-redis.sock")};
  options.timeout_ms = 200;
  auto client = std::make_shared<redis::Client>(options);
  auto replies = client->run({{"", {"PING"}}});
  ASSERT_FALSE(replies);
  EXPECT_NE(replies.error().message.find("unix:/nonexistent/floodgate-redis.sock"),
            std::string::npos)
      << replies.error().message;
}

}  // namespace
}  // namespace floodgate::http
