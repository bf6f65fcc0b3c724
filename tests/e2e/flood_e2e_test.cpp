// SPDX-License-Identifier: MIT
// End to end: `floodgate flood` sends out of one end of a veth pair and floodgate's XDP
// counters on the far end, in another network namespace, count every frame the peer took.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/child_process.h"
#include "e2e/veth_network.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

// A real client on the sending side, next to the flood.
constexpr const char* kLegit = "198.18.0.3";
constexpr uint16_t kPort = 9999;

class FloodE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kLegit});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
  }

  void attach(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"attach", net_->targetInterface()};
    args.insert(args.end(), flags.begin(), flags.end());
    CommandResult r = net_->floodgate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Runs `floodgate flood SENDER-IF --json FLAGS...` and parses its report.
  nlohmann::json flood(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"flood", net_->senderInterface(), "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    CommandResult r = net_->floodgateInSender(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  // Packets floodgate counted (every verdict and reason), and those dropped for the rate,
  // once it has counted at least `expected` (the peer's NAPI may still be draining its
  // queue when flood returns) or a second has passed.
  std::pair<uint64_t, uint64_t> counted(uint64_t expected = 0) {
    auto result = countedNow();
    for (int i = 0; i < 100 && result.first < expected; ++i) {
      usleep(10000);
      result = countedNow();
    }
    return result;
  }

  std::pair<uint64_t, uint64_t> countedNow() {
    CommandResult r = net_->floodgate({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json stats = nlohmann::json::parse(r.out);
    uint64_t all = 0, rate_drops = 0;
    for (const auto& row : stats["counters"]) {
      all += row["packets"].get<uint64_t>();
      if (row["verdict"] == "drop" && row["reason"] == "rate")
        rate_drops += row["packets"].get<uint64_t>();
    }
    return {all, rate_drops};
  }

  std::unique_ptr<VethNetwork> net_;
};

TEST_F(FloodE2eTest, Ipv4FramesArriveAndFloodgateCountsEveryOne) {
  attach({"--rate", "1000", "--burst", "100"});
  // paced well below what one CPU sends, so the veth queue rarely fills
  // a second of it: one late kernel call (25 ms on some machines) is then 2.5% of the rate
  nlohmann::json report = flood({"--dst", VethNetwork::kTargetAddress, "--count", "100000",
                                 "--rate", "100k", "--sources", "16"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["sent"], 100000);
  // the rate asked is the rate sent, however much one kernel call costs on this machine
  std::printf("flood: asked 100k/s, sent %.0f/s in %llu calls of %.3f ms fixed cost\n",
              report["pps"].get<double>(), report["calls"].get<unsigned long long>(),
              report["call_fixed_ns"].get<double>() / 1e6);
  EXPECT_NEAR(report["pps"].get<double>() / 100'000, 1.0, 0.05) << report.dump();
  EXPECT_FALSE(report["rate_out_of_reach"].get<bool>()) << report.dump();
  const uint64_t accepted = report["peer_accepted"];
  EXPECT_EQ(accepted + report["peer_queue_full"].get<uint64_t>(), 100000u);
  EXPECT_GT(accepted, 0u);
  auto [all, rate_drops] = counted(accepted);
  EXPECT_EQ(all, accepted) << "floodgate counts each frame the peer took, once";
  // 16 sources, each allowed 100 + 1000/s: most of 100000 frames in 1 s are over the limit
  EXPECT_GT(rate_drops, 0u);
}

TEST_F(FloodE2eTest, Ipv6TcpSynAcrossSlash64sArrivesToo) {
  attach({"--rate", "1000", "--burst", "100"});
  nlohmann::json report =
      flood({"--dst", "2001:db8::1", "--protocol", "tcp-syn", "--count", "5000", "--rate", "100k",
             "--sources", "1000", "--across-64s", "--cpu", "0"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["cpu"], 0);
  EXPECT_EQ(report["family"], "ipv6");
  EXPECT_EQ(report["frame_bytes"], 74);
  const uint64_t accepted = report["peer_accepted"];
  EXPECT_EQ(counted(accepted).first, accepted);
}

TEST_F(FloodE2eTest, AMillionSpoofedSourcesGetNoMoreThanTheUntrackedLimit) {
  // a 64k-slot table; each source 100 pps; new sources capped at 1000/s and every source
  // without a slot sharing 1000 pps: a spoofed flood gets at most 2000/s plus the bursts
  const std::string config = "/tmp/fg-spoofed-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(config) << "defaults: {table_size: 65536}\n"
                        << "rules:\n  - name: per-source\n    limit: {pps: 100, burst: 10}\n"
                        << "    untracked: {new_sources: 1000, pps: 1000, burst: 100}\n";
  CommandResult attached = net_->floodgate({"attach", net_->targetInterface(), "--config", config});
  std::remove(config.c_str());
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  UdpCounter receiver;
  ASSERT_TRUE(receiver.start(net_->targetNetns(), kPort).ok());
  // the real client is tracked before the flood starts (a source that first shows up in
  // the middle of a spoofed flood competes with it for the new-source cap)
  // 50 pps against its 100 and a burst of 10; a stalled sender resumes at 50 pps instead of
  // catching up in one burst, so it stays under its limit however busy the machine is
  UdpSendOptions client{
      net_->senderNetns(), kLegit, VethNetwork::kTargetAddress, kPort, 0.2, 50, 1, 18};
  client.max_burst = 5;
  auto warm_up = sendUdp(client);
  ASSERT_TRUE(warm_up.ok()) << warm_up.error().message;
  Result<UdpSendResult> legit = Error::failure("not run");
  client.seconds = 2.5;
  std::thread legit_sender([&] { legit = sendUdp(client); });
  // every packet from a source never seen before: 1M sources, one packet each
  nlohmann::json report = flood({"--dst", VethNetwork::kTargetAddress, "--src", "10.0.0.1",
                                 "--count", "1000000", "--sources", "1000000", "--rate", "500k"});
  legit_sender.join();
  usleep(200000);
  auto received = receiver.stop();
  ASSERT_FALSE(report.is_discarded());
  ASSERT_TRUE(legit.ok());

  CommandResult r = net_->floodgate({"stats", net_->targetInterface(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json stats = nlohmann::json::parse(r.out);
  uint64_t passed = 0;
  for (const auto& row : stats["counters"]) {
    if (row["verdict"] == "pass" && row["reason"] == "default")
      passed += row["packets"].get<uint64_t>();
  }
  const uint64_t legit_passed = received[kLegit];
  const uint64_t legit_sent = warm_up->sent + legit->sent;
  const uint64_t spoofed_passed = passed - std::min(passed, legit_sent);
  // the flood reached XDP over its sending time; two ticks of slack for the clock and queue
  const double seconds = report["seconds"].get<double>() + 0.008;
  const double allowed = 2000 * seconds + 100 + 100 + 2 * 1000 * 0.004;
  std::printf(
      "spoofed flood: %llu of %llu frames the peer took passed in %.3f s; the limit "
      "allows %.0f\n",
      static_cast<unsigned long long>(spoofed_passed),
      static_cast<unsigned long long>(report["peer_accepted"].get<uint64_t>()), seconds, allowed);
  EXPECT_LE(static_cast<double>(spoofed_passed), 1.05 * allowed) << stats["rules"].dump();
  EXPECT_GT(stats["rules"][0]["sources"]["capped"].get<uint64_t>(), 0u);
  // the real client kept its slot: everything of it that reached XDP went through
  EXPECT_GE(legit_passed + report["peer_queue_full"].get<uint64_t>(), legit_sent);
  EXPECT_GT(legit_passed, 0u);
}

// What a UDP client seen before a spoofed flood got through during it: 4M sources at
// 1 Mpps, each sending once, so the client is the only source the rule can remember.
struct ReturningRun {
  uint64_t sent = 0;       // during the flood (the interface took them)
  uint64_t received = 0;   // of them, what the server got
  uint64_t returning = 0;  // times the client took a slot from the reserve
  double flood_pps = 0;
};

// A 4096-slot table (1024 sets of 4 ways), new sources capped at 10k/s: about 10 flood
// sources a second reach each set, and each takes the way seen longest ago, so the client's
// slot goes with the fourth to reach its set. Quiet for two seconds from the flood's start
// (less the flood's own start-up), it has lost its slot when it comes back but for odds of
// about 1 in 4000 (fewer than 4 of a mean of 15 arrivals), and must win one again; after
// one second those odds were about 1 in 4 when the flood was slow to start.
// The table is large enough that the cap's burst (a tenth of a second of it, 1000
// sources) seldom fills a set, which would leave no idle way to take at all.
ReturningRun returningClientThroughFlood(VethNetwork& net, const std::string& returning) {
  ReturningRun out;
  const std::string config = "/tmp/fg-returning-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(config) << "defaults: {table_size: 4096}\n"
                        << "rules:\n  - name: per-source\n    limit: {pps: 1000, burst: 100}\n"
                        << "    untracked: {new_sources: 10k, pps: 1000, burst: 100, "
                        << "returning_sources: " << returning << "}\n";
  CommandResult attached = net.floodgate({"attach", net.targetInterface(), "--config", config});
  std::remove(config.c_str());
  EXPECT_EQ(attached.exit_code, 0) << attached.err;
  if (attached.exit_code != 0) return out;
  // before the flood: the client holds a slot within its limit over several ticks
  UdpSendOptions client{
      net.senderNetns(), kLegit, VethNetwork::kTargetAddress, kPort, 0.5, 20, 1, 18};
  client.max_burst = 5;
  client.unsent_when_queue_full = true;
  auto warm_up = sendUdp(client);
  EXPECT_TRUE(warm_up.ok());
  // during the flood, to a port of its own so the two phases are counted apart
  UdpCounter receiver;
  EXPECT_TRUE(receiver.start(net.targetNetns(), kPort + 1).ok());
  client.port = kPort + 1;
  client.seconds = 2;
  Result<UdpSendResult> during = Error::failure("not run");
  std::thread sender([&] {
    usleep(2000000);  // the flood has been under way for a while
    during = sendUdp(client);
  });
  std::vector<std::string> args = {"flood",
                                   net.senderInterface(),
                                   "--json",
                                   "--dst",
                                   VethNetwork::kTargetAddress,
                                   "--src",
                                   "10.0.0.1",
                                   "--count",
                                   "4000000",
                                   "--sources",
                                   "4000000",
                                   "--rate",
                                   "1M"};
  CommandResult flood = net.floodgateInSender(args);
  sender.join();
  usleep(200000);
  auto received = receiver.stop();
  EXPECT_EQ(flood.exit_code, 0) << flood.err;
  const nlohmann::json report = nlohmann::json::parse(flood.out, nullptr, false);
  if (!report.is_discarded()) out.flood_pps = report.value("pps", 0.0);
  EXPECT_TRUE(during.ok());
  if (during.ok()) out.sent = during->sent;
  out.received = received[kLegit];
  CommandResult r = net.floodgate({"stats", net.targetInterface(), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json stats = nlohmann::json::parse(r.out, nullptr, false);
  if (!stats.is_discarded())
    out.returning = stats["rules"][0]["sources"]["returning_sources"].get<uint64_t>();
  net.floodgate({"detach", net.targetInterface()});
  return out;
}

TEST_F(FloodE2eTest, AUdpSourceSeenBeforeASpoofedFloodKeepsItsPackets) {
  const ReturningRun on = returningClientThroughFlood(*net_, "10k");
  ASSERT_FALSE(HasFailure());
  const ReturningRun off = returningClientThroughFlood(*net_, "off");
  std::printf(
      "returning client during a 4M-source flood: %llu of %llu packets through (%llu slots "
      "from the reserve, flood %.0f pps); with returning_sources off %llu of %llu (flood %.0f "
      "pps)\n",
      static_cast<unsigned long long>(on.received), static_cast<unsigned long long>(on.sent),
      static_cast<unsigned long long>(on.returning), on.flood_pps,
      static_cast<unsigned long long>(off.received), static_cast<unsigned long long>(off.sent),
      off.flood_pps);
  ASSERT_GE(on.sent, 20u);
  EXPECT_GE(on.received * 100, on.sent * 95);
  // the flood did take the client's slot: it came back through the reserve (the only source
  // remembered), not by a slot it held all along
  EXPECT_GT(on.returning, 0u);
  EXPECT_LE(on.returning, on.sent);
  EXPECT_EQ(off.returning, 0u);
}

TEST_F(FloodE2eTest, CtrlCReportsEveryFrameSentThoseOfTheInterruptedCallToo) {
  attach({"--rate", "1000", "--burst", "100"});
  char dir[] = "/tmp/fg-flood-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  struct Removed {
    std::string dir;
    ~Removed() { std::system(("rm -rf " + dir).c_str()); }
  } removed{dir};
  const std::string log = std::string(dir) + "/flood.json";
  // unpaced: every call is as long as the machine makes it, so Ctrl-C lands inside one
  auto child = ChildProcess::start(
      {"nsenter", "--net=" + net_->senderNetns(), FLOODGATE_BIN, "flood", net_->senderInterface(),
       "--json", "--dst", VethNetwork::kTargetAddress, "--duration", "30s"},
      log);
  ASSERT_TRUE(child.ok()) << child.error().message;
  usleep(1500000);
  child->signal(SIGINT);
  ASSERT_EQ(child->wait(10), 0) << child->log();
  nlohmann::json report = nlohmann::json::parse(child->log(), nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << child->log();
  EXPECT_TRUE(report.value("interrupted", false)) << report.dump();
  EXPECT_GT(report["sent"].get<uint64_t>(), 0u) << report.dump();
  EXPECT_EQ(report["sent"].get<uint64_t>(),
            report["peer_accepted"].get<uint64_t>() + report["peer_queue_full"].get<uint64_t>())
      << "sent is what the peer took or had no room for: " << report.dump();
}

TEST_F(FloodE2eTest, APeerWithoutXdpIsReportedNotFloodedIntoNothing) {
  // no program and no GRO on the far end: veth takes no XDP frames there
  CommandResult r = net_->floodgateInSender(
      {"flood", net_->senderInterface(), "--dst", VethNetwork::kTargetAddress, "--count", "1000"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("takes no XDP frames"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

TEST_F(FloodE2eTest, ACpuThatIsNotThereIsAUsageError) {
  attach({"--rate", "1000"});
  CommandResult r =
      net_->floodgateInSender({"flood", net_->senderInterface(), "--dst",
                               VethNetwork::kTargetAddress, "--count", "10", "--cpu", "1000"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--cpu 1000: not a CPU this process may run on"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

TEST_F(FloodE2eTest, RefusesAnInterfaceThatIsNotAVeth) {
  CommandResult r = net_->floodgateInSender({"flood", "lo", "--dst", "127.0.0.1", "--count", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("floodgate: error: 'lo' is not a veth", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("--i-know"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

}  // namespace
}  // namespace floodgate::test
