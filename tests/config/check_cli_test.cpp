// SPDX-License-Identifier: MIT
// `floodgate check` through the built binary: exit codes, the summary line, diagnostics, JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/command.h"

#ifndef FLOODGATE_BIN
#error "FLOODGATE_BIN must name the floodgate binary"
#endif

namespace {

using floodgate::test::CommandResult;

const std::string kSource = FLOODGATE_SOURCE_DIR;

CommandResult check(const std::vector<std::string>& args) {
  std::vector<std::string> argv{FLOODGATE_BIN, "check"};
  argv.insert(argv.end(), args.begin(), args.end());
  return floodgate::test::runCommand(argv);
}

TEST(CheckCommand, ValidConfigExitsZeroWithASummary) {
  const std::string file = kSource + "/config/floodgate.yaml";
  CommandResult run = check({file});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, file + ": ok, 4 rules, 2 interfaces\n");
  EXPECT_EQ(run.err, "");
}

TEST(CheckCommand, InvalidConfigExitsOneWithEveryDiagnostic) {
  const std::string file = kSource + "/tests/data/invalid/bursts.yaml";
  CommandResult run = check({file});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out,
            file + ":5:29: burst must be at least 1 packet, got 0\n" + file +
                ":7:29: burst must be at least 1 packet, got -5\n" + file +
                ":9:39: burst_bytes must be at least 1518 (one full-size frame), got 1000\n" +
                file + ":11:26: burst goes with pps (it is a number of packets)\n" + file +
                ":13:12: limit needs pps and/or bps (e.g. {pps: 10k})\n" + file +
                ":14:5: rule 'no-limit' needs a limit (e.g. limit: {pps: 10k})\n");
  EXPECT_EQ(run.err, "floodgate: error: " + file + " is not valid (6 problems)\n");
}

TEST(CheckCommand, MissingFileExitsOne) {
  CommandResult run = check({"/nonexistent.yaml"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "/nonexistent.yaml: cannot read the config file: No such file or directory\n");
}

TEST(CheckCommand, NoFileIsAUsageError) {
  CommandResult run = check({});
  EXPECT_EQ(run.exit_code, 2);
}

TEST(CheckCommand, JsonForValidAndInvalid) {
  CommandResult ok = check({kSource + "/config/examples/web-syn-flood.yaml", "--json"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  nlohmann::json valid = nlohmann::json::parse(ok.out);
  EXPECT_EQ(valid["valid"], true);
  EXPECT_EQ(valid["rules"], 5);
  EXPECT_EQ(valid["interfaces"], 1);
  EXPECT_EQ(valid["deny"], 4);
  EXPECT_TRUE(valid["diagnostics"].empty());

  CommandResult bad = check({kSource + "/tests/data/invalid/duplicates.yaml", "--json"});
  EXPECT_EQ(bad.exit_code, 1);
  nlohmann::json invalid = nlohmann::json::parse(bad.out);
  EXPECT_EQ(invalid["valid"], false);
  ASSERT_EQ(invalid["diagnostics"].size(), 3u);
  EXPECT_EQ(invalid["diagnostics"][1]["line"], 10);
  EXPECT_EQ(invalid["diagnostics"][1]["column"], 11);
  EXPECT_EQ(invalid["diagnostics"][1]["message"],
            "rule name 'per-source' is used twice (first at line 5); names must be unique");
}

}  // namespace
