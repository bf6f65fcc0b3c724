// SPDX-License-Identifier: MIT
// End to end: `floodgate learn` on a limiter with generous limits while three sources send
// UDP at different rates across the veth network, then its proposal applied with --apply.
// Only what holds whatever the machine's timing is asserted: the sources counted, the
// proposal against the distribution it came from, the shape of the JSON, the files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e/child_process.h"
#include "e2e/veth_network.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr uint16_t kPort = 9999;
const std::vector<std::string> kSources = {"198.18.0.2", "198.18.0.3", "198.18.0.4"};
const std::vector<uint64_t> kRates = {100, 200, 400};

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class LearnE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create(kSources);
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    dir_ = std::filesystem::temp_directory_path() / ("floodgate-learn-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    config_ = (dir_ / "floodgate.yaml").string();
    // UDP to the test's port only, so the veth's own IPv6 chatter is not a source
    std::ofstream(config_) << "rules:\n"
                              "  - name: udp-per-source\n"
                              "    match: {protocol: udp, dst_ports: ["
                           << kPort << "]}\n"
                           << "    limit: {pps: 1M, burst: 100k}\n";
  }

  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Attaches the limiter with the test's config, then starts `floodgate learn IFACE args...`
  // in the target namespace, its output in learn.log.
  Result<ChildProcess> attachAndLearn(const std::vector<std::string>& args) {
    const std::string iface = net_->targetInterface();
    CommandResult attach = net_->floodgate({"attach", iface, "--config", config_});
    if (attach.exit_code != 0) return Error::failure("attach failed: " + attach.err);
    std::vector<std::string> argv = {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN,
                                     "learn", iface};
    argv.insert(argv.end(), args.begin(), args.end());
    return ChildProcess::start(argv, (dir_ / "learn.log").string());
  }

  std::unique_ptr<VethNetwork> net_;
  std::filesystem::path dir_;
  std::string config_;
};

TEST_F(LearnE2eTest, BadInputIsOneClearLine) {
  const std::string iface = net_->targetInterface();
  CommandResult missing = net_->floodgate({"learn", "nosuch0", "--for", "1s"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err,
            "floodgate: error: no network interface named 'nosuch0' (see 'ip link'; "
            "in a namespace, run floodgate inside it)\n");
  CommandResult detached = net_->floodgate({"learn", iface, "--for", "1s"});
  EXPECT_EQ(detached.exit_code, 1);
  EXPECT_NE(detached.err.find("floodgate is not attached to '" + iface + "'"), std::string::npos)
      << detached.err;
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--for", "0s"},
                                                {"--for", "2h"},
                                                {"--for", "1s", "--percentile", "0"},
                                                {"--for", "1s", "--percentile", "100.5"},
                                                {"--for", "1s", "--margin", "0.9"}}) {
    std::vector<std::string> args = {"learn", iface};
    args.insert(args.end(), flags.begin(), flags.end());
    CommandResult r = net_->floodgate(args);
    EXPECT_EQ(r.exit_code, 2) << flags[1];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(LearnE2eTest, LearnsThreeSourcesProposesWithinTheMarginAndApplies) {
  const std::string iface = net_->targetInterface();
  CommandResult attach = net_->floodgate({"attach", iface, "--config", config_});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;

  std::vector<std::thread> senders;
  std::vector<Result<UdpSendResult>> sent(kSources.size(), Error::failure("not run"));
  for (size_t i = 0; i < kSources.size(); ++i) {
    senders.emplace_back([&, i] {
      UdpSendOptions options;
      options.netns = net_->senderNetns();
      options.source = kSources[i];
      options.destination = VethNetwork::kTargetAddress;
      options.port = kPort;
      options.seconds = 4.5;  // outlasts the 3 s of learning and its start
      options.rate_pps = kRates[i];
      sent[i] = sendUdp(options);
    });
  }
  const std::string output = (dir_ / "proposal.yaml").string();
  CommandResult learn = net_->floodgate(
      {"learn", iface, "--for", "3s", "--json", "--output", output, "--diff", config_, "--apply"});
  for (std::thread& sender : senders) sender.join();
  for (const auto& result : sent) ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(learn.exit_code, 0) << learn.err;

  std::printf("%s", learn.out.c_str());
  nlohmann::json report = nlohmann::json::parse(learn.out);
  EXPECT_EQ(report["interface"], iface);
  EXPECT_EQ(report["duration_s"], 3.0);
  EXPECT_EQ(report["percentile"], 99.9);
  EXPECT_EQ(report["margin"], 1.5);
  EXPECT_EQ(report["apply"], true);
  EXPECT_EQ(report["sources_beyond_cap"], 0);
  ASSERT_EQ(report["rules"].size(), 1u);
  const nlohmann::json& rule = report["rules"][0];
  EXPECT_EQ(rule["name"], "udp-per-source");
  EXPECT_EQ(rule["per_source"], true);
  EXPECT_EQ(rule["sources"], kSources.size());
  // each source has at most one window per second of the run, and at least one
  EXPECT_GE(rule["source_windows"], kSources.size());
  EXPECT_LE(rule["source_windows"], 3 * kSources.size());
  for (const char* spread : {"pps", "bps", "burst"}) {
    const nlohmann::json& s = rule[spread];
    EXPECT_GT(s["p50"], 0) << spread;
    EXPECT_LE(s["p50"], s["p99"]) << spread;
    EXPECT_LE(s["p99"], s["p99_9"]) << spread;
    EXPECT_EQ(s["chosen"], s["p99_9"]) << spread;
    EXPECT_LE(s["p99_9"], s["max"]) << spread;
  }
  EXPECT_LE(rule["packets"]["per_source"], rule["packets"]["rule"]);
  EXPECT_EQ(rule["packets"]["untracked"], 0);

  // the proposal is the p99.9 figure times the margin, rounded up
  ASSERT_TRUE(rule["proposal"].is_object()) << rule.dump();
  const uint64_t pps = rule["proposal"]["pps"], burst = rule["proposal"]["burst"];
  const uint64_t observed_pps = rule["pps"]["chosen"], observed_burst = rule["burst"]["chosen"];
  EXPECT_GE(pps, observed_pps);
  EXPECT_EQ(pps, static_cast<uint64_t>(std::ceil(observed_pps * 1.5)));
  EXPECT_GE(burst, observed_burst);
  EXPECT_EQ(burst, static_cast<uint64_t>(std::ceil(observed_burst * 1.5)));
  const nlohmann::json& replay = rule["replay"];
  EXPECT_EQ(replay["sources"], kSources.size());
  EXPECT_LE(replay["dropped"], replay["packets"]);
  EXPECT_GE(replay["dropped_share"], 0.0);
  EXPECT_LE(replay["dropped_share"], 1.0);

  const std::string yaml = readText(output);
  EXPECT_NE(yaml.find("  - name: udp-per-source\n    limit: {pps: " + std::to_string(pps) +
                      ", burst: " + std::to_string(burst) + "}\n"),
            std::string::npos)
      << yaml;
  const std::string diff = report["diff"].get<std::string>();
  EXPECT_NE(diff.find("@@ rule udp-per-source (line 2) @@\n-    limit: {pps: 1000000, burst: "
                      "100000}\n+    limit: {pps: " +
                      std::to_string(pps) + ", burst: " + std::to_string(burst) + "}\n"),
            std::string::npos)
      << diff;

  // --apply set the proposal on the running rule, as `floodgate set` does
  CommandResult status = net_->floodgate({"status", iface, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto limit = nlohmann::json::parse(status.out)["interfaces"][0]["rules"][0]["limit"];
  EXPECT_EQ(limit["pps"], pps);
  EXPECT_EQ(limit["burst"], burst);
}

// Whether `pid` has a handler for `signo` (its SigCgt mask in /proc): the command is past
// installing it, however slow the machine is to start it.
bool catches(pid_t pid, int signo) {
  std::istringstream status(readText("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    return (std::stoull(line.substr(7), nullptr, 16) >> (signo - 1)) & 1;
  }
  return false;
}

// An operator who stops a run that was to apply limits wants none applied: a run cut short by
// Ctrl-C prints what it saw but writes no --output and applies nothing, --force or not.
TEST_F(LearnE2eTest, ARunStoppedByCtrlCWritesAndAppliesNothing) {
  const std::string iface = net_->targetInterface();
  const std::string output = (dir_ / "proposal.yaml").string();
  auto learn = attachAndLearn({"--for", "1h", "--output", output, "--apply", "--force"});
  ASSERT_TRUE(learn.ok()) << learn.error().message;
  for (int i = 0; i < 200 && !catches(learn->pid(), SIGINT); ++i) usleep(50000);
  ASSERT_TRUE(catches(learn->pid(), SIGINT)) << learn->log();
  learn->signal(SIGINT);
  EXPECT_EQ(learn->wait(30), 1) << learn->log();
  EXPECT_NE(learn->log().find("floodgate: error: stopped by Ctrl-C after "), std::string::npos)
      << learn->log();
  EXPECT_NE(learn->log().find("of 1h sampled: nothing written or applied"), std::string::npos)
      << learn->log();
  EXPECT_FALSE(std::filesystem::exists(output));
}

// A proposal is checked against the limits the run started from, so it is applied only over
// those: limits changed during the run (the adaptive governor squeezing the rule under a
// flood, `floodgate set`, a reload) are not overwritten, --force or not.
TEST_F(LearnE2eTest, LimitsChangedDuringTheRunAreNotOverwritten) {
  const std::string iface = net_->targetInterface();
  const std::string output = (dir_ / "proposal.yaml").string();
  auto learn = attachAndLearn({"--for", "2s", "--output", output, "--apply", "--force"});
  ASSERT_TRUE(learn.ok()) << learn.error().message;
  // said once the limits the run starts from are read
  const std::string started = "floodgate: learning from " + iface + " for 2s";
  for (int i = 0; i < 200 && learn->log().find(started) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(learn->log().find(started), std::string::npos) << learn->log();
  CommandResult set =
      net_->floodgate({"set", iface, "udp-per-source", "--pps", "500k", "--burst", "50k"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  UdpSendOptions options;
  options.netns = net_->senderNetns();
  options.source = kSources[0];
  options.destination = VethNetwork::kTargetAddress;
  options.port = kPort;
  options.seconds = 3;  // outlasts the run
  options.rate_pps = kRates[0];
  auto sent = sendUdp(options);
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  EXPECT_EQ(learn->wait(30), 1) << learn->log();
  EXPECT_NE(learn->log().find("floodgate: error: not applied: the limits of rule "
                              "'udp-per-source' changed during the run"),
            std::string::npos)
      << learn->log();
  CommandResult status = net_->floodgate({"status", iface, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto limit = nlohmann::json::parse(status.out)["interfaces"][0]["rules"][0]["limit"];
  EXPECT_EQ(limit["pps"], 500000);
  EXPECT_EQ(limit["burst"], 50000);
}

// The proposal is written as root: never through a link planted where the file should be or
// as a directory of its path.
TEST_F(LearnE2eTest, TheProposalIsNeverWrittenThroughASymbolicLink) {
  const std::string iface = net_->targetInterface();
  CommandResult attach = net_->floodgate({"attach", iface, "--config", config_});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  const std::string victim = (dir_ / "precious").string(), link = (dir_ / "out.yaml").string();
  std::ofstream(victim) << "keep me\n";
  std::filesystem::create_symlink(victim, link);
  // a learn run writing to `path` fails in one line that says `why`
  auto refused = [&](const std::string& path, const std::string& why) {
    CommandResult r = net_->floodgate({"learn", iface, "--for", "1s", "--output", path});
    EXPECT_EQ(r.exit_code, 1) << path;
    EXPECT_NE(r.err.find("cannot write the proposal to '" + path + "': " + why), std::string::npos)
        << r.err;
  };
  refused(link, "it is a symbolic link; give the path of a file itself");
  EXPECT_EQ(readText(victim), "keep me\n");
  // nor into a FIFO planted there, which would hold the command until someone read it
  const std::string fifo = (dir_ / "fifo.yaml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << strerror(errno);
  refused(fifo, "it is not a regular file; give the path of a file");
  // nor through a link as a directory of the path, which would send it where that points,
  // planted where anyone may write, as /tmp
  std::filesystem::permissions(dir_,
                               std::filesystem::perms::all | std::filesystem::perms::sticky_bit);
  std::filesystem::create_directory(dir_ / "real");
  std::filesystem::create_directory_symlink(dir_ / "real", dir_ / "planted");
  refused((dir_ / "planted" / "out.yaml").string(),
          "'" + (dir_ / "planted").string() + "' is a symbolic link (to '" +
              (dir_ / "real").string() + "'); give a path with no link in it");
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "real"));
}

}  // namespace
}  // namespace floodgate::test
