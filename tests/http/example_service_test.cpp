// SPDX-License-Identifier: MIT
// End to end: the example service under a real HTTP client on 127.0.0.1 (429, headers).
#include "example_service.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "socket_probe.h"

namespace {

using floodgate::http::testing::ExampleService;
using floodgate::http::testing::KeepAliveClient;
using floodgate::http::testing::serverTcpNodelay;

// Buckets that refill once in 1000 s: no decision below depends on how fast the test runs.
constexpr const char* kConfig = R"(http:
  retry_after_jitter: 0  # the exact wait (jitter: retry_jitter_test.cpp)
  trusted_proxies: [127.0.0.1]
  client_header: x-forwarded-for
  policies:
    - name: per-key
      match: {path_prefix: /api}
      key: header:X-API-Key
      algorithm: gcra
      capacity: 10
      rate_per_s: 0.001
      routes:
        - match: {path_prefix: /api/reports}
          cost: 4
    - name: per-ip
      key: ip
      algorithm: sliding_window_log
      limit: 3
      window_ms: 3600000
)";

// The holder of key alpha adding a second, junk key line is answered 400 over HTTP and
// charges alpha nothing; the address is charged one unit a request, as for a bad request.
TEST(ExampleService, AKeyHeaderSentTwiceWithDifferentValuesIs400AndChargesTheKeyNothing) {
  ExampleService service(kConfig);
  ASSERT_GT(service.port(), 0) << service.stderrText();
  httplib::Client client("127.0.0.1", service.port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  for (int i = 0; i < 2; ++i) {
    httplib::Headers twice{{"X-API-Key", "alpha"},
                           {"X-API-Key", "junk-" + std::to_string(i)},
                           {"X-Forwarded-For", "198.51.100.1"}};
    auto refused = client.Get("/api/reports", twice);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
    EXPECT_EQ(refused->get_header_value("Content-Type"), "application/problem+json");
    EXPECT_FALSE(refused->has_header("Retry-After"));
    EXPECT_EQ(nlohmann::json::parse(refused->body)["title"], "Bad Request");
  }
  httplib::Headers once{{"X-API-Key", "alpha"}, {"X-Forwarded-For", "198.51.100.1"}};
  auto first = client.Get("/api/reports", once);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->get_header_value("RateLimit").substr(0, 16), R"("per-key";r=6;t=)");
  EXPECT_NE(first->get_header_value("RateLimit").find(R"("per-ip";r=0;)"), std::string::npos)
      << first->get_header_value("RateLimit");
}

TEST(ExampleService, RateLimitHeadersThen429WithRetryAfterAndProblemJson) {
  ExampleService service(kConfig);
  ASSERT_GT(service.port(), 0) << service.stderrText();
  httplib::Client client("127.0.0.1", service.port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  httplib::Headers key{{"X-API-Key", "alpha"}, {"X-Forwarded-For", "198.51.100.1"}};

  auto first = client.Get("/api/reports", key);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->get_header_value("RateLimit-Policy"),
            R"("per-key";q=10;w=10000, "per-ip";q=3;w=3600)");
  EXPECT_EQ(first->get_header_value("RateLimit").substr(0, 16), R"("per-key";r=6;t=)");

  auto second = client.Get("/api/reports", key);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  auto third = client.Get("/api/reports", key);  // needs 4, has 2
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 429);
  EXPECT_EQ(third->get_header_value("Content-Type"), "application/problem+json");
  int retry_after = std::atoi(third->get_header_value("Retry-After").c_str());
  EXPECT_GE(retry_after, 1999);  // 2 units at one per 1000 s, rounded up
  EXPECT_LE(retry_after, 2000);
  auto body = nlohmann::json::parse(third->body);
  EXPECT_EQ(body["status"], 429);
  EXPECT_EQ(body["violated-policies"], nlohmann::json::array({"per-key"}));
  EXPECT_NE(third->get_header_value("RateLimit").find(R"("per-key";r=2;)"), std::string::npos);

  // The per-key rejection was refunded to per-ip: this client (behind the trusted proxy)
  // still has one request left; then it is limited by address.
  auto cheap = client.Get("/healthz", {{"X-Forwarded-For", "198.51.100.1"}});
  ASSERT_TRUE(cheap);
  EXPECT_EQ(cheap->status, 200);
  EXPECT_EQ(cheap->get_header_value("RateLimit"), R"("per-ip";r=0;t=3600)");
  auto limited = client.Get("/healthz", {{"X-Forwarded-For", "198.51.100.1"}});
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(nlohmann::json::parse(limited->body)["violated-policies"],
            nlohmann::json::array({"per-ip"}));

  // Another client behind the proxy has its own budget.
  auto other = client.Get("/healthz", {{"X-Forwarded-For", "198.51.100.2"}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);

  auto metrics = client.Get("/metrics", {{"X-Forwarded-For", "198.51.100.3"}});
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find(
                R"(floodgate_http_decisions_total{policy="per-key",outcome="rejected"} 1)"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(
      metrics->body.find(R"(floodgate_http_requests_total{route="/api/reports",code="429"} 1)"),
      std::string::npos)
      << metrics->body;
}

TEST(ExampleService, RequestsNoPolicyMatchesCarryNoRateLimitHeaders) {
  ExampleService service(R"(http:
  policies:
    - name: api-only
      match: {path_prefix: /api}
      key: ip
      algorithm: fixed_window
      limit: 5
      window_ms: 1000
)");
  ASSERT_GT(service.port(), 0) << service.stderrText();
  httplib::Client client("127.0.0.1", service.port());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_FALSE(health->has_header("RateLimit"));
}

TEST(ExampleService, AMalformedOrderCostsOneUnitNotTheRoutesPriceYetCountsAsARequest) {
  ExampleService service(R"(http:
  trusted_proxies: [127.0.0.1]
  client_header: x-forwarded-for
  policies:
    - name: per-key
      match: {path_prefix: /api}
      key: header:X-API-Key
      algorithm: gcra
      capacity: 20
      rate_per_s: 0.001
      routes:
        - match: {methods: [POST], path_prefix: /api/orders}
          cost: 5
    - name: per-ip
      key: ip
      algorithm: sliding_window_log
      limit: 3
      window_ms: 3600000
)");
  ASSERT_GT(service.port(), 0) << service.stderrText();
  httplib::Client client("127.0.0.1", service.port());
  client.set_read_timeout(5);
  httplib::Headers key{{"X-API-Key", "alpha"}, {"X-Forwarded-For", "198.51.100.1"}};
  auto rateLimit = [](const httplib::Result& r) { return r->get_header_value("RateLimit"); };

  // No body: 400, charged one unit (20 - 1), not the route's 5; per-ip counts it.
  auto empty = client.Post("/api/orders", key, "", "application/json");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  EXPECT_NE(rateLimit(empty).find(R"("per-key";r=19;)"), std::string::npos) << rateLimit(empty);
  EXPECT_NE(rateLimit(empty).find(R"("per-ip";r=2;)"), std::string::npos) << rateLimit(empty);

  // A good order pays the route's price: 19 - 5.
  auto order = client.Post("/api/orders", key, R"({"item":"anvil"})", "application/json");
  ASSERT_TRUE(order);
  EXPECT_EQ(order->status, 200);
  EXPECT_NE(rateLimit(order).find(R"("per-key";r=14;)"), std::string::npos) << rateLimit(order);

  // Malformed requests are not free: the per-IP limit still counts every one of them.
  auto again = client.Post("/api/orders", key, "", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 400);
  EXPECT_NE(rateLimit(again).find(R"("per-key";r=13;)"), std::string::npos) << rateLimit(again);
  auto over = client.Post("/api/orders", key, "", "application/json");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 429);
  EXPECT_EQ(nlohmann::json::parse(over->body)["violated-policies"],
            nlohmann::json::array({"per-ip"}));

  auto metrics = client.Get("/metrics", {{"X-Forwarded-For", "198.51.100.3"}});
  ASSERT_TRUE(metrics);
  EXPECT_NE(
      metrics->body.find(R"(floodgate_http_requests_total{route="/api/orders",code="400"} 2)"),
      std::string::npos)
      << metrics->body;
}

// A keep-alive client is not held up by Nagle's algorithm: the service's end of the
// connection has TCP_NODELAY (installRateLimiter turns it on), so no response, a 429
// included, waits ~40 ms for the client's delayed ACK. Read from a copy of the service's
// socket, never from a clock.
TEST(ExampleService, KeepAliveConnectionsHaveNagleOff) {
  ExampleService service(R"(http:
  policies:
    - {name: once, key: ip, algorithm: fixed_window, limit: 1, window_ms: 604800000}
)");
  ASSERT_GT(service.port(), 0) << service.stderrText();
  // The service closes a connection idle for 5 s (cpp-httplib's keep-alive timeout): should
  // the test be that slow between a response and the look, it looks again on a new one.
  int nodelay = -1;
  for (int attempt = 0; attempt < 3 && nodelay < 0; ++attempt) {
    KeepAliveClient client(service.port());
    ASSERT_GE(client.fd(), 0);
    EXPECT_EQ(client.get("/healthz"), attempt == 0 ? 200 : 429);
    EXPECT_EQ(client.get("/healthz"), 429);  // the same connection
    nodelay = serverTcpNodelay(service.pid(), client);
    if (nodelay < 0) {
      ASSERT_TRUE(client.closedByServer()) << "no socket of the service is its end";
    }
  }
  EXPECT_EQ(nodelay, 1);
}

// cpp-httplib would close a keep-alive connection after its fifth request; the service keeps
// it for 1000, so its clients do not connect again every fifth request.
TEST(ExampleService, AKeepAliveConnectionServesMoreThanFiveRequests) {
  ExampleService service("http:\n");
  ASSERT_GT(service.port(), 0) << service.stderrText();
  KeepAliveClient client(service.port());
  ASSERT_GE(client.fd(), 0);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(client.get("/healthz"), 200) << "request " << i + 1;
}

TEST(ExampleService, InvalidConfigExitsOneWithFileLineColumn) {
  ExampleService service(
      "http:\n  policies:\n    - name: x\n      key: ip\n"
      "      algorithm: gcra\n      capacity: many\n      rate_per_s: 1\n");
  EXPECT_EQ(service.port(), 0);
  EXPECT_EQ(service.exitCode(), 1);
  std::string err = service.stderrText();
  EXPECT_NE(err.find(".yaml:6:17: policy 'x'.capacity must be a whole number"), std::string::npos)
      << err;
}

}  // namespace
