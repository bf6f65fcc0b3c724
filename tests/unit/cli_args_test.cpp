// SPDX-License-Identifier: MIT
// Unit tests of the floodgate CLI's usage errors: exit 2 and one line, before any kernel access.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/command.h"

#ifndef FLOODGATE_BIN
#error "FLOODGATE_BIN must name the floodgate binary"
#endif

namespace {

using CliRun = floodgate::test::CommandResult;

// Runs the floodgate binary with `args` (stdin is /dev/null).
CliRun runFloodgate(const std::vector<std::string>& args) {
  std::vector<std::string> argv{FLOODGATE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return floodgate::test::runCommand(argv);
}

std::string describe(const std::vector<std::string>& args, const CliRun& run) {
  std::string text = "floodgate";
  for (const std::string& arg : args) text += " " + arg;
  return text + "\nexit " + std::to_string(run.exit_code) + "\nstdout: " + run.out +
         "\nstderr: " + run.err;
}

// A usage error: exit 2, nothing on stdout, one line on stderr that says what is wrong.
void expectUsageError(const std::vector<std::string>& args, const std::string& mentions) {
  CliRun run = runFloodgate(args);
  SCOPED_TRACE(describe(args, run));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.rfind("floodgate: error: ", 0), 0u) << "must start with 'floodgate: error: '";
  ASSERT_FALSE(run.err.empty());
  EXPECT_EQ(run.err.back(), '\n');
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "must be exactly one line";
  EXPECT_NE(run.err.find(mentions), std::string::npos) << "should mention '" << mentions << "'";
}

TEST(CliArgs, HelpExitsZero) {
  CliRun run = runFloodgate({"--help"});
  SCOPED_TRACE(describe({"--help"}, run));
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("attach"), std::string::npos);
  EXPECT_EQ(run.err, "");
}

TEST(CliArgs, SubcommandHelpExitsZero) {
  CliRun run = runFloodgate({"attach", "--help"});
  SCOPED_TRACE(describe({"attach", "--help"}, run));
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("--rate"), std::string::npos);
  EXPECT_EQ(run.err, "");
}

TEST(CliArgs, UnknownFlag) {
  expectUsageError({"attach", "lo", "--rate", "10k", "--frobnicate"}, "--frobnicate");
}

TEST(CliArgs, UnknownSubcommandIsNamed) {
  expectUsageError({"explode"}, "'explode' is not a floodgate command");
}

TEST(CliArgs, NoSubcommand) { expectUsageError({}, "subcommand"); }

TEST(CliArgs, MissingInterface) { expectUsageError({"attach", "--rate", "10k"}, "interface"); }

TEST(CliArgs, BadRate) { expectUsageError({"attach", "lo", "--rate", "10x"}, "'10x'"); }

TEST(CliArgs, RateBeyondADoublesRange) {
  expectUsageError({"attach", "lo", "--rate", std::string(400, '9')}, "is not a positive count");
}

TEST(CliArgs, ABadLinkControlBudgetSaysWhatToWrite) {
  expectUsageError({"attach", "lo", "--rate", "1k", "--link-control", "lots"},
                   "or write unlimited");
  expectUsageError({"attach", "lo", "--rate", "1k", "--link-control-burst", "5"},
                   "--link-control-burst goes with --link-control");
  expectUsageError(
      {"attach", "lo", "--rate", "1k", "--link-control", "unlimited", "--link-control-burst", "5"},
      "--link-control unlimited has no burst");
  expectUsageError({"attach", "lo", "--rate", "1k", "--link-control", "20M"},
                   "link_control pps must be at most 10000000");
}

TEST(CliArgs, BadBitRate) { expectUsageError({"attach", "lo", "--bps", "fast"}, "'fast'"); }

// With --config, a flag for what the config sets is refused, not dropped without a word:
// before the config is read, with the config key to set instead.
TEST(CliArgs, AttachWithAConfigRefusesTheFlagsTheConfigSets) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--ipv4-prefix", "24"}, "key.ipv4_prefix"},
      {{"--ipv6-prefix", "48"}, "key.ipv6_prefix"},
      {{"--table-size", "1M"}, "defaults.table_size"},
      {{"--malformed", "pass"}, "defaults.malformed"},
      {{"--fragments", "drop"}, "defaults.fragments"},
      {{"--unknown-ipv6-ext", "pass"}, "defaults.unknown_ipv6_ext"},
      {{"--link-control", "5k"}, "defaults.link_control"},
      {{"--link-control", "5k", "--link-control-burst", "10k"}, "defaults.link_control"},
  };
  for (const auto& [flag, key] : cases) {
    std::vector<std::string> args{"attach", "lo", "--config", "/nonexistent/floodgate.yaml"};
    args.insert(args.end(), flag.begin(), flag.end());
    expectUsageError(args, "drop " + flag.front() + " and set it in the config");
    expectUsageError(args, key);
  }
}

TEST(CliArgs, BadBurst) {
  expectUsageError({"attach", "lo", "--rate", "10k", "--burst", "1.5"}, "'1.5'");
}

TEST(CliArgs, BadMode) {
  expectUsageError({"attach", "lo", "--rate", "10k", "--mode", "turbo"}, "turbo");
}

TEST(CliArgs, Ipv4PrefixOutOfRange) {
  expectUsageError({"attach", "lo", "--rate", "10k", "--ipv4-prefix", "33"}, "33");
}

TEST(CliArgs, Ipv6PrefixOutOfRange) {
  expectUsageError({"attach", "lo", "--rate", "10k", "--ipv6-prefix", "0"}, "--ipv6-prefix");
}

TEST(CliArgs, NoLimit) { expectUsageError({"attach", "lo"}, "--rate"); }

TEST(CliArgs, BurstWithoutRate) {
  expectUsageError({"attach", "lo", "--bps", "1Gbit", "--burst", "100"},
                   "--burst goes with --rate");
  expectUsageError({"attach", "lo", "--burst", "100"}, "--rate");
}

TEST(CliArgs, BurstBytesWithoutBps) {
  expectUsageError({"attach", "lo", "--rate", "10k", "--burst-bytes", "64KiB"},
                   "--burst-bytes goes with --bps");
}

TEST(CliArgs, AllowAddWithHostBits) {
  expectUsageError({"allow", "add", "lo", "10.0.0.1/8"}, "did you mean 10.0.0.0/8?");
}

TEST(CliArgs, AllowAddWithABadAddress) {
  expectUsageError({"allow", "add", "lo", "300.1.1.1"}, "'300.1.1.1'");
  expectUsageError({"deny", "add", "lo", "192.0.2.0/24", "2001:db8::/129"}, "'2001:db8::/129'");
}

TEST(CliArgs, AllowAddWithoutCidrs) { expectUsageError({"allow", "add", "lo"}, "cidrs"); }

TEST(CliArgs, FloodNeedsACountOrADuration) {
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1"}, "--count N or --duration");
}

TEST(CliArgs, FloodWithBadValues) {
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.300", "--count", "1"}, "--dst");
  expectUsageError(
      {"flood", "veth0", "--dst", "198.18.0.1", "--src", "2001:db8::1", "--count", "1"},
      "different IP versions");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--size", "40", "--count", "1"},
                   "60 to 1514");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--protocol", "sctp", "--count", "1"},
                   "udp, tcp-syn, icmp");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--across-64s", "--count", "1"},
                   "--across-64s is for IPv6");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--dst-mac", "02:00", "--count", "1"},
                   "aa:bb:cc:dd:ee:ff");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--duration", "2 weeks"},
                   "--duration");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--duration", "2h"}, "at most 1h");
  expectUsageError({"flood", "veth0", "--dst", "198.18.0.1", "--count", "1", "--batch", "300"},
                   "1..256");
}

}  // namespace
