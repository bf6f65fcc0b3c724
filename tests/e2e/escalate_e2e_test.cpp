// SPDX-License-Identifier: MIT
// End to end, the two layers together: a real HTTP client in one network namespace floods
// floodgate-http-example in another across the veth pair. It first gets 429s; the service
// reports it, `floodgate run` bans it in XDP, and its packets are dropped there (reason
// ban); when the ban runs out it is served again. A second client under its limit is never
// affected. The report goes over the controller's Unix socket, or, as in a fleet, through
// a signed Redis stream (a private redis-server in the service's namespace).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/command.h"
#include "e2e/child_process.h"
#include "e2e/netns_http.h"
#include "e2e/veth_network.h"
#include "kernel/unique_fd.h"
#include "nlohmann/json.hpp"

namespace floodgate::test {
namespace {

constexpr const char* kAbuser = "198.18.0.2";
constexpr const char* kClient = "198.18.0.3";
constexpr int kServicePort = 8080;
constexpr int kProxyPort = 8081;
constexpr int kMetricsPort = 9477;
constexpr int kRedisPort = 6390;  // inside the target namespace: its own ports

class EscalateE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kAbuser, kClient});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-escalate-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    config_ = dir_ + "/floodgate.yaml";
  }
  void TearDown() override {
    proxy_ = ChildProcess();
    service_ = ChildProcess();
    daemon_ = ChildProcess();
    redis_ = ChildProcess();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // The config both read: `store` and `escalate` are the lines of http.store and http.escalate.
  void writeConfig(const std::string& store, const std::string& escalate,
                   const std::string& clients = "") {
    std::ofstream(config_) << "interfaces: [" << net_->targetInterface() << "]\n"
                           << "rules:\n  - name: per-source\n    limit: {pps: 100k}\n"
                           << "http:\n"
                           << clients << store << "  policies:\n"
                           << "    - name: per-ip\n      key: ip\n      algorithm: fixed_window\n"
                           << "      limit: 5\n      window_ms: 1000\n"
                           << escalate;
  }

  // Reports over the controller's Unix socket.
  void configureSocket() {
    writeConfig("", "  escalate: {rejections: 10, within: 10s, ban: 3s, socket: " + dir_ +
                        "/reports.sock}\n");
  }

  // Reports through a Redis stream, signed with the fleet's secret: a redis-server in the
  // target namespace holds the store's counters and the stream.
  void configureStream() {
    const std::string port = std::to_string(kRedisPort);
    auto redis = ChildProcess::start(
        {"nsenter", "--net=" + net_->targetNetns(), "redis-server", "--port", port, "--bind",
         "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir_},
        dir_ + "/redis.log");
    ASSERT_TRUE(redis.ok()) << redis.error().message;
    redis_ = std::move(*redis);
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i) {
      up = runCommand({"nsenter", "--net=" + net_->targetNetns(), "redis-cli", "-p", port, "ping"})
               .out.find("PONG") != std::string::npos;
      if (!up) usleep(50000);
    }
    ASSERT_TRUE(up) << "redis-server did not start in the namespace:\n" << redis_.log();
    const std::string secret = dir_ + "/reports.key";
    std::ofstream(secret) << "e2e-secret-of-the-fleet-0123456789\n";
    ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
    writeConfig("  store: {type: redis, address: 127.0.0.1:" + port + "}\n",
                "  escalate: {rejections: 10, within: 10s, ban: 3s, socket: " + dir_ +
                    "/reports.sock, redis_stream: fg:reports, secret_file: " + secret + "}\n");
  }

  // The service listens on loopback behind a proxy that appends X-Forwarded-For (as nginx
  // does by default); the abuser forges every client header, naming the polite client.
  void configureBehindProxy() {
    writeConfig(
        "",
        "  escalate: {rejections: 10, within: 10s, ban: 3s, socket: " + dir_ + "/reports.sock}\n",
        "  trusted_proxies: [127.0.0.1]\n  client_header: x-forwarded-for\n");
    behind_proxy_ = true;
    // the proxy appends to the abuser's X-Forwarded-For on the same line, as nginx does:
    // the open quote would swallow the proxy's hop if quotes were honoured there
    forged_ = {{"Forwarded", std::string("for=") + kClient + ";x=\""},
               {"X-Forwarded-For", std::string("[") + kClient + "]\""},
               {"X-Real-IP", kClient}};
  }

  void startBoth() {
    auto daemon = ChildProcess::start(
        {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN, "run", "--config", config_,
         "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)},
        dir_ + "/daemon.log");
    ASSERT_TRUE(daemon.ok()) << daemon.error().message;
    daemon_ = std::move(*daemon);
    for (int i = 0; i < 100 && !std::ifstream(dir_ + "/reports.sock"); ++i) usleep(50000);
    const std::string service_host = behind_proxy_ ? "127.0.0.1" : VethNetwork::kTargetAddress;
    auto service = ChildProcess::start(
        {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_HTTP_EXAMPLE_BIN, "--config", config_,
         "--listen", service_host + ":" + std::to_string(kServicePort)},
        dir_ + "/service.log");
    ASSERT_TRUE(service.ok()) << service.error().message;
    service_ = std::move(*service);
    if (behind_proxy_) {
      auto proxy =
          ChildProcess::start({"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_TEST_PROXY_BIN,
                               VethNetwork::kTargetAddress, std::to_string(kProxyPort), "127.0.0.1",
                               std::to_string(kServicePort)},
                              dir_ + "/proxy.log");
      ASSERT_TRUE(proxy.ok()) << proxy.error().message;
      proxy_ = std::move(*proxy);
    }
    for (int i = 0; i < 100; ++i) {
      if (get(kClient).status == 200) return;
      usleep(50000);
    }
    FAIL() << "the example service never answered:\n" << service_.log() << daemon_.log();
  }

  // The abuser floods until its connections stop getting through; everything the test
  // name promises is checked, `reporter` is how the daemon's log names who reported it.
  void floodUntilBannedThenServedAgain(const std::string& reporter) {
    // the abuser: 5 a second are allowed, the rest are 429s with Retry-After; until an
    // unanswered request is one XDP dropped for a ban (a busy machine may leave a request
    // unanswered for a second without any ban: that one is only counted)
    int limited = 0, stalled = 0;
    bool banned = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && !banned) {
      HttpReply reply = get(kAbuser, 1);
      if (reply.status == 429) ++limited;
      if (reply.status == 0) {
        banned = banDrops() > 0;  // the XDP ban: the connection never opens
        stalled += !banned;
      }
    }
    EXPECT_GE(limited, 10) << "the service rejected it before the ban";
    EXPECT_TRUE(banned) << "then its connections stopped getting through, dropped in XDP "
                        << "with reason ban (" << stalled << " requests stalled)\n"
                        << service_.log() << daemon_.log();
    // `ban list` says the daemon's escalation started it, not an operator
    CommandResult list = net_->floodgate({"ban", "list", net_->targetInterface(), "--json"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    const auto bans = nlohmann::json::parse(list.out)["bans"];
    ASSERT_EQ(bans.size(), 1u) << list.out;
    EXPECT_EQ(bans[0]["by"], "escalation") << list.out;
    const std::string log = daemon_.log();
    EXPECT_NE(log.find("event=escalated source=198.18.0.2 ban=3s"), std::string::npos) << log;
    EXPECT_NE(log.find("reporter=\"" + reporter), std::string::npos) << log;
    // the polite client still gets through during the ban
    for (int i = 0; i < 3; ++i) EXPECT_EQ(get(kClient).status, 200);
    // after the ban (3 s from the report) the abuser is served again
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    EXPECT_EQ(get(kAbuser).status, 200) << daemon_.log();
    HttpReply metrics = httpGetIn(net_->targetNetns(), kMetricsPort, "/metrics");
    EXPECT_NE(metrics.body.find("floodgate_http_escalations_total{result=\"banned\"} 1"),
              std::string::npos)
        << metrics.body;
  }

  // A GET from `source`, through the proxy when there is one; the abuser sends forged_.
  HttpReply get(const char* source, int timeout_s = 2) {
    return httpGetFrom(net_->senderNetns(), source, VethNetwork::kTargetAddress,
                       behind_proxy_ ? kProxyPort : kServicePort, "/api/items", timeout_s,
                       std::string(source) == kAbuser ? forged_ : decltype(forged_){});
  }

  uint64_t banDrops() {
    CommandResult r = net_->floodgate({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json stats = nlohmann::json::parse(r.out);  // outlives the loop
    for (const auto& row : stats["counters"]) {
      if (row["verdict"] == "drop" && row["reason"] == "ban") return row["packets"];
    }
    return 0;
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_, config_;
  bool behind_proxy_ = false;
  std::vector<std::pair<std::string, std::string>> forged_;
  ChildProcess redis_, daemon_, service_, proxy_;  // after net_: gone before the namespaces
};

TEST_F(EscalateE2eTest, AnAbuserGets429sThenAnXdpBanThatEndsWhileAPoliteClientIsUntouched) {
  configureSocket();
  startBoth();
  floodUntilBannedThenServedAgain("pid ");
}

// Behind a proxy that appends only X-Forwarded-For, the abuser sends Forwarded,
// X-Forwarded-For and X-Real-IP naming the polite client: its key, its 429s and its ban are
// still its own address, the polite client is never touched, and the proxy is never banned.
TEST_F(EscalateE2eTest, BehindAProxyForgedClientHeadersChooseNeitherTheKeyNorWhoIsBanned) {
  configureBehindProxy();
  startBoth();
  floodUntilBannedThenServedAgain("pid ");
  const std::string log = daemon_.log();
  EXPECT_EQ(log.find("source=" + std::string(kClient)), std::string::npos) << log;
  EXPECT_EQ(log.find("source=127.0.0.1"), std::string::npos) << log;
  EXPECT_EQ(log.find("escalation_refused"), std::string::npos) << log;
}

// A report whose ban no interface took (another command holding the limiter's writer lock
// past the daemon's 3 s wait) is counted `failed`, not banned nor taken for a repeat: once
// the lock is free, the service's next report of the client bans it.
TEST_F(EscalateE2eTest, ABanNoInterfaceTookIsCountedFailedAndTheNextReportBans) {
  configureSocket();
  startBoth();
  // held until the daemon's ban has failed on it, however slow the machine is to get there
  const std::string pins = "/sys/fs/bpf/floodgate/" + net_->targetInterface();
  std::optional<UniqueFd> lock(UniqueFd(open(pins.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  ASSERT_TRUE(lock->valid()) << pins << ": " << strerror(errno);
  ASSERT_EQ(flock(lock->get(), LOCK_EX), 0) << strerror(errno);
  // 12 rejections: the 10th sends the report, then nothing more until the ban has failed, so
  // no second report can come before the lock is free
  int limited = 0;
  for (int i = 0; i < 200 && limited < 12; ++i) limited += get(kAbuser, 1).status == 429;
  ASSERT_EQ(limited, 12);
  const std::string failed = std::string("could not ban ") + kAbuser + " on ";
  for (int i = 0; i < 600 && daemon_.log().find(failed) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(daemon_.log().find(failed), std::string::npos) << daemon_.log();
  lock.reset();  // free
  HttpReply metrics = httpGetIn(net_->targetNetns(), kMetricsPort, "/metrics");
  EXPECT_NE(metrics.body.find("floodgate_http_escalations_total{result=\"failed\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_EQ(daemon_.log().find("event=escalated"), std::string::npos) << daemon_.log();

  floodUntilBannedThenServedAgain("pid ");
}

TEST_F(EscalateE2eTest, AFleetServiceReportsThroughTheSignedRedisStream) {
  if (runCommand({"sh", "-c", "command -v redis-server && command -v redis-cli"}).exit_code != 0) {
    GTEST_SKIP() << "redis-server or redis-cli is not installed (scripts/test.sh installs them)";
  }
  configureStream();
  startBoth();
  floodUntilBannedThenServedAgain("redis entry ");
}

}  // namespace
}  // namespace floodgate::test
