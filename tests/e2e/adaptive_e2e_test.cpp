// SPDX-License-Identifier: MIT
// End to end, `adaptive:`: `floodgate run` on the veth network with a capacity of 30k passed
// packets a second. 100 normal sources send 1 packet a second each; then 10k sources flood
// at 6 a second each, twice the capacity. The daemon tightens the per-source limit until
// what passes is under capacity, the normal sources keep their packets, and once the flood
// is over the limit comes back to where it was. Everything is polled with generous bounds:
// nothing here depends on how fast this machine is.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "e2e/child_process.h"
#include "e2e/netns_http.h"
#include "e2e/veth_network.h"
#include "kernel/unique_fd.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr int kMetricsPort = 9478;
constexpr uint16_t kNormalPort = 9999;
constexpr uint16_t kFloodPort = 9998;  // nobody listens: the flood is only counted by XDP
constexpr const char* kNormalFirst = "198.18.0.100";  // .100 to .199
constexpr int kNormalSources = 100;
constexpr int kCapacityPps = 30000;
constexpr int kLimitPps = 50;
constexpr int kFloorPps = 2;

// The sum of every sample whose series starts with `prefix` (name and first labels).
double sumOf(const std::string& exposition, const std::string& prefix) {
  std::istringstream in(exposition);
  double sum = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// The JSON report (`--json`, pretty-printed) in the log of a `floodgate flood` run: from the
// `{` that starts a line to the `}` that starts one, whatever else the log holds.
nlohmann::json floodReport(const std::string& log) {
  const size_t start = log.rfind('{', 0) == 0 ? 0 : log.find("\n{");
  const size_t end = log.rfind("\n}");
  if (start == std::string::npos || end == std::string::npos || end < start) {
    return nlohmann::json::value_t::discarded;
  }
  return nlohmann::json::parse(log.substr(start, end + 2 - start), nullptr, false);
}

class AdaptiveE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    if (runCommand({"sh", "-c", "command -v nsenter"}).exit_code != 0) {
      GTEST_SKIP() << "nsenter is not installed (Debian: util-linux)";
    }
    auto net = VethNetwork::create({});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-adaptive-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    flood_ = ChildProcess();
    normal_ = ChildProcess();
    daemon_ = ChildProcess();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  std::string scrape() { return httpGetIn(net_->targetNetns(), kMetricsPort, "/metrics").body; }
  std::string limitSeries(const char* kind, const std::string& rule) {
    return "floodgate_rule_limit{interface=\"" + net_->targetInterface() + "\",rule=\"" + rule +
           "\",kind=\"" + kind + "\"}";
  }
  double limit(const char* kind, const std::string& rule = "per-source") {
    return sumOf(scrape(), limitSeries(kind, rule));
  }
  // `floodgate run` on the target with `config`, its metrics on kMetricsPort.
  void startDaemon(const std::string& config) {
    auto daemon = ChildProcess::start(
        {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN, "run", "--config", config,
         "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)},
        dir_ + "/daemon.log");
    ASSERT_TRUE(daemon.ok()) << daemon.error().message;
    daemon_ = std::move(*daemon);
  }
  // Packets a second the program passed, over about half a second.
  double passedPps() {
    const std::string pass =
        "floodgate_packets_total{interface=\"" + net_->targetInterface() + "\",verdict=\"pass\"";
    const double t0 = monotonicSeconds();
    const double before = sumOf(scrape(), pass);
    usleep(500000);
    const double after = sumOf(scrape(), pass);
    return (after - before) / (monotonicSeconds() - t0);
  }

  // `floodgate flood` out of the sending end, in the background, its report in its log.
  ChildProcess startFlood(const std::string& name, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {"nsenter", "--net=" + net_->senderNetns(), FLOODGATE_BIN,
                                     "flood",   net_->senderInterface(),        "--json",
                                     "--dst",   VethNetwork::kTargetAddress};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto child = ChildProcess::start(argv, dir_ + "/" + name + ".log");
    EXPECT_TRUE(child.ok()) << child.error().message;
    return child.ok() ? std::move(*child) : ChildProcess();
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_;
  // Declared after net_: destroyed first, so every child is gone before the namespaces.
  ChildProcess daemon_, normal_, flood_;
};

TEST_F(AdaptiveE2eTest, AFloodTightensTheLimitUnderCapacityAndItComesBackAfter) {
  const std::string config = dir_ + "/floodgate.yaml";
  std::ofstream(config) << "interfaces:\n"
                        << "  - name: " << net_->targetInterface() << "\n"
                        << "    adaptive:\n"
                        << "      capacity: {pps: " << kCapacityPps << "}\n"
                        << "      floors: {per-source: {pps: " << kFloorPps << ", burst: 2}}\n"
                        << "      step: 0.5\n"
                        << "      interval: 250ms\n"
                        << "      relax_after: 1s\n"
                        << "rules:\n  - name: per-source\n    match: {protocol: udp}\n"
                        << "    limit: {pps: " << kLimitPps << ", burst: 10}\n";
  startDaemon(config);
  for (int i = 0; i < 200 && limit("pps") != kLimitPps; ++i) usleep(50000);
  const double configured_pps = limit("pps");
  const double configured_burst = limit("burst");
  ASSERT_EQ(configured_pps, kLimitPps) << daemon_.log();

  UdpCounter receiver;
  ASSERT_TRUE(receiver.start(net_->targetNetns(), kNormalPort).ok());
  // 100 sources, one packet a second each, through the flood and after it
  normal_ = startFlood("normal", {"--dst-port", std::to_string(kNormalPort), "--src", kNormalFirst,
                                  "--sources", std::to_string(kNormalSources), "--rate",
                                  std::to_string(kNormalSources), "--duration", "16s"});
  sleep(2);
  EXPECT_EQ(limit("pps"), configured_pps) << "normal traffic moves nothing\n" << daemon_.log();

  // 10k sources at 6 packets a second each: 60k a second, twice the capacity
  flood_ = startFlood("flood", {"--dst-port", std::to_string(kFloodPort), "--src", "10.0.0.1",
                                "--sources", "10000", "--rate", "60k", "--duration", "8s"});
  bool under_capacity = false;
  double lowest_pps = configured_pps, passed = -1;
  const double flood_end = monotonicSeconds() + 8;
  while (monotonicSeconds() < flood_end && !under_capacity) {
    const double now_pps = limit("pps");
    lowest_pps = std::min(lowest_pps, now_pps);
    if (now_pps < configured_pps) {
      passed = passedPps();
      // still tightened while measured, and the flood still on
      under_capacity =
          passed < kCapacityPps && limit("pps") < configured_pps && monotonicSeconds() < flood_end;
    } else {
      usleep(100000);
    }
  }
  EXPECT_TRUE(under_capacity) << "lowest limit " << lowest_pps << " pps, last passed " << passed
                              << " pps\n"
                              << daemon_.log();
  EXPECT_GE(lowest_pps, kFloorPps) << "never below the floor";
  const int flood_exit = flood_.wait(30);
  const nlohmann::json flood = floodReport(flood_.log());
  EXPECT_EQ(flood_exit, 0) << flood_.log();

  // After the flood: step by step back to exactly the configured limit.
  double back_pps = -1, back_burst = -1;
  for (int i = 0; i < 300; ++i) {  // 30 s at most
    back_pps = limit("pps");
    back_burst = limit("burst");
    if (back_pps == configured_pps && back_burst == configured_burst) break;
    usleep(100000);
  }
  EXPECT_EQ(back_pps, configured_pps) << daemon_.log();
  EXPECT_EQ(back_burst, configured_burst);
  const std::string text = scrape();
  const std::string events =
      "floodgate_events_total{interface=\"" + net_->targetInterface() + "\",event=\"adaptive_";
  EXPECT_GT(sumOf(text, events + "tighten\"}"), 0) << text;
  EXPECT_GT(sumOf(text, events + "relax\"}"), 0);

  const int normal_exit = normal_.wait(30);
  usleep(200000);
  auto received = receiver.stop();
  const nlohmann::json normal = floodReport(normal_.log());
  ASSERT_EQ(normal_exit, 0) << normal_.log();
  ASSERT_FALSE(normal.is_discarded()) << normal_.log();
  uint64_t normal_received = 0;
  for (int i = 0; i < kNormalSources; ++i) {
    normal_received += received["198.18.0." + std::to_string(100 + i)];
  }
  const uint64_t normal_sent = normal["sent"].get<uint64_t>();
  std::printf("normal sources: %llu of %llu packets arrived; flood: %s; veth queue drops %llu\n",
              static_cast<unsigned long long>(normal_received),
              static_cast<unsigned long long>(normal_sent), flood.dump().c_str(),
              static_cast<unsigned long long>(net_->senderQueueDrops()));
  EXPECT_GT(normal_sent, 1000u);
  EXPECT_GE(static_cast<double>(normal_received), 0.9 * static_cast<double>(normal_sent));

  const std::string log = daemon_.log();
  EXPECT_NE(log.find("event=adaptive_tighten interface=" + net_->targetInterface() +
                     " rule=per-source pps=50->25"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("event=adaptive_relax"), std::string::npos);
}

// An operator who sets a rule by hand in the middle of an attack keeps what they set: the
// daemon's next step (a tightening while the flood lasts, the relaxing after it) finds
// limits it did not put there, says so and leaves that rule alone, while the other rule it
// governs moves down and all the way back as before.
TEST_F(AdaptiveE2eTest, ALimitSetByHandHoldsThroughTheAdaptiveSteps) {
  const std::string config = dir_ + "/floodgate.yaml";
  std::ofstream(config) << "interfaces:\n"
                        << "  - name: " << net_->targetInterface() << "\n"
                        << "    adaptive:\n"
                        << "      capacity: {pps: 2000}\n"
                        << "      floors: {per-source: {pps: 2, burst: 2}, other: {pps: 2, "
                           "burst: 2}}\n"
                        << "      step: 0.5\n"
                        << "      interval: 250ms\n"
                        << "      relax_after: 1s\n"
                        << "rules:\n  - name: per-source\n    match: {protocol: udp}\n"
                        << "    limit: {pps: " << kLimitPps << ", burst: 10}\n"
                        << "  - name: other\n    match: {protocol: tcp, dst_ports: [1]}\n"
                        << "    limit: {pps: 40, burst: 8}\n";
  startDaemon(config);
  for (int i = 0; i < 200 && limit("pps") != kLimitPps; ++i) usleep(50000);
  ASSERT_EQ(limit("pps"), kLimitPps) << daemon_.log();
  ASSERT_EQ(limit("pps", "other"), 40);

  // 1000 sources at 10 a second each: five times the capacity
  flood_ = startFlood("flood", {"--dst-port", std::to_string(kFloodPort), "--src", "10.0.0.1",
                                "--sources", "1000", "--rate", "10k", "--duration", "4s"});
  for (int i = 0; i < 200 && limit("pps") >= kLimitPps; ++i) usleep(50000);
  ASSERT_LT(limit("pps"), kLimitPps) << "the flood tightened the rule\n" << daemon_.log();

  CommandResult set =
      net_->floodgate({"set", net_->targetInterface(), "per-source", "--pps", "7", "--burst", "3"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(flood_.wait(30), 0) << flood_.log();

  // the other rule comes back to its configured limits: the governor is back at level 0
  for (int i = 0; i < 300 && limit("pps", "other") != 40; ++i) usleep(100000);
  EXPECT_EQ(limit("pps", "other"), 40) << daemon_.log();
  EXPECT_EQ(limit("burst", "other"), 8);
  EXPECT_EQ(limit("pps"), 7) << "the hand-set limit holds\n" << daemon_.log();
  EXPECT_EQ(limit("burst"), 3);
  EXPECT_NE(daemon_.log().find("event=adaptive_released interface=" + net_->targetInterface() +
                               " rule=per-source"),
            std::string::npos)
      << daemon_.log();
}

// Another writer holding the limiter's lock (a `floodgate` command, here the test's own flock
// on its pin directory) for longer than the daemon waits makes a step fail: the rule keeps the
// limits it ran, the governor knows it, and once the lock is free the steps go on from there. The
// rule is not taken for one set by hand (released), which would leave it where it was.
TEST_F(AdaptiveE2eTest, AStepThatFindsTheLimiterLockedIsMadeOnceItIsFree) {
  const std::string config = dir_ + "/floodgate.yaml";
  std::ofstream(config) << "interfaces:\n"
                        << "  - name: " << net_->targetInterface() << "\n"
                        << "    adaptive:\n"
                        << "      capacity: {pps: 2000}\n"
                        << "      floors: {per-source: {pps: 2, burst: 2}}\n"
                        << "      step: 0.9\n"
                        << "      interval: 250ms\n"
                        << "      relax_after: 60s\n"
                        << "rules:\n  - name: per-source\n    match: {protocol: udp}\n"
                        << "    limit: {pps: " << kLimitPps << ", burst: 10}\n";
  startDaemon(config);
  for (int i = 0; i < 200 && limit("pps") != kLimitPps; ++i) usleep(50000);
  ASSERT_EQ(limit("pps"), kLimitPps) << daemon_.log();

  // 1000 sources at 10 a second each, five times the capacity, for longer than the test
  flood_ = startFlood("flood", {"--dst-port", std::to_string(kFloodPort), "--src", "10.0.0.1",
                                "--sources", "1000", "--rate", "10k", "--duration", "60s"});
  for (int i = 0; i < 200 && limit("pps") >= kLimitPps; ++i) usleep(50000);
  ASSERT_LT(limit("pps"), kLimitPps) << "the flood tightened the rule\n" << daemon_.log();

  // held here until a step has failed on it, however slow the machine is to get there
  const std::string pins = "/sys/fs/bpf/floodgate/" + net_->targetInterface();
  std::optional<UniqueFd> lock(UniqueFd(open(pins.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  ASSERT_TRUE(lock->valid()) << pins << ": " << strerror(errno);
  ASSERT_EQ(flock(lock->get(), LOCK_EX), 0) << strerror(errno);
  const std::string failed = "rule=per-source failed: ";
  for (int i = 0; i < 600 && daemon_.log().find(failed) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(daemon_.log().find(failed), std::string::npos) << daemon_.log();
  const double held = limit("pps");
  lock.reset();  // free

  for (int i = 0; i < 200 && limit("pps") >= held; ++i) usleep(50000);
  EXPECT_LT(limit("pps"), held) << "the steps went on once the lock was free\n" << daemon_.log();
  EXPECT_EQ(daemon_.log().find("adaptive_released"), std::string::npos) << daemon_.log();
  EXPECT_NE(daemon_.log().find("s limits: a change before could not be written\""),
            std::string::npos)
      << "the change after it says it was made from the limits the rule ran\n"
      << daemon_.log();
}

}  // namespace
}  // namespace floodgate::test
