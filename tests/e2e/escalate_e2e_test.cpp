// SPDX-License-Identifier: MIT
// End to end, the two layers together: a real HTTP client in one network namespace floods
// floodgate-http-example in another across the veth pair. It first gets 429s; the service
// reports it, `floodgate run` bans it in XDP, and its packets are dropped there (reason
// ban); when the ban runs out it is served again. A second client under its limit is never
// affected.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "e2e/child_process.h"
#include "e2e/lab_network.h"
#include "e2e/netns_http.h"
#include "nlohmann/json.hpp"

namespace floodgate::test {
namespace {

constexpr const char* kAbuser = "198.18.0.2";
constexpr const char* kClient = "198.18.0.3";
constexpr int kServicePort = 8080;
constexpr int kMetricsPort = 9477;

class EscalateE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto lab = LabNetwork::create({kAbuser, kClient});
    ASSERT_TRUE(lab.ok()) << lab.error().message;
    lab_ = std::move(*lab);
    char dir[] = "/tmp/fg-escalate-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    config_ = dir_ + "/floodgate.yaml";
    std::ofstream(config_) << "interfaces: [" << lab_->targetInterface() << "]\n"
                           << "rules:\n  - name: per-source\n    limit: {pps: 100k}\n"
                           << "http:\n"
                           << "  policies:\n"
                           << "    - name: per-ip\n      key: ip\n      algorithm: fixed_window\n"
                           << "      limit: 5\n      window_ms: 1000\n"
                           << "  escalate: {rejections: 10, within: 10s, ban: 3s, socket: " << dir_
                           << "/reports.sock}\n";
  }
  void TearDown() override {
    service_ = ChildProcess();
    daemon_ = ChildProcess();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  void startBoth() {
    auto daemon = ChildProcess::start(
        {"nsenter", "--net=" + lab_->targetNetns(), FLOODGATE_BIN, "run", "--config", config_,
         "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)},
        dir_ + "/daemon.log");
    ASSERT_TRUE(daemon.ok()) << daemon.error().message;
    daemon_ = std::move(*daemon);
    for (int i = 0; i < 100 && !std::ifstream(dir_ + "/reports.sock"); ++i) usleep(50000);
    auto service = ChildProcess::start(
        {"nsenter", "--net=" + lab_->targetNetns(), FLOODGATE_HTTP_EXAMPLE_BIN, "--config", config_,
         "--listen", std::string(LabNetwork::kTargetAddress) + ":" + std::to_string(kServicePort)},
        dir_ + "/service.log");
    ASSERT_TRUE(service.ok()) << service.error().message;
    service_ = std::move(*service);
    for (int i = 0; i < 100; ++i) {
      if (get(kClient).status == 200) return;
      usleep(50000);
    }
    FAIL() << "the example service never answered:\n" << service_.log() << daemon_.log();
  }

  HttpReply get(const char* source, int timeout_s = 2) {
    return httpGetFrom(lab_->senderNetns(), source, LabNetwork::kTargetAddress, kServicePort,
                       "/api/items", timeout_s);
  }

  uint64_t banDrops() {
    CommandResult r = lab_->floodgate({"stats", lab_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json stats = nlohmann::json::parse(r.out);  // outlives the loop
    for (const auto& row : stats["counters"]) {
      if (row["verdict"] == "drop" && row["reason"] == "ban") return row["packets"];
    }
    return 0;
  }

  std::unique_ptr<LabNetwork> lab_;
  std::string dir_, config_;
  ChildProcess daemon_, service_;  // after lab_: gone before the namespaces
};

TEST_F(EscalateE2eTest, AnAbuserGets429sThenAnXdpBanThatEndsWhileAPoliteClientIsUntouched) {
  startBoth();
  // the abuser: 5 a second are allowed, the rest are 429s with Retry-After
  int ok = 0, limited = 0, unanswered = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline && unanswered == 0) {
    HttpReply reply = get(kAbuser, 1);
    if (reply.status == 200) ++ok;
    if (reply.status == 429) ++limited;
    if (reply.status == 0) ++unanswered;  // the XDP ban: the connection never opens
  }
  EXPECT_GE(limited, 10) << "the service rejected it before the ban";
  EXPECT_EQ(unanswered, 1) << "then its connections stopped getting through";
  EXPECT_GT(banDrops(), 0u) << "dropped in XDP with reason ban";
  EXPECT_NE(daemon_.log().find("event=escalated source=198.18.0.2 ban=3s"), std::string::npos)
      << daemon_.log();
  // the polite client still gets through during the ban
  for (int i = 0; i < 3; ++i) EXPECT_EQ(get(kClient).status, 200);
  // after the ban (3 s from the report) the abuser is served again
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_EQ(get(kAbuser).status, 200) << daemon_.log();
  HttpReply metrics = httpGetIn(lab_->targetNetns(), kMetricsPort, "/metrics");
  EXPECT_NE(metrics.body.find("floodgate_http_escalations_total{result=\"banned\"} 1"),
            std::string::npos)
      << metrics.body;
}

}  // namespace
}  // namespace floodgate::test
