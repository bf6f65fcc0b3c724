// SPDX-License-Identifier: MIT
// End to end: `floodgate attach` as operators run it on the veth network, where it must refuse or
// do what it says: private mount namespaces, and `--replace` keeping what it was not told.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/child_process.h"
#include "e2e/veth_network.h"
#include "floodgate_shared.h"

namespace floodgate::test {
namespace {

class AttachE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({"198.18.0.2"});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
  }

  CommandResult run(const std::vector<std::string>& args) { return net_->floodgate(args); }

  // The command under `ip netns exec` (a private mount namespace with a fresh /sys), after
  // `prelude` ran in a shell there.
  CommandResult underIpNetnsExec(const std::string& prelude, const std::vector<std::string>& args) {
    std::string script = prelude + " && exec \"$0\" \"$@\"";
    std::vector<std::string> argv = {
        "ip", "netns", "exec", std::filesystem::path(net_->targetNetns()).filename().string(),
        "sh", "-c",    script, FLOODGATE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }

  bool xdpAttached() {
    CommandResult link = net_->inTarget({"ip", "link", "show", net_->targetInterface()});
    return link.out.find("xdp") != std::string::npos;
  }

  nlohmann::json status() {
    CommandResult r = run({"status", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["interfaces"][0];
  }

  std::unique_ptr<VethNetwork> net_;
};

TEST_F(AttachE2eTest, IpNetnsExecRefusesEvenWhenPid1sNamespaceCannotBeRead) {
  const std::vector<std::string> attach = {"attach", net_->targetInterface(), "--rate", "1k"};
  CommandResult plain = underIpNetnsExec("true", attach);
  EXPECT_EQ(plain.exit_code, 1) << plain.out << plain.err;
  EXPECT_NE(plain.err.find("nsenter --net="), std::string::npos) << plain.err;
  EXPECT_EQ(plain.out.find("attached"), std::string::npos) << plain.out;

  // What some init systems and sandboxes do: /proc/1/ns/mnt cannot be read (here a tmpfs
  // over /proc/1 inside the private namespace). It cannot tell, so it must refuse too.
  CommandResult blind = underIpNetnsExec("mount -t tmpfs none /proc/1", attach);
  EXPECT_EQ(blind.exit_code, 1) << blind.out << blind.err;
  EXPECT_NE(blind.err.find("nsenter --net="), std::string::npos) << blind.err;
  EXPECT_EQ(blind.out.find("attached"), std::string::npos) << blind.out;
  EXPECT_FALSE(xdpAttached());

  // the advice works
  CommandResult advised = run(attach);
  EXPECT_EQ(advised.exit_code, 0) << advised.err;
  EXPECT_TRUE(xdpAttached());
}

// A tunnel's frames start at the IP header: the program would read the source address as an
// ethertype and pass every packet as non-IP, so attach refuses the interface.
TEST_F(AttachE2eTest, AnInterfaceWithoutEthernetFramesIsRefused) {
  CommandResult added = net_->inTarget({"ip", "tuntap", "add", "dev", "fgtun0", "mode", "tun"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  CommandResult r = run({"attach", "fgtun0", "--rate", "1k"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("'fgtun0' carries no Ethernet header (link type 65534, see 'ip link'): "
                       "floodgate parses Ethernet frames"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(net_->inTarget({"ip", "link", "show", "fgtun0"}).out.find("xdp"), std::string::npos);
  // the veth beside it, an Ethernet interface, is taken
  EXPECT_EQ(run({"attach", net_->targetInterface(), "--rate", "1k"}).exit_code, 0);
}

// Two fresh attaches of one interface at once (a unit starting while an operator types): one
// attaches, the other finds it attached and says so, and the pins are those of the program
// on the hook, so status and detach find it. Each load takes most of a second, so the two
// overlap whatever the machine's speed.
TEST_F(AttachE2eTest, TwoAttachesAtOnceLeaveOneLimiterThatStatusAndDetachFind) {
  char dir[] = "/tmp/fg-attach-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<std::string> argv = {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN,
                                         "attach",  net_->targetInterface(),        "--rate",
                                         "1k"};
  for (int round = 0; round < 3; ++round) {
    std::vector<ChildProcess> attaches;
    for (int i = 0; i < 2; ++i) {
      auto child = ChildProcess::start(argv, std::string(dir) + "/" + std::to_string(i) + ".log");
      ASSERT_TRUE(child.ok()) << child.error().message;
      attaches.push_back(std::move(*child));
    }
    std::vector<int> codes;
    std::string logs;
    for (ChildProcess& child : attaches) {
      codes.push_back(child.wait(120));
      logs += child.log();
    }
    std::sort(codes.begin(), codes.end());
    EXPECT_EQ(codes, (std::vector<int>{0, 1})) << logs;
    EXPECT_NE(logs.find("floodgate is already attached to '" + net_->targetInterface() + "'"),
              std::string::npos)
        << logs;
    EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 1000);
    CommandResult detached = run({"detach", net_->targetInterface()});
    EXPECT_EQ(detached.exit_code, 0) << detached.err;
    EXPECT_FALSE(xdpAttached()) << "round " << round;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(AttachE2eTest, ReplaceKeepsTheRunningTableSizeAndSaysSoWhenAnotherWasAsked) {
  ASSERT_EQ(
      run({"attach", net_->targetInterface(), "--table-size", "4096", "--rate", "100"}).exit_code,
      0);
  CommandResult replaced = run({"attach", net_->targetInterface(), "--replace", "--rate", "10"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(replaced.err.find("kernel"), std::string::npos) << replaced.err;
  EXPECT_EQ(status()["table_slots"], 4096);
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 10);

  CommandResult bigger =
      run({"attach", net_->targetInterface(), "--replace", "--rate", "20", "--table-size", "8192"});
  ASSERT_EQ(bigger.exit_code, 0) << bigger.err;
  EXPECT_NE(bigger.err.find("warning: the table size (8192) takes effect only on a fresh attach"),
            std::string::npos)
      << bigger.err;
  EXPECT_NE(bigger.err.find("keeps 4096 slots"), std::string::npos) << bigger.err;
  EXPECT_EQ(std::count(bigger.err.begin(), bigger.err.end(), '\n'), 1) << bigger.err;
  EXPECT_EQ(status()["table_slots"], 4096);
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 20);
  EXPECT_TRUE(xdpAttached());
}

TEST_F(AttachE2eTest, ReplaceKeepsEverySettingItWasNotGivenAndRefusesAModeItCannotChange) {
  ASSERT_EQ(run({"attach",
                 net_->targetInterface(),
                 "--rate",
                 "100",
                 "--bps",
                 "10Mbit",
                 "--ipv4-prefix",
                 "24",
                 "--malformed",
                 "pass",
                 "--fragments",
                 "drop",
                 "--table-size",
                 "4096",
                 "--mode",
                 "native",
                 "--link-control",
                 "50",
                 "--link-control-burst",
                 "200"})
                .exit_code,
            0);
  CommandResult rate = run({"attach", net_->targetInterface(), "--replace", "--rate", "50"});
  ASSERT_EQ(rate.exit_code, 0) << rate.err;
  EXPECT_EQ(rate.err, "") << "nothing to warn about";
  nlohmann::json st = status();
  EXPECT_EQ(st["rules"][0]["limit"]["pps"], 50);
  EXPECT_EQ(st["rules"][0]["limit"]["bps"], 10000000) << "the earlier --bps stays";
  EXPECT_EQ(st["rules"][0]["ipv4_prefix"], 24);
  EXPECT_EQ(st["policies"]["malformed"], "pass");
  EXPECT_EQ(st["policies"]["fragments"], "drop");
  EXPECT_EQ(st["link_control"], nlohmann::json({{"pps", 50}, {"burst", 200}}));
  EXPECT_EQ(st["table_slots"], 4096);
  EXPECT_EQ(st["monitor"], false);

  CommandResult monitor = run({"attach", net_->targetInterface(), "--replace", "--monitor"});
  ASSERT_EQ(monitor.exit_code, 0) << monitor.err;
  EXPECT_NE(monitor.out.find("monitor only"), std::string::npos) << monitor.out;
  st = status();
  EXPECT_EQ(st["monitor"], true);
  EXPECT_EQ(st["rules"][0]["limit"]["pps"], 50) << "no limit given: the rules stay";
  CommandResult policy =
      run({"attach", net_->targetInterface(), "--replace", "--fragments", "pass"});
  ASSERT_EQ(policy.exit_code, 0) << policy.err;
  st = status();
  EXPECT_EQ(st["monitor"], true) << "--monitor not given again: it stays";
  EXPECT_EQ(st["policies"]["fragments"], "pass");
  EXPECT_EQ(st["policies"]["malformed"], "pass");
  EXPECT_EQ(st["link_control"], nlohmann::json({{"pps", 50}, {"burst", 200}}));
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--replace", "--no-monitor"}).exit_code, 0);
  EXPECT_EQ(status()["monitor"], false);
  ASSERT_EQ(run({"attach", net_->targetInterface(), "--replace", "--link-control", "unlimited"})
                .exit_code,
            0);
  EXPECT_TRUE(status()["link_control"].is_null()) << status().dump();

  // a link keeps its mode: another one is refused in one line, and nothing changes
  CommandResult generic =
      run({"attach", net_->targetInterface(), "--replace", "--mode", "generic", "--rate", "7"});
  EXPECT_EQ(generic.exit_code, 2) << generic.err;
  EXPECT_NE(generic.err.find("runs in native mode"), std::string::npos) << generic.err;
  EXPECT_NE(generic.err.find("floodgate detach " + net_->targetInterface()), std::string::npos);
  EXPECT_EQ(std::count(generic.err.begin(), generic.err.end(), '\n'), 1) << generic.err;
  st = status();
  EXPECT_EQ(st["mode"], "native");
  EXPECT_EQ(st["rules"][0]["limit"]["pps"], 50);
  CommandResult same =
      run({"attach", net_->targetInterface(), "--replace", "--mode", "native", "--rate", "7"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 7);
}

// What `floodgate check` warns of is said by attach --config too: an operator who never ran
// check still hears that the allow list lets every IPv6 source through unlimited.
TEST_F(AttachE2eTest, AttachWithAConfigWarnsAsCheckDoes) {
  char dir[] = "/tmp/floodgate-attach-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string config = std::string(dir) + "/floodgate.yaml";
  std::ofstream(config) << "allow: [\"::/0\"]\nrules:\n  - {name: r, limit: {pps: 10}}\n";
  CommandResult attached = run({"attach", net_->targetInterface(), "--config", config});
  EXPECT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(
      attached.err,
      "warning: " + config + ": allow holds ::/0: it lets through, unlimited, every IPv6 source\n");
  std::filesystem::remove_all(dir);
}

// A byte bucket smaller than the interface's largest frame would refuse such frames for
// good: attach --config says so, with the interface's MTU.
TEST_F(AttachE2eTest, AttachWarnsOfAByteBucketSmallerThanTheInterfacesFrames) {
  ASSERT_EQ(net_->inTarget({"ip", "link", "set", net_->targetInterface(), "mtu", "3000"}).exit_code,
            0);
  char dir[] = "/tmp/floodgate-attach-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string config = std::string(dir) + "/floodgate.yaml";
  std::ofstream(config) << "rules:\n  - {name: bytes, limit: {bps: 1Mbit, burst_bytes: 1518}}\n";
  CommandResult attached = run({"attach", net_->targetInterface(), "--config", config});
  EXPECT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(attached.err,
            "warning: rule 'bytes': its bps limit admits 1518 bytes at once, less "
            "than the 3018-byte frames " +
                net_->targetInterface() +
                " carries (MTU 3000): such a frame never passes, and under "
                "on_exceed: ban it bans its sender; raise its burst_bytes to at "
                "least 3018\n");
  std::filesystem::remove_all(dir);
}

TEST_F(AttachE2eTest, ReplaceWithALimitRefusesToDropAConfigsRules) {
  char dir[] = "/tmp/floodgate-attach-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string config = std::string(dir) + "/floodgate.yaml";
  std::ofstream(config) << "rules:\n"
                           "  - name: dns\n    match: {protocol: udp, dst_ports: [53]}\n"
                           "    limit: {pps: 50, burst: 100}\n"
                           "  - name: all\n    key: global\n    limit: {pps: 10k}\n";
  CommandResult attached = run({"attach", net_->targetInterface(), "--config", config});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  const size_t rules = status()["rules"].size();
  CommandResult replace = run({"attach", net_->targetInterface(), "--replace", "--rate", "10"});
  EXPECT_EQ(replace.exit_code, 2) << replace.out;
  EXPECT_NE(replace.err.find("rules from a config"), std::string::npos) << replace.err;
  EXPECT_NE(replace.err.find("'dns', 'all'"), std::string::npos) << replace.err;
  EXPECT_EQ(status()["rules"].size(), rules);
  std::filesystem::remove_all(dir);
}

TEST_F(AttachE2eTest, APinnedMapOfAnotherLayoutIsRefusedSayingWhatToDo) {
  const std::string iface = net_->targetInterface();
  CommandResult attach = run({"attach", iface, "--rate", "1k"});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  // what an older build would have left: `rules` pinned with values of another size
  const std::string path = "/sys/fs/bpf/floodgate/" + iface + "/rules";
  ASSERT_EQ(unlink(path.c_str()), 0);
  int older = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rules", 4, sizeof(fg_rule) + 8,
                             FG_MAX_RULES * FG_RULE_SETS, nullptr);
  ASSERT_GE(older, 0);
  ASSERT_EQ(bpf_obj_pin(older, path.c_str()), 0);
  close(older);

  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"status", iface},
        std::vector<std::string>{"attach", iface, "--replace", "--rate", "2k"}}) {
    CommandResult refused = run(command);
    EXPECT_EQ(refused.exit_code, 1) << refused.err;
    EXPECT_NE(refused.err.find("the pinned map 'rules'"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("this floodgate expects " + std::to_string(sizeof(fg_rule))),
              std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("run 'floodgate detach " + iface + "', then attach again"),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  }
  // and what it says to do works
  CommandResult detach = run({"detach", iface});
  ASSERT_EQ(detach.exit_code, 0) << detach.err;
  CommandResult again = run({"attach", iface, "--rate", "1k"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 1000);
}

TEST_F(AttachE2eTest, ReplacingOverABucketTableOfAnotherLayoutIsRefusedSayingWhatToDo) {
  const std::string iface = net_->targetInterface();
  CommandResult attach = run({"attach", iface, "--rate", "1k"});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  // what a floodgate from before the table had a layout number leaves: 0
  const std::string path = "/sys/fs/bpf/floodgate/" + iface + "/settings_map";
  int settings_fd = bpf_obj_get(path.c_str());
  ASSERT_GE(settings_fd, 0);
  const uint32_t zero = 0;
  fg_settings settings{};
  ASSERT_EQ(bpf_map_lookup_elem(settings_fd, &zero, &settings), 0);
  EXPECT_EQ(settings.table_layout, FG_TABLE_LAYOUT);
  settings.table_layout = 0;
  ASSERT_EQ(bpf_map_update_elem(settings_fd, &zero, &settings, BPF_ANY), 0);
  // a reload by this build (as a daemon that adopts the limiter does) changes the rules and
  // policies, not the program: the table is still of the other layout after it
  char dir[] = "/tmp/fg-layout-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string config = std::string(dir) + "/layout.yaml";
  std::ofstream(config) << "rules:\n  - {name: r, limit: {pps: 1k}}\n";
  CommandResult reloaded = run({"reload", iface, "--config", config});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(reloaded.exit_code, 0) << reloaded.err;
  ASSERT_EQ(bpf_map_lookup_elem(settings_fd, &zero, &settings), 0);
  EXPECT_EQ(settings.table_layout, 0u);
  close(settings_fd);

  CommandResult refused = run({"attach", iface, "--replace", "--rate", "2k"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("bucket table is laid out differently"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("run 'floodgate detach " + iface + "', then attach again"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  // the running limiter is as it was
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 1000);
  EXPECT_TRUE(xdpAttached());

  // and what it says to do works, after which a replace keeps the table again
  ASSERT_EQ(run({"detach", iface}).exit_code, 0);
  ASSERT_EQ(run({"attach", iface, "--rate", "2k"}).exit_code, 0);
  CommandResult replaced = run({"attach", iface, "--replace", "--rate", "3k"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 3000);
}

// The kernel cuts an XDP link loose from a device it deletes, and the pinned link lives on: a
// limiter whose interface was deleted and made again runs nowhere. status says so, and an
// attach links its program to the new device, keeping its state (here a ban).
TEST_F(AttachE2eTest, AnInterfaceMadeAgainIsShownCutOffAndAttachedAgainWithItsState) {
  const std::string iface = net_->targetInterface();
  CommandResult attach = run({"attach", iface, "--rate", "1k"});
  ASSERT_EQ(attach.exit_code, 0) << attach.err;
  ASSERT_EQ(run({"ban", "add", iface, "192.0.2.1", "--for", "10m"}).exit_code, 0);
  ASSERT_TRUE(net_->remake().ok());
  EXPECT_FALSE(xdpAttached());

  EXPECT_EQ(status()["mode"], "severed");
  CommandResult text = run({"status", iface});
  EXPECT_NE(text.out.find("NOT RUNNING"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("'floodgate attach " + iface + "' with its config"), std::string::npos)
      << text.out;

  CommandResult again = run({"attach", iface, "--rate", "2k"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("attached to it again, its state kept"), std::string::npos) << again.err;
  EXPECT_TRUE(xdpAttached());
  nlohmann::json now = status();
  EXPECT_EQ(now["mode"], "native");
  EXPECT_EQ(now["rules"][0]["limit"]["pps"], 2000) << "the config asked for replaces the rules";
  CommandResult bans = run({"ban", "list", iface});
  EXPECT_NE(bans.out.find("192.0.2.1"), std::string::npos) << "the ban was kept:\n" << bans.out;
}

// A renamed interface keeps its limiter (its link is on the device); one made under the old
// name has none. status says so, and attach does not take the limiter from the renamed one
// (whose device index could be another namespace's by chance).
TEST_F(AttachE2eTest, ARenamedInterfaceKeepsItsLimiterAndStatusSaysTheNewOneHasNone) {
  const std::string iface = net_->targetInterface(), renamed = "fgr" + iface.substr(3);
  ASSERT_EQ(run({"attach", iface, "--rate", "1k"}).exit_code, 0);
  Status renamed_target = net_->renameTarget(renamed, "fgp" + iface.substr(3));
  ASSERT_TRUE(renamed_target.ok()) << renamed_target.error().message;
  nlohmann::json now = status();
  EXPECT_EQ(now["mode"], "moved");
  CommandResult text = run({"status", iface});
  EXPECT_NE(text.out.find("NOT RUNNING on it: the interface was renamed " + renamed),
            std::string::npos)
      << text.out;
  EXPECT_FALSE(xdpAttached()) << "the new device has no program";
  CommandResult old = net_->inTarget({"ip", "link", "show", renamed});
  EXPECT_NE(old.out.find("prog/xdp"), std::string::npos) << "the renamed one keeps its own";
  CommandResult again = run({"attach", iface, "--rate", "1k"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.err.find("already attached"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace floodgate::test
