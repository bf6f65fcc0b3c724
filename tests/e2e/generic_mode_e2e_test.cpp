// SPDX-License-Identifier: MIT
// End to end, generic mode and merged packets: generic XDP runs on the kernel's packets, after
// GRO merged a flow's segments and as a veth's peer sent them merged (TSO, UDP GSO), so a
// merged packet counts once against a pps limit. The attach says so and how to turn it off;
// the advice it gives is followed here, and the limit holds again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/segmented_udp.h"
#include "e2e/veth_network.h"

namespace floodgate::test {
namespace {

constexpr const char* kSource = "198.18.0.2";
// a send of kDatagrams datagrams is one merged packet while the peer's segmentation is on
constexpr uint32_t kSends = 10;
constexpr uint32_t kDatagrams = 40;
constexpr uint64_t kBurst = 50;

class GenericModeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kSource});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-generic-mode-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    config_ = dir_ + "/config.yaml";
    std::ofstream(config_) << "rules:\n  - name: udp\n    match: {protocol: udp}\n"
                              "    limit: {pps: 1, burst: "
                           << kBurst << "}\n";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  CommandResult attach(const std::string& mode) {
    return net_->floodgate(
        {"attach", net_->targetInterface(), "--mode", mode, "--config", config_});
  }

  // The udp rule's packets by verdict ("pass", "drop", "matched").
  uint64_t rulePackets(const std::string& verdict) {
    CommandResult r = net_->floodgate({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json stats = nlohmann::json::parse(r.out, nullptr, false);
    for (const auto& rule : stats["rules"]) {
      if (rule["name"] == "udp" && rule.contains(verdict)) return rule[verdict]["packets"];
    }
    return 0;
  }

  // Sends kSends segmented sends, then waits until the rule met `expected` packets (or the
  // veth's queue dropped the rest before XDP) or 5 s went by. Returns the seconds it took.
  double sendAndWait(uint64_t expected) {
    const auto start = std::chrono::steady_clock::now();
    auto sent = sendSegmentedUdp(net_->senderNetns(), VethNetwork::kTargetAddress, 9, kSends,
                                 kDatagrams, 1000);
    EXPECT_TRUE(sent.ok()) << sent.error().message;
    for (int i = 0; i < 500; ++i) {
      if (rulePackets("matched") + net_->senderQueueDrops() >= expected) break;
      usleep(10000);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // What the rule let through is its burst and its 1 pps over `seconds`, and it met the
  // datagrams one by one (all but what the veth's queue dropped before XDP, never most).
  void expectHeldToItsLimit(double seconds) {
    EXPECT_GE(rulePackets("matched"), kSends * kDatagrams * 3 / 4);
    EXPECT_LE(rulePackets("pass"), kBurst + static_cast<uint64_t>(seconds) + 1);
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_, config_;
};

TEST_F(GenericModeE2eTest, TheAttachSaysWhatMergesAndItsAdviceHoldsTheLimit) {
  CommandResult gro = net_->inTarget({"ethtool", "-K", net_->targetInterface(), "gro", "on"});
  ASSERT_EQ(gro.exit_code, 0) << gro.err;
  CommandResult attached = attach("generic");
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  // one line: what merges here (GRO, the veth's peer) and how to turn each off
  const std::string& err = attached.err;
  const size_t at = err.find("generic mode on '" + net_->targetInterface() + "'");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string line = err.substr(at, err.find('\n', at) - at);
  EXPECT_NE(line.find("counts once against pps limits"), std::string::npos) << line;
  EXPECT_NE(line.find("'ethtool -K " + net_->targetInterface() + " gro off'"), std::string::npos)
      << line;
  EXPECT_NE(line.find("attach in native mode"), std::string::npos) << line;
  EXPECT_NE(line.find("'ethtool -K PEER tso off tx-udp-segmentation off'"), std::string::npos)
      << line;

  // what it warns of: each send is one packet to the rule, its 40 datagrams all let through
  sendAndWait(kSends);
  EXPECT_EQ(rulePackets("matched"), kSends);
  EXPECT_EQ(rulePackets("drop"), 0u);

  // its advice for the peer, and every datagram meets the rule
  CommandResult off = net_->inSender(
      {"ethtool", "-K", net_->senderInterface(), "tso", "off", "tx-udp-segmentation", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  ASSERT_EQ(net_->floodgate({"detach", net_->targetInterface()}).exit_code, 0);
  ASSERT_EQ(attach("generic").exit_code, 0);
  expectHeldToItsLimit(sendAndWait(kSends * kDatagrams));
}

TEST_F(GenericModeE2eTest, NativeModeOnAVethNeedsNoAdvice) {
  CommandResult attached = attach("native");
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(attached.err.find("generic mode"), std::string::npos) << attached.err;
  // the peer's segmentation is on, and the kernel hands the program every datagram
  expectHeldToItsLimit(sendAndWait(kSends * kDatagrams));
}

}  // namespace
}  // namespace floodgate::test
