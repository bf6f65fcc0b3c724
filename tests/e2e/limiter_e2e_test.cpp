// SPDX-License-Identifier: MIT
// End to end: the floodgate CLI attached in a network namespace, real UDP traffic from
// another namespace over a veth pair, and what `floodgate stats --json` then reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/program_clock.h"
#include "e2e/veth_network.h"
#include "kernel/xdp_program.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr const char* kFlooder = "198.18.0.2";
constexpr const char* kQuiet = "198.18.0.3";
constexpr uint16_t kPort = 9999;

class LimiterE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kFlooder, kQuiet});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
  }

  void attach(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"attach", net_->targetInterface()};
    args.insert(args.end(), flags.begin(), flags.end());
    CommandResult r = net_->floodgate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  nlohmann::json stats() {
    CommandResult r = net_->floodgate({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  static uint64_t packets(const nlohmann::json& stats, const std::string& verdict,
                          const std::string& reason) {
    for (const auto& row : stats["counters"]) {
      if (row["verdict"] == verdict && row["reason"] == reason) return row["packets"];
    }
    ADD_FAILURE() << "no counter " << verdict << "/" << reason;
    return 0;
  }

  UdpSendOptions flood(const char* source, double seconds, unsigned threads, uint64_t rate = 0) {
    UdpSendOptions options;
    options.netns = net_->senderNetns();
    options.source = source;
    options.destination = VethNetwork::kTargetAddress;
    options.port = kPort;
    options.seconds = seconds;
    options.threads = threads;
    options.rate_pps = rate;
    return options;
  }

  std::unique_ptr<VethNetwork> net_;
};

TEST_F(LimiterE2eTest, AFloodIsHeldToItsRateFromBothCpusAndAQuietSourceIsUntouched) {
  // a burst of a quarter second of the rate: a flood the busy machine stalls (the sender
  // preempted, or the receiver's NAPI run late) for less than that loses no tokens, so
  // 98% of burst + rate x time holds through any stall shorter than that
  const uint64_t rate = 2000, burst = 500;
  attach({"--rate", std::to_string(rate), "--burst", std::to_string(burst)});
  UdpCounter receiver;
  ASSERT_TRUE(receiver.start(net_->targetNetns(), kPort).ok());

  Result<UdpSendResult> quiet = Error::failure("not run");
  const uint64_t first_jiffy = programJiffies();
  // 200 pps against 2000 and a burst of 500: resuming at its rate after a stall, never in
  // one catch-up burst, it stays under the limit however busy the machine is
  UdpSendOptions quiet_options = flood(kQuiet, 2.0, 1, 200);
  quiet_options.max_burst = 16;
  std::thread quiet_sender([&] { quiet = sendUdp(quiet_options); });
  UdpSendOptions flood_options = flood(kFlooder, 2.0, 2);
  flood_options.gap_allowance_s = static_cast<double>(burst) / rate;  // beyond: tokens lost
  auto flooder = sendUdp(flood_options);
  quiet_sender.join();
  const uint64_t last_jiffy = drainedAt([&] {
    nlohmann::json now = stats();
    uint64_t all = 0;
    for (const auto& row : now["counters"]) all += row["packets"].get<uint64_t>();
    return all;
  });
  auto received = receiver.stop();
  ASSERT_TRUE(flooder.ok()) << flooder.error().message;
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;

  nlohmann::json s = stats();
  uint64_t passed = packets(s, "pass", "default");
  uint64_t dropped = packets(s, "drop", "rate");
  uint64_t lost_before_xdp = net_->senderQueueDrops();
  // every packet sent is accounted for: passed, dropped by floodgate, or (on a busy machine)
  // dropped by the veth before XDP ever saw it; only the flooder's are dropped by floodgate
  EXPECT_EQ(passed + dropped + lost_before_xdp, flooder->sent + quiet->sent);
  EXPECT_GE(received[kQuiet] + lost_before_xdp, quiet->sent);
  EXPECT_LE(received[kQuiet], quiet->sent);
  ASSERT_GE(passed, quiet->sent);
  uint64_t flooder_passed = passed - quiet->sent;
  ASSERT_GT(flooder->sent, 4 * (burst + rate * 2)) << "the sender did not flood";

  // burst + rate x the time the program saw the flood (never more, whatever the timing),
  // and at least 98% of burst + rate x the time the sender kept it full (the sender's
  // time less any stretch a busy machine kept both its threads from sending)
  double elapsed = flooder->elapsed();
  double allowed = burst + rate * (elapsed - flooder->idle_s);
  double program_allows = burst + rate * programSeconds(first_jiffy, last_jiffy);
  std::printf(
      "flooder sent %llu over %.3f s (%.3f s idle) from 2 threads; passed %llu of burst + "
      "rate x time = %.1f; %llu lost in the veth queue\n",
      static_cast<unsigned long long>(flooder->sent), elapsed, flooder->idle_s,
      static_cast<unsigned long long>(flooder_passed), allowed,
      static_cast<unsigned long long>(lost_before_xdp));
  EXPECT_LE(static_cast<double>(flooder_passed), program_allows + 1)
      << "sent " << flooder->sent << " over " << elapsed << " s; the program saw "
      << last_jiffy - first_jiffy + 1 << " ticks";
  EXPECT_GE(static_cast<double>(flooder_passed), 0.98 * allowed)
      << "sent " << flooder->sent << " over " << elapsed << " s";
}

TEST_F(LimiterE2eTest, DenyAndAllowChangeALiveLimiter) {
  attach({"--rate", "100", "--burst", "10"});
  CommandResult deny =
      net_->floodgate({"deny", "add", net_->targetInterface(), std::string(kFlooder)});
  ASSERT_EQ(deny.exit_code, 0) << deny.err;
  CommandResult allow =
      net_->floodgate({"allow", "add", net_->targetInterface(), std::string(kQuiet) + "/32"});
  ASSERT_EQ(allow.exit_code, 0) << allow.err;
  auto denied = sendUdp(flood(kFlooder, 0.3, 1, 1000));
  auto allowed = sendUdp(flood(kQuiet, 0.3, 1, 1000));
  ASSERT_TRUE(denied.ok() && allowed.ok());
  usleep(100000);
  nlohmann::json s = stats();
  EXPECT_EQ(packets(s, "drop", "deny"), denied->sent);
  EXPECT_EQ(packets(s, "pass", "allow"), allowed->sent);  // far above 100 pps, all passed
  EXPECT_EQ(packets(s, "drop", "rate"), 0u);

  CommandResult list = net_->floodgate({"deny", "list", net_->targetInterface(), "--json"});
  ASSERT_EQ(list.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(list.out)["deny"], nlohmann::json::array({kFlooder}));
  CommandResult del = net_->floodgate({"deny", "del", net_->targetInterface(), kFlooder});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  auto limited = sendUdp(flood(kFlooder, 0.3, 1, 1000));
  ASSERT_TRUE(limited.ok());
  usleep(100000);
  EXPECT_GT(packets(stats(), "drop", "rate"), 0u);

  // what a config's lists would be warned of, the commands warn of too
  EXPECT_TRUE(allow.err.empty()) << allow.err;
  CommandResult mapped =
      net_->floodgate({"allow", "add", net_->targetInterface(), "::ffff:192.0.2.9"});
  EXPECT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_NE(mapped.err.find("warning: the allow list holds ::ffff:192.0.2.9, an IPv4-mapped"),
            std::string::npos)
      << mapped.err;
  CommandResult ban =
      net_->floodgate({"ban", "add", net_->targetInterface(), "::ffff:192.0.2.9", "--for", "1s"});
  EXPECT_EQ(ban.exit_code, 0) << ban.err;
  // a ban is of what the packets carry, as a report's or a fleet record's is
  EXPECT_NE(ban.err.find("note: ::ffff:192.0.2.9 is IPv4-mapped; no packet carries it: taken as "
                         "192.0.2.9"),
            std::string::npos)
      << ban.err;
  EXPECT_NE(ban.out.find("banned 192.0.2.9 on"), std::string::npos) << ban.out;
}

TEST_F(LimiterE2eTest, TheLimiterOutlivesTheCliAndAttachingTwiceNeedsReplace) {
  attach({"--rate", "100", "--burst", "5"});
  CommandResult again = net_->floodgate({"attach", net_->targetInterface(), "--rate", "100"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("--replace"), std::string::npos) << again.err;
  EXPECT_EQ(std::count(again.err.begin(), again.err.end(), '\n'), 1) << again.err;

  auto before = sendUdp(flood(kFlooder, 0.2, 1, 500));
  ASSERT_TRUE(before.ok());
  usleep(100000);
  uint64_t dropped_before = packets(stats(), "drop", "rate");
  EXPECT_GT(dropped_before, 0u);

  // --replace swaps the program but keeps the pinned maps: the counters carry on
  CommandResult replace =
      net_->floodgate({"attach", net_->targetInterface(), "--rate", "200", "--replace"});
  ASSERT_EQ(replace.exit_code, 0) << replace.err;
  EXPECT_EQ(packets(stats(), "drop", "rate"), dropped_before);

  CommandResult status = net_->floodgate({"status", net_->targetInterface(), "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto st = nlohmann::json::parse(status.out)["interfaces"][0];
  EXPECT_EQ(st["rules"][0]["limit"]["pps"], 200);
  EXPECT_EQ(st["mode"], "native");
  EXPECT_GT(st["program_id"], 0);
  // the program for this kernel: its rule walk a may_goto loop where the kernel has one
  EXPECT_EQ(st["program_name"], kernelHasMayGoto() ? "floodgate_xdp" : "floodgate_older");

  CommandResult detach = net_->floodgate({"detach", net_->targetInterface()});
  ASSERT_EQ(detach.exit_code, 0) << detach.err;
  CommandResult link = net_->inTarget({"ip", "link", "show", net_->targetInterface()});
  EXPECT_EQ(link.out.find("xdp"), std::string::npos) << link.out;
  CommandResult gone = net_->floodgate({"stats", net_->targetInterface()});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("not attached"), std::string::npos) << gone.err;
}

TEST_F(LimiterE2eTest, AFailedAttachLeavesNothingBehind) {
  CommandResult missing = net_->floodgate({"attach", "no-such-if0", "--rate", "100"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no network interface named 'no-such-if0'"), std::string::npos);
  CommandResult bad_table =
      net_->floodgate({"attach", net_->targetInterface(), "--rate", "100", "--table-size", "1000"});
  EXPECT_EQ(bad_table.exit_code, 2);
  EXPECT_NE(bad_table.err.find("power of two"), std::string::npos) << bad_table.err;
  CommandResult link = net_->inTarget({"ip", "link", "show", net_->targetInterface()});
  EXPECT_EQ(link.out.find("xdp"), std::string::npos);
  EXPECT_FALSE(access(("/sys/fs/bpf/floodgate/" + net_->targetInterface()).c_str(), F_OK) == 0);
}

}  // namespace
}  // namespace floodgate::test

namespace floodgate::test {
namespace {

TEST_F(LimiterE2eTest, TopRanksTheFlooderFirstAndShowsTheQuietSourceUnlimited) {
  attach({"--rate", "500", "--burst", "50"});
  Result<UdpSendResult> quiet = Error::failure("not run");
  Result<UdpSendResult> flooder = Error::failure("not run");
  // both send until both rankings are taken, however long the CLI takes to start here
  std::atomic<bool> done{false};
  UdpSendOptions quiet_options = flood(kQuiet, 60.0, 1, 100);
  UdpSendOptions flood_options = flood(kFlooder, 60.0, 1, 20000);
  quiet_options.stop = flood_options.stop = &done;
  std::thread quiet_sender([&] { quiet = sendUdp(quiet_options); });
  std::thread flood_sender([&] { flooder = sendUdp(flood_options); });
  // the flood has begun: floodgate has dropped some of it (the quiet sender started first)
  auto flood_dropped = [&] {
    const nlohmann::json now = stats();
    for (const auto& row : now["counters"]) {
      if (row["reason"] == "rate" && row["packets"].get<uint64_t>() > 0) return true;
    }
    return false;
  };
  for (int i = 0; i < 300 && !flood_dropped(); ++i) usleep(10000);
  EXPECT_TRUE(flood_dropped()) << "the flood never reached floodgate";
  usleep(200000);  // and the quiet source has sent for a while
  CommandResult top =
      net_->floodgate({"top", net_->targetInterface(), "--json", "--interval", "1s", "-n", "5"});
  CommandResult text = net_->floodgate({"top", net_->targetInterface(), "--interval", "500ms"});
  done = true;
  quiet_sender.join();
  flood_sender.join();
  ASSERT_TRUE(flooder.ok() && quiet.ok());
  ASSERT_EQ(top.exit_code, 0) << top.err;
  nlohmann::json rows = nlohmann::json::parse(top.out)["rows"];
  ASSERT_GE(rows.size(), 2u) << top.out;
  EXPECT_EQ(rows[0]["source"], kFlooder) << top.out;
  EXPECT_EQ(rows[0]["rule"], "default");
  EXPECT_TRUE(rows[0]["limited"].get<bool>());
  EXPECT_GT(rows[0]["drops_per_s"].get<double>(), 1000) << top.out;
  EXPECT_TRUE(rows[0]["ban"].is_null());
  EXPECT_EQ(rows[1]["source"], kQuiet) << top.out;
  EXPECT_EQ(rows[1]["drops_per_s"].get<double>(), 0);
  EXPECT_FALSE(rows[1]["limited"].get<bool>());
  EXPECT_GT(rows[1]["packets_per_s"].get<double>(), 50);
  // not a terminal: one ranking as plain rows
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("SOURCE"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(std::string(kFlooder) + " "), std::string::npos) << text.out;
  CommandResult bad = net_->floodgate({"top", net_->targetInterface(), "--interval", "5ms"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--interval must be a duration from 100ms to 60s"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace floodgate::test
