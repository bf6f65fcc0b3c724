// SPDX-License-Identifier: MIT
// End to end: the example service under two client groups on 127.0.0.1, bulk requests at
// high concurrency on a slow route and critical ones at a steady rate. Bulk is shed with
// 503 while critical requests all get through, and bulk is served again once it stops.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "example_service.h"
#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"

namespace {

using floodgate::http::testing::ExampleService;
using std::chrono::milliseconds;

// critical keeps 3 places of 6 for itself; a report takes 100 ms (--report-ms), so twelve
// clients asking for reports keep far more than bulk's 2 places wanted.
constexpr const char* kConfig = R"(http:
  shedding:
    retry_after: 2s
    classes:
      - name: critical
        max_in_flight: 6
        match:
          - {methods: [POST], path_prefix: /api/orders}
      - {name: normal, max_in_flight: 3, default: true}
      - name: bulk
        max_in_flight: 2
        match:
          - {path_prefix: /api/reports}
)";

// The value of the first metrics line starting with `series`, or -1.
long metric(const std::string& body, const std::string& series) {
  size_t at = body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::atol(body.c_str() + at + series.size() + 2);
}

TEST(SheddingE2e, CriticalRequestsGetThroughWhileBulkIsShedAndBulkComesBackAfter) {
  ExampleService service(kConfig, {"--report-ms", "100"});
  ASSERT_GT(service.port(), 0) << service.stderrText();

  std::atomic<bool> stop{false};
  std::atomic<int> bulk_ok{0}, bulk_shed{0}, bulk_other{0}, bulk_shed_well_formed{0};
  std::vector<std::thread> bulk;
  for (int t = 0; t < 12; ++t) {
    bulk.emplace_back([&] {
      httplib::Client client("127.0.0.1", service.port());
      client.set_connection_timeout(5);
      client.set_read_timeout(5);
      // bounded: 400 requests per client at most, and the test stops them long before
      for (int i = 0; i < 400 && !stop.load(); ++i) {
        auto res = client.Get("/api/reports");
        if (res && res->status == 200) {
          ++bulk_ok;
        } else if (res && res->status == 503) {
          ++bulk_shed;
          auto body = nlohmann::json::parse(res->body, nullptr, false);
          // retry_after 2s, spread by the default jitter to 2 or 3
          const std::string retry = res->get_header_value("Retry-After");
          if ((retry == "2" || retry == "3") && !body.is_discarded() &&
              body["overloaded"] == true && body["priority"] == "bulk" &&
              body["retry-after"] == std::stoi(retry)) {
            ++bulk_shed_well_formed;
          }
        } else {
          ++bulk_other;
        }
      }
    });
  }

  // Critical requests at a steady 50 a second while the bulk load runs.
  httplib::Client critical("127.0.0.1", service.port());
  critical.set_connection_timeout(5);
  critical.set_read_timeout(5);
  int critical_ok = 0;
  std::vector<int> critical_failed;
  constexpr int kCritical = 100;
  std::this_thread::sleep_for(milliseconds(200));  // the bulk load under way
  for (int i = 0; i < kCritical; ++i) {
    auto res = critical.Post("/api/orders", R"({"item":"anvil"})", "application/json");
    if (res && res->status == 200) {
      ++critical_ok;
    } else {
      critical_failed.push_back(res ? res->status : -1);
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  const int shed_during_load = bulk_shed.load();
  stop.store(true);
  for (auto& t : bulk) t.join();

  EXPECT_GE(critical_ok, kCritical * 99 / 100)
      << critical_failed.size() << " critical requests failed, the first with "
      << (critical_failed.empty() ? 0 : critical_failed[0]);
  EXPECT_GT(shed_during_load, 0) << "bulk was never shed: " << bulk_ok << " served";
  EXPECT_EQ(bulk_shed_well_formed.load(), bulk_shed.load())
      << "every shed request is a 503 with Retry-After and a body saying overloaded";
  EXPECT_EQ(bulk_other.load(), 0);

  // The load is gone: bulk is served again.
  httplib::Client after("127.0.0.1", service.port());
  after.set_read_timeout(5);
  auto report = after.Get("/api/reports");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->status, 200);

  // Every answered request gives its place back once the server has destroyed its
  // response, a moment after the client has it: within 5 s only the scrape itself is left.
  std::string body;
  for (int i = 0; i < 500; ++i) {
    auto metrics = after.Get("/metrics");
    ASSERT_TRUE(metrics);
    body = metrics->body;
    if (metric(body, "floodgate_http_in_flight") == 1) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(metric(body, "floodgate_http_in_flight"), 1) << body;
  EXPECT_EQ(
      metric(body, R"(floodgate_http_priority_requests_total{class="critical",result="shed"})"), 0)
      << body;
  EXPECT_EQ(metric(body, R"(floodgate_http_priority_requests_total{class="bulk",result="shed"})"),
            bulk_shed.load())
      << body;
  EXPECT_EQ(
      metric(body, R"(floodgate_http_priority_requests_total{class="bulk",result="admitted"})"),
      bulk_ok.load() + 1)
      << body;
}

// Whether no request is in flight, within 5 s (a place never given back never gets there).
bool eventuallyNone(const floodgate::http::Limiter& limiter) {
  for (int i = 0; i < 500; ++i) {
    if (limiter.shedder()->inFlight() == 0) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

// Whatever a route does (answers, answers 400, throws, streams, or does not exist) and
// whatever the limiter says, an admitted request holds its place while its route runs and
// has given it back by the time its response arrives: with or without bad_request_cost,
// when the service sets its own post-routing handler after the limiter's, and when
// on_verdict keeps copies of every verdict.
TEST(SheddingAdapter, EveryResponseGivesItsPlaceInFlightBack) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant == 0   ? "bad_request_cost 1"
                 : variant == 1 ? "bad_request_cost -1"
                                : "the service's own post-routing handler");
    auto config = floodgate::http::parseHttpConfigText(R"(http:
  shedding:
    classes:
      - {name: critical, max_in_flight: 4, match: [{path_prefix: /critical}]}
      - {name: bulk, max_in_flight: 2}
  policies:
    - {name: tiny, match: {path_prefix: /limited}, key: ip, algorithm: fixed_window, limit: 1,
       window_ms: 3600000}
)",
                                                       "test.yaml");
    ASSERT_TRUE(config.ok()) << config.error().message;
    auto made = floodgate::http::Limiter::create(std::move(*config),
                                                 std::make_shared<floodgate::http::SteadyClock>());
    ASSERT_TRUE(made.ok());
    std::shared_ptr<floodgate::http::Limiter> limiter = std::move(*made);
    std::atomic<int64_t> in_route{-1};  // the count a route saw while it ran
    httplib::Server server;
    server.Get("/ok", [&](const httplib::Request&, httplib::Response& res) {
      in_route = limiter->shedder()->inFlight();
      res.set_content("ok", "text/plain");
    });
    server.Get("/bad", [](const httplib::Request&, httplib::Response& res) { res.status = 400; });
    server.Get("/throw", [](const httplib::Request&, httplib::Response&) {
      throw std::runtime_error("route failed");
    });
    server.Get("/stream", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
        sink.write("chunk", 5);
        sink.done();
        return true;
      });
    });
    server.Get("/limited", [](const httplib::Request&, httplib::Response&) {});
    floodgate::http::HttplibOptions options;
    options.bad_request_cost = variant == 1 ? -1 : 1;
    std::vector<floodgate::http::Verdict> kept;  // only the server's one thread touches it
    options.on_verdict = [&kept](const httplib::Request&, const floodgate::http::Verdict& v) {
      kept.push_back(v);
    };
    floodgate::http::installRateLimiter(server, limiter, options);
    if (variant == 2) {
      server.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
        res.set_header("X-Served-By", "test");
      });
    }
    server.new_task_queue = [] { return new httplib::ThreadPool(1); };
    int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread serving([&] { server.listen_after_bind(); });
    {  // closed before the server stops, which would wait out its keep-alive
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(10);
      client.set_keep_alive(true);  // one server thread answers them all, in turn
      const std::pair<const char*, int> requests[] = {
          {"/ok", 200},     {"/bad", 400},     {"/throw", 500},   {"/missing", 404},
          {"/stream", 200}, {"/limited", 200}, {"/limited", 429}, {"/ok", 200},
      };
      for (int round = 0; round < 3; ++round) {
        for (auto [path, status] : requests) {
          if (round > 0 && std::string(path) == "/limited") continue;  // its one is spent
          in_route = -1;
          auto res = client.Get(path);
          ASSERT_TRUE(res) << path;
          EXPECT_EQ(res->status, status) << path;
          // given back when the server destroys the response, just after the client has it
          EXPECT_TRUE(eventuallyNone(*limiter)) << path << " kept its place";
          if (std::string(path) == "/ok") {
            EXPECT_EQ(in_route.load(), 1) << "held while it ran";
          }
        }
      }
    }
    server.stop();
    serving.join();
  }
}

}  // namespace
