// SPDX-License-Identifier: MIT
// End to end: `floodgate http publish` (the controller's publish) changes the policy of a
// running floodgate-http-example (--policies) under continuous load: no request fails,
// every answer is 200 or 429 as the policy says, and the new limit takes effect with the
// units already used carried over. An invalid published file is refused and counted.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/command.h"
#include "example_service.h"
#include "floodgate/fleet/atomic_file.h"

namespace {

using floodgate::http::testing::ExampleService;
using floodgate::test::runCommand;

// One client key, a window far longer than the test: exactly `limit` requests get a 200.
// A sliding log has no window edge the test could happen to cross (a fixed window of an
// hour on the service's clock would start afresh at the turn of the hour).
std::string config(const std::string& published, int limit) {
  return "http:\n  publish: {file: " + published +
         "}\n  policies:\n    - name: per-key\n      match: {path_prefix: /api}\n"
         "      key: header:X-API-Key\n      algorithm: sliding_window_log\n      limit: " +
         std::to_string(limit) + "\n      window_ms: 3600000\n";
}

double sample(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// Clients sending GET /api/items as fast as answers come, on kept-alive connections.
class Load {
 public:
  Load(int port, int clients) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, port] {
        httplib::Client client("127.0.0.1", port);
        client.set_keep_alive(true);
        client.set_connection_timeout(5);
        client.set_read_timeout(5);
        while (!stop_) {
          auto res = client.Get("/api/items", {{"X-API-Key", "tenant-1"}});
          std::lock_guard lock(mutex_);
          if (!res) {
            ++errors_;
          } else {
            ++statuses_[res->status];
          }
        }
      });
    }
  }
  ~Load() { stop(); }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int count(int status) {
    std::lock_guard lock(mutex_);
    return statuses_[status];
  }
  int total() {
    std::lock_guard lock(mutex_);
    int n = errors_;
    for (const auto& [status, count] : statuses_) n += count;
    return n;
  }
  int errors() {
    std::lock_guard lock(mutex_);
    return errors_;
  }
  std::map<int, int> statuses() {
    std::lock_guard lock(mutex_);
    return statuses_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::map<int, int> statuses_;
  int errors_ = 0;
  std::vector<std::thread> threads_;
};

class PolicyFollowE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/fg-follow-XXXXXX";
    dir_ = mkdtemp(name);
    published_ = dir_ + "/run/http-policies.yaml";
    config_ = dir_ + "/floodgate.yaml";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void publish(int limit) {
    std::ofstream(config_) << config(published_, limit);
    auto result = runCommand({FLOODGATE_BIN, "http", "publish", "--config", config_});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    ASSERT_EQ(result.out.rfind("published http policies version ", 0), 0u) << result.out;
  }
  std::string metrics(int port) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get("/metrics");
    return res ? res->body : "";
  }
  template <class Done>
  bool waitFor(Done done, int seconds = 5) {
    for (int i = 0; i < seconds * 50 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }

  std::string dir_, published_, config_;
};

TEST_F(PolicyFollowE2e, APublishedChangeReachesARunningServiceWithoutAFailedRequest) {
  publish(20);
  ExampleService service(ExampleService::Arguments{{"--policies", published_}});
  ASSERT_GT(service.port(), 0) << service.stderrText();

  Load load(service.port(), 3);
  ASSERT_TRUE(waitFor([&] { return load.count(429) >= 50; })) << load.total();
  EXPECT_EQ(load.count(200), 20) << "the first limit";

  publish(50);  // raised: the 20 used stay used, 30 more are admitted
  ASSERT_TRUE(waitFor([&] { return load.count(200) >= 50; })) << service.stderrText();
  const int rejected_after = load.count(429);
  ASSERT_TRUE(waitFor([&] { return load.count(429) >= rejected_after + 50; }));
  EXPECT_EQ(load.count(200), 50) << "never more than the new limit, none of the old forgotten";

  publish(10);  // lowered: nothing more is admitted in this window
  std::string text = metrics(service.port());
  ASSERT_TRUE(waitFor([&] {
    text = metrics(service.port());
    return sample(text, "floodgate_http_policy_reloads_total{result=\"applied\"}") == 2;
  })) << text;
  const int admitted = load.count(200);
  const int rejected = load.count(429);
  ASSERT_TRUE(waitFor([&] { return load.count(429) >= rejected + 50; }));
  EXPECT_EQ(load.count(200), admitted);

  // An invalid published file: refused, counted, and the service keeps the last good set.
  ASSERT_TRUE(floodgate::http::writeFileAtomically(
                  published_, "version: broken\nhttp: {policies: [{name: x, key: ip}]}\n")
                  .ok());
  ASSERT_TRUE(waitFor([&] {
    text = metrics(service.port());
    return sample(text, "floodgate_http_policy_reloads_total{result=\"refused\"}") == 1;
  })) << text;
  const int before = load.total();
  ASSERT_TRUE(waitFor([&] { return load.total() >= before + 50; }));
  load.stop();

  EXPECT_EQ(load.errors(), 0) << "a request failed";
  for (const auto& [status, count] : load.statuses()) {
    EXPECT_TRUE(status == 200 || status == 429) << count << " answers of " << status;
  }
  EXPECT_EQ(load.count(200), admitted) << "the refused set changed nothing";
  EXPECT_EQ(sample(text, "floodgate_http_policy_version{version=\"broken\"}"), -1);
  EXPECT_EQ(sample(text, "floodgate_http_policy_refusals_total{reason=\"invalid\"}"), 1);
  EXPECT_EQ(sample(text, "floodgate_http_policy_refusals_total{reason=\"unsafe_file\"}"), 0);
  EXPECT_EQ(sample(text, "floodgate_http_requests_total{route=\"/api/items\",code=\"200\"}"),
            load.count(200));
}

}  // namespace
