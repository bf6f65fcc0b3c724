// SPDX-License-Identifier: MIT
// End to end: `floodgate attach` as operators run it in the lab, where it must refuse or
// do what it says: private mount namespaces, and `--replace` keeping what it was not told.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e/lab_network.h"

namespace floodgate::test {
namespace {

class AttachE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto lab = LabNetwork::create({"198.18.0.2"});
    ASSERT_TRUE(lab.ok()) << lab.error().message;
    lab_ = std::move(*lab);
  }

  CommandResult run(const std::vector<std::string>& args) { return lab_->floodgate(args); }

  // The command under `ip netns exec` (a private mount namespace with a fresh /sys), after
  // `prelude` ran in a shell there.
  CommandResult underIpNetnsExec(const std::string& prelude, const std::vector<std::string>& args) {
    std::string script = prelude + " && exec \"$0\" \"$@\"";
    std::vector<std::string> argv = {
        "ip", "netns", "exec", std::filesystem::path(lab_->targetNetns()).filename().string(),
        "sh", "-c",    script, FLOODGATE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }

  bool xdpAttached() {
    CommandResult link = lab_->inTarget({"ip", "link", "show", lab_->targetInterface()});
    return link.out.find("xdp") != std::string::npos;
  }

  nlohmann::json status() {
    CommandResult r = run({"status", lab_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["interfaces"][0];
  }

  std::unique_ptr<LabNetwork> lab_;
};

TEST_F(AttachE2eTest, IpNetnsExecRefusesEvenWhenPid1sNamespaceCannotBeRead) {
  const std::vector<std::string> attach = {"attach", lab_->targetInterface(), "--rate", "1k"};
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

TEST_F(AttachE2eTest, ReplaceKeepsTheRunningTableSizeAndSaysSoWhenAnotherWasAsked) {
  ASSERT_EQ(
      run({"attach", lab_->targetInterface(), "--table-size", "4096", "--rate", "100"}).exit_code,
      0);
  CommandResult replaced = run({"attach", lab_->targetInterface(), "--replace", "--rate", "10"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(replaced.err.find("kernel"), std::string::npos) << replaced.err;
  EXPECT_EQ(status()["table_slots"], 4096);
  EXPECT_EQ(status()["rules"][0]["limit"]["pps"], 10);

  CommandResult bigger =
      run({"attach", lab_->targetInterface(), "--replace", "--rate", "20", "--table-size", "8192"});
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

}  // namespace
}  // namespace floodgate::test
