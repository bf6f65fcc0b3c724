// SPDX-License-Identifier: MIT
// End to end: floodgate-http-example on the Redis store, through an outage: /metrics shows
// the errors, the breaker and the fallback decisions; service comes back with Redis.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "example_service.h"
#include "floodgate/fleet/policy_publisher.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

bool has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

// The value of a sample line "NAME VALUE" in an exposition; 0 when there is none.
double metricValue(const std::string& text, const std::string& name) {
  const std::string prefix = name + " ";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + prefix.size()));
  }
  return 0;
}

TEST(RedisExampleService, MetricsFollowAnOutageAndRecovery) {
  std::unique_ptr<testing::RedisServer> redis;
  if (testing::haveRedis()) redis = testing::RedisServer::start();
  if (!redis) GTEST_SKIP() << "redis-server is not installed or did not start";
  testing::ExampleService service(
      "http:\n  store:\n    type: redis\n    address: " + redis->address().text() +
      "\n    timeout_ms: 100\n    instances: 2\n"
      "    breaker: {failures: 1, open_ms: 100}\n"
      "  policies:\n"
      "    - {name: api, key: ip, algorithm: fixed_window, limit: 8,\n"
      "       window_ms: 600000, match: {path_prefix: /api}}\n"
      "    - {name: login, key: ip, algorithm: fixed_window, limit: 5,\n"
      "       window_ms: 600000, failure_mode: closed,\n"
      "       match: {path_prefix: /healthz}}\n");
  ASSERT_GT(service.port(), 0) << service.stderrText();
  httplib::Client client("127.0.0.1", service.port());
  client.set_read_timeout(5);
  EXPECT_EQ(client.Get("/api/items")->status, 200);
  EXPECT_EQ(client.Get("/healthz")->status, 200);

  redis->kill();
  EXPECT_EQ(client.Get("/healthz")->status, 503);  // closed
  int admitted = 0;
  for (int i = 0; i < 8; ++i) admitted += client.Get("/api/items")->status == 200;
  EXPECT_EQ(admitted, 4);  // open: the local share, 8 / 2 instances
  std::string down = client.Get("/metrics")->body;
  EXPECT_TRUE(has(down, "floodgate_http_store_errors_total{policy=\"login\"} 1\n")) << down;
  // The breaker opened on the login's failure. Should these requests have taken longer
  // than its 100 ms here, an /api request probed the dead Redis and opened it again: each
  // opening is one failed call, whatever the timing.
  EXPECT_EQ(metricValue(down, "floodgate_http_store_breaker_opened_total"),
            1 + metricValue(down, "floodgate_http_store_errors_total{policy=\"api\"}"))
      << down;
  EXPECT_TRUE(has(down,
                  "floodgate_http_store_fallback_decisions_total{policy=\"api\","
                  "mode=\"open\",outcome=\"allowed\"} 4\n"))
      << down;
  EXPECT_TRUE(has(down,
                  "floodgate_http_store_fallback_decisions_total{policy=\"api\","
                  "mode=\"open\",outcome=\"rejected\"} 4\n"))
      << down;

  ASSERT_TRUE(redis->restart());
  bool recovered = false;
  for (int i = 0; i < 100 && !recovered; ++i) {
    recovered = client.Get("/healthz")->status == 200;
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(recovered);
  EXPECT_TRUE(has(client.Get("/metrics")->body,
                  "floodgate_http_store_breaker_state{state=\"closed\"} 1\n"));
}

// Policies published to a Redis that asks for a login: the service follows them with
// --policy-redis-password-file (and --policy-redis-user for an ACL user), and its stores
// log in with the published store's password_file. Without the password it says why.
TEST(RedisExampleService, FollowsPoliciesOnARedisThatAsksForALogin) {
  std::unique_ptr<testing::RedisServer> redis;
  if (testing::haveRedis()) redis = testing::RedisServer::start();
  if (!redis) GTEST_SKIP() << "redis-server is not installed or did not start";
  ASSERT_TRUE(
      redis->command({"ACL", "SETUSER", "service", "on", ">acl-pass", "~*", "&*", "+@all"}).ok());
  ASSERT_TRUE(redis->command({"CONFIG", "SET", "requirepass", "default-pass"}).ok());
  redis->loginAs({"", "default-pass"});
  char name[] = "/tmp/fg-example-login-XXXXXX";
  const std::string dir = mkdtemp(name);
  auto privateFile = [&](const std::string& file, const std::string& text) {
    const std::string path = dir + "/" + file;
    std::ofstream(path) << text << "\n";
    EXPECT_EQ(chmod(path.c_str(), 0600), 0);
    return path;
  };
  const std::string secret = privateFile("fleet.key", "0123456789abcdef0123456789abcdef");
  const std::string store_password = privateFile("store.pass", "default-pass");
  const std::string acl_password = privateFile("acl.pass", "acl-pass");
  const std::string config = dir + "/floodgate.yaml";
  std::ofstream(config) << "http:\n  store: {type: redis, address: " << redis->address().text()
                        << ", password_file: " << store_password << "}\n"
                        << "  publish: {redis_key: fg:policies, secret_file: " << secret << "}\n"
                        << "  policies:\n    - {name: per-ip, key: ip, algorithm: fixed_window, "
                           "limit: 2, window_ms: 600000, failure_mode: closed}\n";
  auto published = publishHttpPolicies(config);
  ASSERT_TRUE(published.ok()) << published.error().message;

  const std::vector<std::string> follow = {"--policy-redis",       redis->address().text(),
                                           "--policy-key",         "fg:policies",
                                           "--policy-secret-file", secret};
  {
    auto args = follow;
    args.insert(args.end(),
                {"--policy-redis-user", "service", "--policy-redis-password-file", acl_password});
    testing::ExampleService service(testing::ExampleService::Arguments{args});
    ASSERT_GT(service.port(), 0) << service.stderrText();
    httplib::Client client("127.0.0.1", service.port());
    client.set_read_timeout(5);
    EXPECT_EQ(client.Get("/api/items")->status, 200);
    EXPECT_EQ(client.Get("/api/items")->status, 200);
    EXPECT_EQ(client.Get("/api/items")->status, 429) << "decided in Redis, logged in";
  }
  testing::ExampleService refused(testing::ExampleService::Arguments{follow});
  EXPECT_EQ(refused.exitCode(), 1);
  EXPECT_NE(refused.stderrText().find("NOAUTH"), std::string::npos) << refused.stderrText();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace floodgate::http
