// SPDX-License-Identifier: MIT
// The example service's /metrics with the Redis store: store errors, breaker state,
// fallback decisions, stranded prefetch units and the live instance count, through an outage.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "floodgate/core/config_parser.h"
#include "http/example/service_metrics.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

TEST(RedisMetrics, ExampleServiceExportsStoreHealth) {
  std::unique_ptr<testing::RedisServer> server;
  if (testing::haveRedis()) server = testing::RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server is not installed or did not start";
  auto config = parseHttpConfigText(
      "http:\n  store:\n    type: redis\n    address: " + server->address().text() +
          "\n    timeout_ms: 100\n    instances: 2\n    breaker: {failures: 1, open_ms: 60000}\n"
          "  policies:\n"
          "    - {name: api, key: ip, algorithm: token_bucket, capacity: 10, rate_per_s: 1,\n"
          "       prefetch: {batch: 4, hot_keys: [192.0.2.1]}}\n"
          "    - {name: login, key: ip, algorithm: fixed_window, limit: 5, window_ms: 60000,\n"
          "       failure_mode: closed, match: {path_prefix: /login}}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  // time stands still for the library: the hot key's lease cannot lapse mid-test, however
  // long a step takes here (the scripts still read Redis's own clock)
  auto limiter = Limiter::create(std::move(*config), std::make_shared<ManualClock>(1'000'000'000));
  ASSERT_TRUE(limiter.ok());
  example::ServiceMetrics metrics;
  auto request = [&](std::string_view path) {
    metrics.countVerdict((*limiter)->check(RequestInfo{"GET", path, "192.0.2.1", {}, {}, {}}));
  };
  request("/api");
  // the heartbeat thread's first beat: this process is the one live instance, and shares
  // divide by the floor of 2 all the same
  for (int i = 0; i < 200 && metrics.render(**limiter).find(
                                 "floodgate_http_store_live_instances 1\n") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string before = metrics.render(**limiter);
  EXPECT_NE(before.find("floodgate_http_store_live_instances 1\n"), std::string::npos) << before;
  EXPECT_NE(before.find("floodgate_http_store_share_divisor 2\n"), std::string::npos) << before;
  EXPECT_NE(before.find("floodgate_http_prefetch_stranded_units{policy=\"api\"} 3\n"),
            std::string::npos)
      << before;
  EXPECT_NE(before.find("floodgate_http_store_breaker_state{state=\"closed\"} 1\n"),
            std::string::npos);

  server->kill();
  request("/login");  // fails: opens the breaker (failures: 1)
  request("/login");  // the breaker is open: no call at all
  std::string after = metrics.render(**limiter);
  for (const char* line :
       {// api matches too, but its hot key spends its lease: no call, no error
        "floodgate_http_store_errors_total{policy=\"api\"} 0\n",
        "floodgate_http_store_errors_total{policy=\"login\"} 1\n",
        "floodgate_http_decisions_total{policy=\"api\",outcome=\"allowed\"} 3\n",
        "floodgate_http_store_breaker_state{state=\"open\"} 1\n",
        "floodgate_http_store_breaker_opened_total 1\n",
        "floodgate_http_store_fallback_decisions_total{policy=\"login\",mode=\"closed\","
        "outcome=\"rejected\"} 2\n",
        "floodgate_http_decisions_total{policy=\"login\",outcome=\"store_unavailable\"} 2\n"}) {
    EXPECT_NE(after.find(line), std::string::npos) << line << "\nin:\n" << after;
  }
}

}  // namespace
}  // namespace floodgate::http
