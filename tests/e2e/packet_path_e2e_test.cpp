// SPDX-License-Identifier: MIT
// End to end, the ways around the packet path that must stay closed: crafted frames from
// denied and banned sources through the veth, ban times, interface names, list files and
// two writers at once, all through the real CLI against the real kernel.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/packet_builder.h"
#include "e2e/raw_frames.h"
#include "e2e/veth_network.h"
#include "floodgate_shared.h"

namespace floodgate::test {
namespace {

constexpr const char* kDeniedV4 = "192.0.2.66";
constexpr const char* kBannedV4 = "192.0.2.77";
constexpr const char* kInnocentV4 = "192.0.2.5";
constexpr const char* kDeniedV6 = "2001:db8:bad::1";
constexpr const char* kInnocentV6 = "2001:db8:900d::1";

// The odd frames an IPv4 source can send: a bogus header length, a total length past the
// frame, a frame cut just after the addresses, a later fragment, and a first fragment too
// short to hold the TCP flags.
std::vector<std::vector<uint8_t>> oddIpv4From(const std::string& source) {
  auto udp = PacketBuilder().eth().ipv4(source, VethNetwork::kTargetAddress).udp(53).payload(8);
  std::vector<std::vector<uint8_t>> out;
  auto bad_ihl = udp.build();
  bad_ihl[14] = 0x43;
  out.push_back(bad_ihl);
  auto long_total = udp.build();
  long_total[16] = 0x05;
  out.push_back(long_total);
  out.push_back(udp.build(14 + 20));
  out.push_back(PacketBuilder()
                    .eth()
                    .ipv4(source, VethNetwork::kTargetAddress)
                    .ipv4Fragment(9, false)
                    .udp(53)
                    .payload(64)
                    .build());
  auto tiny_syn = PacketBuilder()
                      .eth()
                      .ipv4(source, VethNetwork::kTargetAddress)
                      .ipv4Fragment(0, true)
                      .tcp(80, 0x02)
                      .build();
  tiny_syn[14 + 2] = 0;
  tiny_syn[14 + 3] = 28;
  out.push_back(tiny_syn);
  return out;
}

// And an IPv6 source: seventeen destination-options headers in front of UDP, a frame cut
// after the addresses, and a later fragment.
std::vector<std::vector<uint8_t>> oddIpv6From(const std::string& source) {
  PacketBuilder chain = PacketBuilder().eth().ipv6(source, "2001:db8::2");
  for (int i = 0; i < 17; ++i) chain.ipv6Ext(60);
  std::vector<std::vector<uint8_t>> out;
  out.push_back(chain.udp(53).build());
  auto cut = PacketBuilder().eth().ipv6(source, "2001:db8::2").ipv6Ext(0).udp(53).build();
  cut.resize(14 + 40);
  out.push_back(cut);
  out.push_back(PacketBuilder()
                    .eth()
                    .ipv6(source, "2001:db8::2")
                    .ipv6Fragment(100, false)
                    .udp(53)
                    .payload(64)
                    .build());
  return out;
}

class PacketPathE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-packet-path-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  CommandResult run(const std::vector<std::string>& args) { return net_->floodgate(args); }

  nlohmann::json stats() {
    CommandResult r = run({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  // `status --json` of the target interface.
  nlohmann::json interfaceStatus() {
    CommandResult r = run({"status", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false)["interfaces"][0];
  }

  // Neighbour Solicitations from the link (hop limit 255), each from a global source of its
  // own, to an address behind it: what a neighbour forging its source sends through a router.
  static std::vector<std::vector<uint8_t>> forgedSolicitations(uint64_t count) {
    std::vector<std::vector<uint8_t>> frames;
    for (uint64_t i = 0; i < count; ++i) {
      frames.push_back(PacketBuilder()
                           .eth()
                           .ipv6("2001:db8:77::" + std::to_string(i + 1), "2001:db8:99::1")
                           .hopLimit(255)
                           .icmp(135)
                           .build());
    }
    return frames;
  }

  static uint64_t counted(const nlohmann::json& stats, const std::string& verdict,
                          const std::string& reason) {
    uint64_t sum = 0;
    for (const auto& row : stats["counters"]) {
      if ((verdict.empty() || row["verdict"] == verdict) &&
          (reason.empty() || row["reason"] == reason)) {
        sum += row["packets"].get<uint64_t>();
      }
    }
    return sum;
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_;
};

TEST_F(PacketPathE2eTest, DeniedAndBannedSourcesStayOutWhateverTheFrameHoldsOrLacks) {
  // every odd frame would pass by its policy, but for its source
  const std::string config = write(
      "config.yaml", std::string("defaults: {malformed: pass, fragments: pass, "
                                 "unknown_ipv6_ext: pass}\n") +
                         "deny: [" + kDeniedV4 +
                         ", \"2001:db8:bad::/48\"]\n"
                         "rules:\n  - name: per-source\n    limit: {pps: 1000, burst: 1000}\n");
  CommandResult attached = run({"attach", net_->targetInterface(), "--config", config});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  CommandResult banned = run({"ban", "add", net_->targetInterface(), kBannedV4, "--for", "10m"});
  ASSERT_EQ(banned.exit_code, 0) << banned.err;

  std::vector<std::vector<uint8_t>> frames;
  for (const char* source : {kDeniedV4, kBannedV4, kInnocentV4}) {
    auto odd = oddIpv4From(source);
    frames.insert(frames.end(), odd.begin(), odd.end());
  }
  for (const char* source : {kDeniedV6, kInnocentV6}) {
    auto odd = oddIpv6From(source);
    frames.insert(frames.end(), odd.begin(), odd.end());
  }
  auto sent = sendFrames(net_->senderNetns(), net_->senderInterface(), frames);
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  ASSERT_EQ(*sent, frames.size());

  nlohmann::json after = stats();
  for (int i = 0; i < 100 && counted(after, "", "") < *sent; ++i) {
    usleep(10000);
    after = stats();
  }
  // every frame counted once: passed + dropped + monitored = sent
  EXPECT_EQ(counted(after, "", ""), *sent) << after["counters"].dump();
  EXPECT_EQ(counted(after, "drop", "deny"), 5u + 3u) << after["counters"].dump();
  EXPECT_EQ(counted(after, "drop", "ban"), 5u) << after["counters"].dump();
  // the innocent sources' odd frames went by their policies (pass), none was dropped
  EXPECT_EQ(counted(after, "pass", ""), 5u + 3u) << after["counters"].dump();
}

// A neighbour that forges a new global source for every Neighbour Solicitation (hop limit
// 255, so from the link) is held by no deny or ban: the link's budget passes `burst` of them
// by no rule, and the rest meet the ping cap like any ICMPv6.
TEST_F(PacketPathE2eTest, NeighbourDiscoveryPastTheLinksBudgetMeetsTheRules) {
  const std::string ping_cap =
      "rules:\n  - {name: ping, match: {protocol: icmp}, key: global, limit: {pps: 1, burst: 1}}\n";
  const std::string config =
      write("config.yaml", "defaults: {link_control: {pps: 1, burst: 10}}\n" + ping_cap);
  CommandResult attached = run({"attach", net_->targetInterface(), "--config", config});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  nlohmann::json status = interfaceStatus();
  EXPECT_EQ(status["link_control"], nlohmann::json({{"pps", 1}, {"burst", 10}})) << status.dump();
  CommandResult text = run({"status", net_->targetInterface()});
  EXPECT_NE(text.out.find("neighbour discovery and MLD from the link: pass by no rule up to 1/s "
                          "(burst 10), then meet the rules\n"),
            std::string::npos)
      << text.out;

  constexpr uint64_t kFrames = 60;
  const std::vector<std::vector<uint8_t>> frames = forgedSolicitations(kFrames);
  const auto start = std::chrono::steady_clock::now();
  auto sent = sendFrames(net_->senderNetns(), net_->senderInterface(), frames);
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  ASSERT_EQ(*sent, kFrames);
  nlohmann::json after = stats();
  for (int i = 0; i < 100 && counted(after, "", "") < kFrames; ++i) {
    usleep(10000);
    after = stats();
  }
  // each bucket refills one a second: what the time taken allows on top of the bursts
  const uint64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start)
          .count() +
      1;
  const std::string counters = after["counters"].dump();
  EXPECT_EQ(counted(after, "", ""), kFrames) << counters;
  EXPECT_GE(counted(after, "pass", "link_control"), 10u) << counters;
  EXPECT_LE(counted(after, "pass", "link_control"), 10u + seconds) << counters;
  // the rest were the cap's, which passed at most its burst and what it refilled
  EXPECT_EQ(counted(after, "drop", "rate") + counted(after, "pass", "default"),
            kFrames - counted(after, "pass", "link_control"))
      << counters;
  EXPECT_LE(counted(after, "pass", "default"), 1u + seconds) << counters;
  // and `stats` says how many came past the budget, the sign a neighbour spends it
  const uint64_t over = kFrames - counted(after, "pass", "link_control");
  EXPECT_EQ(after["link_control_over_budget"]["packets"], over) << after.dump();
  text = run({"stats", net_->targetInterface()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("link_control over its budget, met the rules: " + std::to_string(over) +
                          " packets"),
            std::string::npos)
      << text.out;

  // unlimited: every one passes by no rule again
  const std::string unlimited =
      write("unlimited.yaml", "defaults: {link_control: unlimited}\n" + ping_cap);
  CommandResult reloaded = run({"reload", net_->targetInterface(), "--config", unlimited});
  ASSERT_EQ(reloaded.exit_code, 0) << reloaded.err;
  status = interfaceStatus();
  EXPECT_TRUE(status["link_control"].is_null()) << status.dump();
  text = run({"status", net_->targetInterface()});
  EXPECT_NE(text.out.find("neighbour discovery and MLD from the link: pass by no rule, without "
                          "bound\n"),
            std::string::npos)
      << text.out;
  const uint64_t before = counted(stats(), "pass", "link_control");
  sent = sendFrames(net_->senderNetns(), net_->senderInterface(), frames);
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  after = stats();
  for (int i = 0; i < 100 && counted(after, "", "") < 2 * kFrames; ++i) {
    usleep(10000);
    after = stats();
  }
  EXPECT_EQ(counted(after, "pass", "link_control"), before + kFrames) << after["counters"].dump();
  EXPECT_EQ(after["link_control_over_budget"]["packets"], over) << "none past no budget";
}

// A limiter whose program does not count link-control frames past the budget (attached by
// an older floodgate: no `link_ctl_over` pin, or one its program does not use, which a failed
// replace or an older floodgate's replace leaves) says so in `stats`; a replace gives it the
// count, which the frames past the budget then add to.
TEST_F(PacketPathE2eTest, ALimiterWithoutTheLinkControlCountSaysSoAndAReplaceCounts) {
  const std::string iface = net_->targetInterface();
  CommandResult attached =
      run({"attach", iface, "--rate", "1k", "--link-control", "1", "--link-control-burst", "1"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  const std::string path = "/sys/fs/bpf/floodgate/" + iface + "/link_ctl_over";
  ASSERT_EQ(unlink(path.c_str()), 0);
  EXPECT_TRUE(stats()["link_control_over_budget"].is_null()) << stats().dump();
  CommandResult text = run({"stats", iface});
  EXPECT_NE(text.out.find("link_control over its budget: not counted by this limiter's program"),
            std::string::npos)
      << text.out;
  // a pin of this layout that the running program does not use counts nothing
  int foreign = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "link_ctl_over", sizeof(uint32_t),
                               sizeof(fg_counter), 1, nullptr);
  ASSERT_GE(foreign, 0);
  ASSERT_EQ(bpf_obj_pin(foreign, path.c_str()), 0);
  close(foreign);
  EXPECT_TRUE(stats()["link_control_over_budget"].is_null()) << stats().dump();
  ASSERT_EQ(unlink(path.c_str()), 0);

  CommandResult replaced = run({"attach", iface, "--replace"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(stats()["link_control_over_budget"], nlohmann::json({{"packets", 0}, {"bytes", 0}}));
  const std::vector<std::vector<uint8_t>> frames = forgedSolicitations(5);
  auto sent = sendFrames(net_->senderNetns(), net_->senderInterface(), frames);
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  nlohmann::json after = stats();
  for (int i = 0; i < 100 && counted(after, "", "") < frames.size(); ++i) {
    usleep(10000);
    after = stats();
  }
  // one a second with a burst of one: the rest came past the budget, whatever the time taken
  const uint64_t within = counted(after, "pass", "link_control");
  ASSERT_LT(within, frames.size()) << after.dump();
  EXPECT_EQ(after["link_control_over_budget"]["packets"], frames.size() - within) << after.dump();
}

TEST_F(PacketPathE2eTest, ABanLastsAsLongAsAskedAndNoLonger) {
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--rate", "1000"}).exit_code, 0);
  CommandResult two_days = run({"ban", "add", net_->targetInterface(), kBannedV4, "--for", "2d"});
  ASSERT_EQ(two_days.exit_code, 0) << two_days.err;
  EXPECT_EQ(two_days.out,
            std::string("banned ") + kBannedV4 + " on " + net_->targetInterface() + " for 2d\n");
  CommandResult list = run({"ban", "list", net_->targetInterface(), "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  nlohmann::json bans = nlohmann::json::parse(list.out)["bans"];
  ASSERT_EQ(bans.size(), 1u) << list.out;
  EXPECT_GT(bans[0]["seconds_left"].get<double>(), 2 * 86400 - 60);
  EXPECT_LE(bans[0]["seconds_left"].get<double>(), 2 * 86400 + 1);
  auto sent = sendFrames(net_->senderNetns(), net_->senderInterface(),
                         {PacketBuilder()
                              .eth()
                              .ipv4(kBannedV4, VethNetwork::kTargetAddress)
                              .udp(53)
                              .payload(18)
                              .build()});
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  nlohmann::json after = stats();
  for (int i = 0; i < 100 && counted(after, "drop", "ban") == 0; ++i) {
    usleep(10000);
    after = stats();
  }
  EXPECT_EQ(counted(after, "drop", "ban"), 1u) << "banned for 2d means banned now";

  CommandResult too_long =
      run({"ban", "add", net_->targetInterface(), kInnocentV4, "--for", "31d"});
  EXPECT_EQ(too_long.exit_code, 2);
  EXPECT_NE(too_long.err.find("--for is at most 30d"), std::string::npos) << too_long.err;
  EXPECT_EQ(too_long.err.find('\n'), too_long.err.size() - 1) << "one line: " << too_long.err;
}

TEST_F(PacketPathE2eTest, AnInterfaceNameThatIsNotOneChangesNothing) {
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--rate", "1000"}).exit_code, 0);
  for (const std::string& name :
       {std::string(".."), std::string(""), std::string("."), std::string("a/b"),
        std::string("../../fs/bpf"), std::string("eth0\x01"), std::string("sixteen-chars-xx")}) {
    for (const std::vector<std::string>& verb : {std::vector<std::string>{"detach", name},
                                                 {"stats", name},
                                                 {"ban", "list", name},
                                                 {"ban", "add", name, "192.0.2.1"},
                                                 {"deny", "add", name, "192.0.2.1"}}) {
      CommandResult r = run(verb);
      EXPECT_EQ(r.exit_code, 2) << verb[0] << " '" << name << "': " << r.err;
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
      EXPECT_EQ(r.err.find('\x01'), std::string::npos) << "control characters never echoed";
    }
  }
  // the limiter and the pin root are untouched
  EXPECT_TRUE(std::filesystem::exists("/sys/fs/bpf/floodgate/" + net_->targetInterface()));
  EXPECT_EQ(run({"stats", net_->targetInterface()}).exit_code, 0);
}

TEST_F(PacketPathE2eTest, AListThatIsAFifoOrHugeIsRefusedAndTheRunningRulesStay) {
  const std::string good =
      write("good.yaml", "rules:\n  - name: kept\n    limit: {pps: 100, burst: 10}\n");
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--config", good}).exit_code, 0);
  const std::string fifo = dir_ + "/deny.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string bad =
      write("bad.yaml",
            "deny:\n  - file: " + fifo + "\nrules:\n  - name: changed\n    limit: {pps: 5}\n");
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = run({"reload", net_->targetInterface(), "--config", bad});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << "no hang";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("not a regular file (a FIFO)"), std::string::npos) << r.err;
  nlohmann::json now = stats();
  ASSERT_EQ(now["rules"].size(), 1u);
  EXPECT_EQ(now["rules"][0]["name"], "kept");
}

TEST_F(PacketPathE2eTest, ASecondWriterWaitsThenGivesUpWithOneLine) {
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--rate", "1000"}).exit_code, 0);
  // this test is the first writer: it holds the pin directory's lock
  const std::string pins = "/sys/fs/bpf/floodgate/" + net_->targetInterface();
  int fd = open(pins.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  const auto start = std::chrono::steady_clock::now();
  CommandResult waited = run({"ban", "add", net_->targetInterface(), kBannedV4, "--for", "1m"});
  const auto waited_for = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(waited.exit_code, 1) << waited.err;
  EXPECT_NE(waited.err.find("another floodgate has been changing"), std::string::npos)
      << waited.err;
  EXPECT_EQ(waited.err.find('\n'), waited.err.size() - 1) << "one line: " << waited.err;
  EXPECT_GE(waited_for, std::chrono::seconds(3)) << "it waited for the first writer";
  CommandResult set = run({"set", net_->targetInterface(), "default", "--pps", "5"});
  EXPECT_EQ(set.exit_code, 1) << set.err;
  // nor is a detach taken from under a write (whose count it would leave pinned in a
  // directory it could not remove)
  CommandResult detach = run({"detach", net_->targetInterface()});
  EXPECT_EQ(detach.exit_code, 1) << detach.err;
  EXPECT_NE(detach.err.find("another floodgate has been changing"), std::string::npos)
      << detach.err;
  EXPECT_TRUE(std::filesystem::exists(pins + "/link")) << "still attached";
  // readers are never held up
  EXPECT_EQ(run({"ban", "list", net_->targetInterface()}).exit_code, 0);
  flock(fd, LOCK_UN);
  close(fd);
  CommandResult after = run({"ban", "add", net_->targetInterface(), kBannedV4, "--for", "1m"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

}  // namespace
}  // namespace floodgate::test
