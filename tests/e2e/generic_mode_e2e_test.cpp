// SPDX-License-Identifier: MIT
// End to end, generic mode and merged packets: generic XDP runs on the kernel's packets, as a
// veth's peer sent them merged (TSO, UDP GSO) and after a lower device's GRO merged them, so a
// merged packet counts once against a pps limit. The attach says so and how to turn it off;
// the advice it gives is followed here, and the limit holds again. The device's own GRO, which
// the kernel skips under a generic program, is not warned of.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e/segmented_udp.h"
#include "e2e/veth_network.h"

namespace floodgate::test {
namespace {

constexpr const char* kSource = "198.18.0.2";
// a send of kDatagrams datagrams is one merged packet while the peer's segmentation is on
constexpr uint32_t kSends = 10;
constexpr uint32_t kDatagrams = 40;
constexpr uint64_t kBurst = 50;
// a macvlan's address, beside the target's on the same link
constexpr const char* kUpperAddress = "198.18.0.3";
// every feature of a veth's peer that sends a flow's segments merged
constexpr const char* kPeerOff =
    "tso off tx-udp-segmentation off tx-gso-list off tx-sctp-segmentation off";

class GenericModeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kSource});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    interface_ = net_->targetInterface();
    destination_ = VethNetwork::kTargetAddress;
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
    // the macvlan goes with the namespace, its limiter's pins (should a test stop before
    // its detach) with this
    if (!upper_.empty()) {
      (void)net_->floodgate({"detach", upper_});
      std::filesystem::remove_all("/sys/fs/bpf/floodgate/" + upper_);
    }
  }

  CommandResult attach(const std::string& mode) {
    return net_->floodgate({"attach", interface_, "--mode", mode, "--config", config_});
  }

  // The warning's line in `err` (empty when there is none).
  static std::string warningLine(const std::string& err) {
    const size_t at = err.find("generic mode on '");
    if (at == std::string::npos) return "";
    return err.substr(at, err.find('\n', at) - at);
  }

  // `status --json`'s merged_packets of the limiter: its text, or "null".
  std::string mergedPacketsInStatus() {
    CommandResult r = net_->floodgate({"status", interface_, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json status = nlohmann::json::parse(r.out, nullptr, false)["interfaces"][0];
    const nlohmann::json& merged = status["merged_packets"];
    return merged.is_string() ? merged.get<std::string>() : merged.dump();
  }

  // The warning's advice for a veth's peer, followed in the sending namespace.
  CommandResult turnOffPeerSegmentation() {
    std::vector<std::string> argv = {"ethtool", "-K", net_->senderInterface()};
    std::istringstream words(kPeerOff);
    for (std::string word; words >> word;) argv.push_back(word);
    CommandResult r = net_->inSender(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  // The udp rule's packets by verdict ("pass", "drop", "matched").
  uint64_t rulePackets(const std::string& verdict) {
    CommandResult r = net_->floodgate({"stats", interface_, "--json"});
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
    auto sent = sendSegmentedUdp(net_->senderNetns(), destination_, 9, kSends, kDatagrams, 1000);
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
  std::string interface_, destination_;  // where the limiter is, where the datagrams go
  std::string upper_;                    // a macvlan a test made, if any
};

TEST_F(GenericModeE2eTest, AVethPeersSegmentationIsWarnedOfAndTurningItOffHoldsTheLimit) {
  CommandResult attached = attach("generic");
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  // one line: the peer (in the sending namespace, not readable here) and how to turn it off
  const std::string line = warningLine(attached.err);
  EXPECT_NE(line.find("the veth peer of '" + net_->targetInterface() + "' (in another namespace)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("counts once against pps limits"), std::string::npos) << line;
  EXPECT_NE(line.find(std::string("'ethtool -K PEER ") + kPeerOff + "' there (or attach in native"),
            std::string::npos)
      << line;

  EXPECT_EQ(mergedPacketsInStatus(), line);  // status says the same, read again

  // what it warns of: each send is one packet to the rule, its 40 datagrams all let through
  sendAndWait(kSends);
  EXPECT_EQ(rulePackets("matched"), kSends);
  EXPECT_EQ(rulePackets("drop"), 0u);

  // its advice, and every datagram meets the rule
  ASSERT_EQ(turnOffPeerSegmentation().exit_code, 0);
  ASSERT_EQ(net_->floodgate({"detach", net_->targetInterface()}).exit_code, 0);
  ASSERT_EQ(attach("generic").exit_code, 0);
  expectHeldToItsLimit(sendAndWait(kSends * kDatagrams));
}

// The kernel skips GRO on the device a generic program runs on: its GRO, UDP forwarding GRO
// too, merges nothing there, and the warning does not name it.
TEST_F(GenericModeE2eTest, TheDevicesOwnGroMergesNothingAndIsNotWarnedOf) {
  ASSERT_EQ(turnOffPeerSegmentation().exit_code, 0);
  CommandResult gro = net_->inTarget(
      {"ethtool", "-K", net_->targetInterface(), "gro", "on", "rx-udp-gro-forwarding", "on"});
  ASSERT_EQ(gro.exit_code, 0) << gro.err;
  CommandResult attached = attach("generic");
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(attached.err.find("'" + net_->targetInterface() + "' merges"), std::string::npos)
      << attached.err;
  expectHeldToItsLimit(sendAndWait(kSends * kDatagrams));
}

// A macvlan meets what its lower device's GRO merged: the warning names the lower device, and
// its command holds the limit again.
TEST_F(GenericModeE2eTest, ALowerDevicesGroIsWarnedOfAndTurningItOffHoldsTheLimit) {
  ASSERT_EQ(turnOffPeerSegmentation().exit_code, 0);
  // named after the veth pair's tag, so runs side by side do not meet in the bpffs
  const std::string lower = net_->targetInterface(), upper = "fgm" + lower.substr(3);
  upper_ = upper;
  CommandResult gro =
      net_->inTarget({"ethtool", "-K", lower, "gro", "on", "rx-udp-gro-forwarding", "on"});
  ASSERT_EQ(gro.exit_code, 0) << gro.err;
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"ip", "link", "add", upper, "link", lower, "type", "macvlan",
                                 "mode", "bridge"},
        {"ip", "addr", "add", std::string(kUpperAddress) + "/24", "dev", upper},
        {"ip", "link", "set", upper, "up"}}) {
    CommandResult r = net_->inTarget(step);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // the sender reaches the macvlan's address at its own MAC
  CommandResult mac = net_->inTarget({"ip", "-br", "link", "show", upper});
  std::istringstream words(mac.out);
  std::string name, state, address;
  words >> name >> state >> address;
  CommandResult neigh = net_->inSender({"ip", "neigh", "replace", kUpperAddress, "lladdr", address,
                                        "dev", net_->senderInterface(), "nud", "permanent"});
  ASSERT_EQ(neigh.exit_code, 0) << neigh.err;
  interface_ = upper;
  destination_ = kUpperAddress;

  CommandResult attached = attach("generic");
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  const std::string line = warningLine(attached.err);
  EXPECT_NE(line.find("'" + lower + "' merges with its gro"), std::string::npos) << line;
  EXPECT_NE(line.find("'ethtool -K " + lower + " gro off'"), std::string::npos) << line;
  sendAndWait(kSends);
  EXPECT_EQ(rulePackets("matched"), kSends);
  // status says it too, read now: so once turned off, it no longer does
  EXPECT_NE(mergedPacketsInStatus().find("'" + lower + "' merges with its gro"), std::string::npos);

  CommandResult off = net_->inTarget({"ethtool", "-K", lower, "gro", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const std::string after = mergedPacketsInStatus();
  EXPECT_EQ(after.find("merges with its gro"), std::string::npos) << after;
  EXPECT_NE(after.find("the veth peer of '" + lower + "'"), std::string::npos) << after;
  ASSERT_EQ(net_->floodgate({"detach", upper}).exit_code, 0);
  CommandResult again = attach("generic");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("merges with its gro"), std::string::npos) << again.err;
  expectHeldToItsLimit(sendAndWait(kSends * kDatagrams));
  EXPECT_EQ(net_->floodgate({"detach", upper}).exit_code, 0);
}

TEST_F(GenericModeE2eTest, NativeModeOnAVethNeedsNoAdvice) {
  CommandResult attached = attach("native");
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(attached.err.find("generic mode"), std::string::npos) << attached.err;
  EXPECT_EQ(mergedPacketsInStatus(), "null");
  // the peer's segmentation is on, and the kernel hands the program every datagram
  expectHeldToItsLimit(sendAndWait(kSends * kDatagrams));
}

}  // namespace
}  // namespace floodgate::test
