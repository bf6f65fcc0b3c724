// SPDX-License-Identifier: MIT
// End to end, live changes: reloads under traffic keep every bucket and drop nothing of a
// source under its limit, an invalid reload leaves the old rules enforcing, and `set` and
// `ban` act at once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/program_clock.h"
#include "e2e/veth_network.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr const char* kFlooder = "198.18.0.2";
constexpr const char* kQuiet = "198.18.0.3";
constexpr uint16_t kPort = 9999;

std::string ruleYaml(const std::string& name, uint64_t pps, uint64_t burst) {
  return "  - name: " + name +
         "\n    match: {protocol: udp}\n    limit: {pps: " + std::to_string(pps) +
         ", burst: " + std::to_string(burst) + "}\n";
}

class ReloadE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kFlooder, kQuiet});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-reload-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  std::string writeConfig(const std::string& name, const std::string& rules) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "rules:\n" << rules;
    return path;
  }

  CommandResult run(const std::vector<std::string>& args) { return net_->floodgate(args); }

  uint64_t packets(const std::string& verdict, const std::string& reason) {
    CommandResult r = run({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json stats = nlohmann::json::parse(r.out);
    for (const auto& row : stats["counters"]) {
      if (row["verdict"] == verdict && row["reason"] == reason) return row["packets"];
    }
    return 0;
  }

  // Every packet floodgate counted, whatever its verdict.
  uint64_t countedPackets() {
    CommandResult r = run({"stats", net_->targetInterface(), "--json"});
    uint64_t all = 0;
    for (const auto& row : nlohmann::json::parse(r.out)["counters"])
      all += row["packets"].get<uint64_t>();
    return all;
  }

  UdpSendOptions traffic(const char* source, double seconds, unsigned threads, uint64_t rate) {
    return {net_->senderNetns(),
            source,
            VethNetwork::kTargetAddress,
            kPort,
            seconds,
            rate,
            threads,
            18};
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_;
};

TEST_F(ReloadE2eTest, ReloadsUnderTrafficDropNothingUnderTheLimitAndResetNoBucket) {
  const uint64_t rate = 2000, burst = 50;
  std::string first = writeConfig("first.yaml", ruleYaml("per-source", rate, burst));
  std::string second = writeConfig(
      "second.yaml", ruleYaml("per-source", rate, burst) + ruleYaml("extra", 100000, 100000));
  CommandResult attach = run({"attach", net_->targetInterface(), "--config", first});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;

  UdpCounter receiver;
  ASSERT_TRUE(receiver.start(net_->targetNetns(), kPort).ok());
  Result<UdpSendResult> quiet = Error::failure("not run");
  Result<UdpSendResult> flood = Error::failure("not run");
  const uint64_t first_jiffy = programJiffies();
  // Both senders count only what reached the far end's queue: there the program sees it,
  // whenever the receiving side next gets a CPU. The quiet source never catches up a stall
  // in one go, which would take it over its limit for a moment.
  UdpSendOptions quiet_options = traffic(kQuiet, 2.5, 1, 200);
  quiet_options.max_burst = 16;
  quiet_options.unsent_when_queue_full = true;
  std::thread quiet_thread([&] { quiet = sendUdp(quiet_options); });
  UdpSendOptions flood_options = traffic(kFlooder, 2.5, 2, 0);
  flood_options.gap_allowance_s = static_cast<double>(burst) / rate;  // beyond: tokens lost
  // a stretch of the queue full is idle too: the program saw nothing of the flood in it
  flood_options.unsent_when_queue_full = true;
  std::thread flood_thread([&] { flood = sendUdp(flood_options); });
  int reloads = 0;
  for (int i = 0; i < 4; ++i) {
    usleep(400000);
    CommandResult r = run({"reload", net_->targetInterface(), "--config", i % 2 ? first : second});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    reloads += r.exit_code == 0;
  }
  quiet_thread.join();
  flood_thread.join();
  const uint64_t last_jiffy = drainedAt([&] { return countedPackets(); });
  auto received = receiver.stop();
  ASSERT_TRUE(flood.ok() && quiet.ok());
  EXPECT_EQ(reloads, 4);

  // every packet that reached the far end was counted once; a source under its limit
  // loses nothing to floodgate
  EXPECT_EQ(packets("drop", "rate") + packets("pass", "default"), flood->sent + quiet->sent);
  EXPECT_EQ(received[kQuiet], quiet->sent) << "a source under its limit lost packets";
  uint64_t flooder_passed = packets("pass", "default") - received[kQuiet];
  // the time the flood kept the bucket empty: the sender's, less stretches longer than the
  // burst lasts in which neither thread got a packet into the queue (off their CPUs, or the
  // queue full while the receiving side waited for a CPU)
  double allowed = burst + rate * (flood->elapsed() - flood->idle_s);
  double program_allows = burst + rate * programSeconds(first_jiffy, last_jiffy);
  std::printf("flooder passed %llu across 4 reloads; burst + rate x time = %.1f\n",
              static_cast<unsigned long long>(flooder_passed), allowed);
  // one reset bucket would have handed the flooder another burst of 50; the bound is the
  // time the program saw the flood for, which a busy receiver may stretch past the sender's
  EXPECT_LE(static_cast<double>(flooder_passed), program_allows + 1);
  EXPECT_GE(static_cast<double>(flooder_passed), 0.98 * allowed);
}

TEST_F(ReloadE2eTest, AnInvalidReloadSaysWhereAndLeavesTheOldRulesEnforcing) {
  std::string good = writeConfig("good.yaml", ruleYaml("per-source", 100, 10));
  std::string bad =
      writeConfig("bad.yaml", "  - name: per-source\n    limit: {pps: 5k, brust: 3}\n");
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--config", good}).exit_code, 0);
  CommandResult r = run({"reload", net_->targetInterface(), "--config", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(bad + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("brust"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;

  const uint64_t first_jiffy = programJiffies();
  auto sent = sendUdp(traffic(kFlooder, 0.5, 1, 2000));
  ASSERT_TRUE(sent.ok());
  const uint64_t last_jiffy = drainedAt([&] { return countedPackets(); });
  uint64_t passed = packets("pass", "default");
  EXPECT_LE(static_cast<double>(passed), 10 + 100 * programSeconds(first_jiffy, last_jiffy) + 1);
  EXPECT_GT(packets("drop", "rate"), 0u);
}

// The list size and the XDP mode are fixed at attach: a reload that asks for others applies
// the rest of the file and says what it kept, rather than leaving the operator to find the
// deny list full at the next add.
TEST_F(ReloadE2eTest, AReloadSaysWhichAttachSettingsItKept) {
  std::string small = dir_ + "/small.yaml";
  std::ofstream(small) << "defaults: {list_size: 4}\nrules:\n" << ruleYaml("per-source", 100, 10);
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--config", small}).exit_code, 0);
  const std::string mode = run({"status", net_->targetInterface(), "--json"}).out;
  const bool native = mode.find("\"native\"") != std::string::npos;
  std::string bigger = dir_ + "/bigger.yaml";
  std::ofstream(bigger) << "defaults: {list_size: 1000}\ninterfaces:\n  - name: "
                        << net_->targetInterface()
                        << "\n    mode: " << (native ? "generic" : "native") << "\nrules:\n"
                        << ruleYaml("per-source", 200, 10);
  CommandResult r = run({"reload", net_->targetInterface(), "--config", bigger});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the list size (1000) takes effect only on a fresh attach"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("keeps 4 entries a list"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::string("warning: the XDP mode (") + (native ? "generic" : "native")),
            std::string::npos)
      << r.err << mode;
}

// A window admits rate x window: `set --burst` on a window rule is refused, not ignored.
TEST_F(ReloadE2eTest, SetRefusesABurstForAWindowRule) {
  std::string config = writeConfig(
      "window.yaml", "  - name: win\n    algorithm: sliding_window\n    limit: {pps: 10}\n");
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--config", config}).exit_code, 0);
  CommandResult burst = run({"set", net_->targetInterface(), "win", "--burst", "10"});
  EXPECT_EQ(burst.exit_code, 2) << burst.err;
  EXPECT_NE(burst.err.find("rule 'win' limits by window, which has no burst"), std::string::npos)
      << burst.err;
  CommandResult rate = run({"set", net_->targetInterface(), "win", "--pps", "20"});
  EXPECT_EQ(rate.exit_code, 0) << rate.err;
}

// A byte's time is kept in whole 1/65536 ns: 10 Tbit/s takes 53 units (52.43) and runs at
// 9.89 Tbit/s. `set` and `attach` say so, and status shows the rate that runs, not the one
// written.
TEST_F(ReloadE2eTest, ARateThatRunsLowerThanWrittenIsSaidAndShownAsItRuns) {
  std::string config = writeConfig("config.yaml", ruleYaml("per-source", 100, 10));
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--config", config}).exit_code, 0);
  CommandResult set = run({"set", net_->targetInterface(), "per-source", "--bps", "10Tbit"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(set.err.find("warning: --bps 10Tbit runs at 9.9Tbit, 1.08% lower"), std::string::npos)
      << set.err;
  const CommandResult status = run({"status", net_->targetInterface(), "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const nlohmann::json rule = nlohmann::json::parse(status.out)["interfaces"][0]["rules"][0];
  EXPECT_EQ(rule["limit"]["bps"].get<uint64_t>(), 9'900'000'000'000ULL) << rule.dump();
  EXPECT_EQ(rule["limit"]["pps"].get<uint64_t>(), 100u) << rule.dump();

  ASSERT_EQ(run({"detach", net_->targetInterface()}).exit_code, 0);
  CommandResult attach =
      run({"attach", net_->targetInterface(), "--rate", "1k", "--bps", "10Tbit"});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  EXPECT_NE(attach.err.find("warning: --bps 10Tbit runs at 9.9Tbit"), std::string::npos)
      << attach.err;
  EXPECT_EQ(attach.err.find("--rate"), std::string::npos) << "1k runs as written: " << attach.err;
}

TEST_F(ReloadE2eTest, SetAndBanTakeEffectAtOnce) {
  std::string config = writeConfig("config.yaml", ruleYaml("per-source", 100, 10));
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--config", config}).exit_code, 0);
  auto slow = sendUdp(traffic(kFlooder, 0.5, 1, 4000));
  ASSERT_TRUE(slow.ok());
  // every packet of the slow phase counted before the fast one starts
  for (int i = 0;
       i < 100 &&
       packets("pass", "default") + packets("drop", "rate") + net_->senderQueueDrops() < slow->sent;
       ++i) {
    usleep(10000);
  }
  uint64_t before = packets("pass", "default");

  CommandResult set =
      run({"set", net_->targetInterface(), "per-source", "--pps", "3000", "--burst", "100"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const uint64_t first_jiffy = programJiffies();
  UdpSendOptions fast_options = traffic(kFlooder, 0.5, 1, 4000);
  fast_options.gap_allowance_s = 100.0 / 3000;  // the new burst lasts that long
  auto fast = sendUdp(fast_options);
  ASSERT_TRUE(fast.ok());
  const uint64_t last_jiffy = drainedAt([&] { return countedPackets(); });
  uint64_t after = packets("pass", "default") - before;
  // the debt of the old limit is forgiven at once: 3000/s from the first moment
  EXPECT_GE(static_cast<double>(after), 0.9 * 3000 * (fast->elapsed() - fast->idle_s))
      << "passed " << after << "; the sender was idle " << fast->idle_s << " s";
  EXPECT_LE(static_cast<double>(after), 100 + 3000 * programSeconds(first_jiffy, last_jiffy) + 1);

  CommandResult ban = run({"ban", "add", net_->targetInterface(), kQuiet, "--for", "10m"});
  ASSERT_EQ(ban.exit_code, 0) << ban.err;
  auto banned = sendUdp(traffic(kQuiet, 0.2, 1, 500));
  ASSERT_TRUE(banned.ok());
  usleep(100000);
  EXPECT_EQ(packets("drop", "ban"), banned->sent);
  CommandResult list = run({"ban", "list", net_->targetInterface(), "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto bans = nlohmann::json::parse(list.out)["bans"];
  ASSERT_EQ(bans.size(), 1u);
  EXPECT_EQ(bans[0]["cidr"], kQuiet);
  EXPECT_GT(bans[0]["seconds_left"].get<double>(), 590);
  ASSERT_EQ(run({"ban", "del", net_->targetInterface(), kQuiet}).exit_code, 0);
  auto free = sendUdp(traffic(kQuiet, 0.2, 1, 50));
  ASSERT_TRUE(free.ok());
  usleep(100000);
  EXPECT_EQ(packets("drop", "ban"), banned->sent);
}

}  // namespace
}  // namespace floodgate::test
