// SPDX-License-Identifier: MIT
// `floodgate check` through the built binary: exit codes, the summary line, diagnostics, JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
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
  EXPECT_EQ(invalid["rules"], 0);
  EXPECT_EQ(invalid["interfaces"], 0);
  EXPECT_TRUE(invalid["warnings"].empty());
  ASSERT_EQ(invalid["diagnostics"].size(), 3u);
  EXPECT_EQ(invalid["diagnostics"][1]["line"], 10);
  EXPECT_EQ(invalid["diagnostics"][1]["column"], 11);
  EXPECT_EQ(invalid["diagnostics"][1]["message"],
            "rule name 'per-source' is used twice (first at line 5); names must be unique");
}

// A generated file with tens of thousands of bad values: a screenful of them, the count of
// all in the error line, and nothing grows with the file but that count.
TEST(CheckCommand, AFileWithTensOfThousandsOfProblemsShowsTheFirstFewHundred) {
  const std::string file = ::testing::TempDir() + "floodgate-many-problems.yaml";
  {
    std::ofstream out(file);
    out << "allow:\n";
    for (int i = 0; i < 20'000; ++i) out << "  - not-an-address-" << i << "\n";
  }
  CommandResult run = check({file});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 201) << run.out.substr(0, 400);
  EXPECT_NE(run.out.find("more problems not shown: fix the first 200 and check again"),
            std::string::npos);
  EXPECT_NE(run.err.find("is not valid (20000 problems)"), std::string::npos) << run.err;
  nlohmann::json json = nlohmann::json::parse(check({file, "--json"}).out);
  EXPECT_EQ(json["diagnostics"].size(), 200u);
  EXPECT_EQ(json["diagnostics_omitted"], 20'000u - 200u);
  std::remove(file.c_str());
}

// Diagnostics quote the file, whose bytes need not be UTF-8 (a name in Latin-1): --json
// still answers, with such a byte as U+FFFD, where nlohmann's dump would throw and abort.
TEST(CheckCommand, JsonOfAFileWithBytesThatAreNotUtf8) {
  const std::string file = ::testing::TempDir() + "floodgate-latin1.yaml";
  {
    std::ofstream out(file);
    out << "rules:\n  - name: r\n    limit: {pps: 10}\n    caf\xe9: 1\n";
  }
  CommandResult run = check({file, "--json"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["valid"], false);
  ASSERT_EQ(json["diagnostics"].size(), 1u) << run.out;
  EXPECT_NE(json["diagnostics"][0]["message"].get<std::string>().find("caf\xef\xbf\xbd"),
            std::string::npos)
      << run.out;
  std::remove(file.c_str());
}

// The shape docs/config.md documents: the same top-level keys, valid or not, and no others.
TEST(CheckCommand, JsonHasTheDocumentedKeysWhetherValidOrNot) {
  const std::vector<std::string> documented{
      "allow", "deny",  "diagnostics", "diagnostics_omitted", "file", "http_policies", "interfaces",
      "rules", "valid", "warnings"};
  for (const std::string& file :
       {kSource + "/config/floodgate.yaml", kSource + "/tests/data/invalid/bursts.yaml",
        std::string("/nonexistent.yaml")}) {
    CommandResult run = check({file, "--json"});
    nlohmann::json out = nlohmann::json::parse(run.out);
    std::vector<std::string> keys;
    for (const auto& item : out.items()) keys.push_back(item.key());
    EXPECT_EQ(keys, documented) << file;  // nlohmann::json keeps keys sorted
    EXPECT_TRUE(out["file"].is_string());
    EXPECT_TRUE(out["valid"].is_boolean());
    EXPECT_TRUE(out["warnings"].is_array());
    EXPECT_TRUE(out["diagnostics"].is_array());
    EXPECT_TRUE(out["diagnostics_omitted"].is_number_unsigned());
    for (const char* count : {"rules", "interfaces", "allow", "deny", "http_policies"})
      EXPECT_TRUE(out[count].is_number_unsigned()) << file << " " << count;
  }
  nlohmann::json valid =
      nlohmann::json::parse(check({kSource + "/config/floodgate.yaml", "--json"}).out);
  EXPECT_EQ(valid["rules"], 4);
  EXPECT_EQ(valid["interfaces"], 2);
  EXPECT_EQ(valid["allow"], 2);
  EXPECT_EQ(valid["deny"], 1);
  EXPECT_EQ(valid["http_policies"], 0);
}

}  // namespace
