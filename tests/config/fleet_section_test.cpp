// SPDX-License-Identifier: MIT
// floodgate.yaml's `fleet.bans`: every key into FleetBansConfig, its defaults, and each
// mistake reported at its position (a missing secret, no stream, an unknown kind of ban).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/floodgate_config.h"

namespace floodgate::config {
namespace {

namespace fs = std::filesystem;

class FleetSectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "fg-fleet-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    secret_ = (dir_ / "fleet.secret").string();
    std::ofstream(secret_) << "0123456789abcdef0123456789abcdef\n";
    chmod(secret_.c_str(), 0600);
  }
  void TearDown() override { fs::remove_all(dir_); }

  FloodgateConfig parse(const std::string& bans, Diagnostics& diagnostics) {
    return parseConfig("fleet:\n  bans:\n" + bans, "test.yaml", diagnostics);
  }
  std::string errors(const std::string& bans) {
    Diagnostics diagnostics;
    parse(bans, diagnostics);
    return diagnostics.format();
  }

  fs::path dir_;
  std::string secret_;
};

// The report secret signs what every service host may send; the fleet's signs bans every
// host applies. One secret for both hands the second to the first.
TEST_F(FleetSectionTest, TheReportSecretReusedForFleetBansIsWarnedOf) {
  const std::string copy = (dir_ / "reports.secret").string();
  std::ofstream(copy) << "0123456789abcdef0123456789abcdef\n";  // the same secret, another file
  chmod(copy.c_str(), 0600);
  const std::string other = (dir_ / "other.secret").string();
  std::ofstream(other) << "fedcba9876543210fedcba9876543210\n";
  chmod(other.c_str(), 0600);
  const std::string bans =
      "fleet:\n  bans:\n    address: 10.0.0.5:6379\n    stream: fb\n"
      "    secret_file: " +
      secret_ + "\n";
  auto withReportSecret = [&](const std::string& file) {
    Diagnostics diagnostics;
    FloodgateConfig config =
        parseConfig(bans +
                        "http:\n  store: {type: redis, address: 10.0.0.5:6379}\n"
                        "  escalate: {rejections: 5, within: 10s, ban: 1m, redis_stream: fr, "
                        "secret_file: " +
                        file + "}\n",
                    "test.yaml", diagnostics);
    EXPECT_TRUE(diagnostics.empty()) << diagnostics.format();
    return configWarnings(config);
  };
  const std::vector<std::string> warned = {
      "fleet.bans.secret_file holds the secret of http.escalate.secret_file: every service "
      "host that reports offenders can then sign fleet-wide bans and lifts, past the report "
      "thresholds and per-reporter limits; give fleet.bans a secret of its own"};
  EXPECT_EQ(withReportSecret(secret_), warned);
  EXPECT_EQ(withReportSecret(copy), warned);
  EXPECT_TRUE(withReportSecret(other).empty());

  // the secret that signs the published policies, which every following service holds
  Diagnostics diagnostics;
  FloodgateConfig published =
      parseConfig(bans +
                      "http:\n  store: {type: redis, address: 10.0.0.5:6379}\n"
                      "  publish: {redis_key: fg:policies, secret_file: " +
                      copy + "}\n",
                  "test.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  EXPECT_EQ(configWarnings(published),
            std::vector<std::string>{
                "fleet.bans.secret_file holds the secret of http.publish.secret_file: every "
                "service host that follows the published policies can then sign fleet-wide bans "
                "and lifts, past the report thresholds and per-reporter limits; give fleet.bans "
                "a secret of its own"});
}

// A restart reads back the offender reports of the last ban time and the fleet's lifts of the
// last max_ban: with the first longer, a report older than the lifts read back bans again.
TEST_F(FleetSectionTest, AFleetReplayShorterThanTheReportsIsWarnedOf) {
  const std::string reports = (dir_ / "reports.secret").string();
  std::ofstream(reports) << "fedcba9876543210fedcba9876543210\n";
  chmod(reports.c_str(), 0600);
  auto warnings = [&](const std::string& bans, const std::string& escalate) {
    Diagnostics diagnostics;
    FloodgateConfig config =
        parseConfig("fleet:\n  bans:\n    address: 10.0.0.5:6379\n    stream: fb\n" + bans +
                        "    secret_file: " + secret_ +
                        "\nhttp:\n  store: {type: redis, address: 10.0.0.5:6379}\n"
                        "  escalate: {rejections: 5, within: 10s, " +
                        escalate + "}\n",
                    "test.yaml", diagnostics);
    EXPECT_TRUE(diagnostics.empty()) << diagnostics.format();
    return configWarnings(config);
  };
  const std::string stream = ", redis_stream: fr, secret_file: " + reports;
  EXPECT_EQ(warnings("    max_ban: 30m\n    share: [manual]\n", "ban: 1h" + stream),
            std::vector<std::string>{
                "http.escalate.ban (1h) is longer than fleet.bans.max_ban (30m): a restarted "
                "controller reads back offender reports of the last 1h but the fleet's lifts of "
                "the last 30m only, so it bans again an address the fleet lifted before then; "
                "set fleet.bans.max_ban to at least http.escalate.ban"});
  EXPECT_TRUE(warnings("    max_ban: 1h\n", "ban: 1h" + stream).empty());
  EXPECT_TRUE(warnings("    max_ban: 30m\n    share: [manual]\n", "ban: 1h").empty())
      << "a socket's reports are not read back, and escalations are not shared";
}

// A ban longer than fleet.bans.max_ban is never shared, every host would refuse it: a kind
// the config shares with such a ban time is warned of, escalations and each rule's.
TEST_F(FleetSectionTest, BansTooLongToBeSharedAreWarnedOf) {
  Diagnostics diagnostics;
  FloodgateConfig config = parseConfig(
      "rules:\n"
      "  - {name: short, limit: {pps: 10}, on_exceed: {ban: 10m}}\n"
      "  - {name: long, limit: {pps: 10}, on_exceed: {ban: 2h}}\n"
      "fleet:\n  bans:\n    address: 10.0.0.5:6379\n    stream: fb\n    max_ban: 30m\n"
      "    share: [escalation, rule]\n    secret_file: " +
          secret_ +
          "\nhttp:\n  escalate: {rejections: 5, within: 10s, ban: 1h, socket: /run/r.sock}\n",
      "test.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  EXPECT_EQ(configWarnings(config),
            (std::vector<std::string>{
                "http.escalate.ban (1h) is longer than fleet.bans.max_ban (30m): its bans are "
                "not shared with the fleet, though fleet.bans.share lists escalation; set "
                "fleet.bans.max_ban to at least http.escalate.ban",
                "rule long bans for 2h, longer than fleet.bans.max_ban (30m): its bans are not "
                "shared with the fleet, though fleet.bans.share lists rule; set "
                "fleet.bans.max_ban to at least its ban, or shorten the ban"}));
}

TEST_F(FleetSectionTest, EveryKeyAndTheDefaults) {
  Diagnostics diagnostics;
  FloodgateConfig config = parse(
      "    address: 10.0.0.5:6379\n"
      "    stream: floodgate:bans\n"
      "    secret_file: " +
          secret_ + "\n",
      diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  const FleetBansConfig& bans = config.fleet_bans;
  EXPECT_TRUE(bans.enabled);
  EXPECT_EQ(bans.redis.type, "redis");
  EXPECT_EQ(bans.redis.address, "10.0.0.5:6379");
  EXPECT_EQ(bans.stream, "floodgate:bans");
  EXPECT_EQ(bans.secret, "0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(bans.share_manual);
  EXPECT_TRUE(bans.share_escalation);
  EXPECT_FALSE(bans.share_rule) << "rule bans are shared only when asked for";
  EXPECT_EQ(bans.max_ban_ns, 86'400'000'000'000ULL);
  EXPECT_EQ(bans.max_replay, 100'000);
  EXPECT_EQ(bans.max_entries, 131'072) << "half the ban table";
  EXPECT_EQ(bans.widest_ipv4, 24);
  EXPECT_EQ(bans.widest_ipv6, 48);

  Diagnostics more;
  FloodgateConfig full = parse(
      "    cluster: [10.0.0.5:7000, 10.0.0.6:7000]\n"
      "    stream: fb\n"
      "    secret_file: " +
          secret_ +
          "\n"
          "    share: [rule]\n"
          "    max_ban: 2h\n"
          "    max_replay: 500\n"
          "    max_entries: 1000\n"
          "    username: fleet\n"
          "    password_file: " +
          secret_ +
          "\n"
          "    widest_ipv4: 32\n"
          "    widest_ipv6: 64\n",
      more);
  ASSERT_TRUE(more.empty()) << more.format();
  EXPECT_EQ(full.fleet_bans.redis.cluster.size(), 2u);
  EXPECT_FALSE(full.fleet_bans.share_manual);
  EXPECT_FALSE(full.fleet_bans.share_escalation);
  EXPECT_TRUE(full.fleet_bans.share_rule);
  EXPECT_EQ(full.fleet_bans.max_ban_ns, 7'200'000'000'000ULL);
  EXPECT_EQ(full.fleet_bans.max_replay, 500);
  EXPECT_EQ(full.fleet_bans.max_entries, 1000);
  EXPECT_EQ(full.fleet_bans.redis.username, "fleet");
  EXPECT_EQ(full.fleet_bans.redis.password, "0123456789abcdef0123456789abcdef")
      << "the login to a Redis that asks for one";
  EXPECT_EQ(full.fleet_bans.widest_ipv4, 32);
}

TEST_F(FleetSectionTest, NoSectionSharesNothing) {
  Diagnostics diagnostics;
  FloodgateConfig config = parseConfig("interfaces: [eth0]\n", "test.yaml", diagnostics);
  EXPECT_TRUE(diagnostics.empty());
  EXPECT_FALSE(config.fleet_bans.enabled);
}

TEST_F(FleetSectionTest, MistakesAreReportedAtTheirPlace) {
  EXPECT_NE(errors("    address: 10.0.0.5:6379\n    stream: s\n").find("needs secret_file"),
            std::string::npos);
  EXPECT_NE(
      errors("    address: 10.0.0.5:6379\n    secret_file: " + secret_ + "\n").find("needs stream"),
      std::string::npos);
  EXPECT_NE(errors("    stream: s\n    secret_file: " + secret_ + "\n").find("needs address"),
            std::string::npos);
  EXPECT_NE(errors("    address: 10.0.0.5:6379\n    stream: s\n    secret_file: relative\n")
                .find("must be an absolute path"),
            std::string::npos);
  EXPECT_NE(errors("    address: 10.0.0.5:6379\n    stream: s\n    secret_file: " + secret_ +
                   "\n    share: [manual, everyone]\n")
                .find("test.yaml:6:"),
            std::string::npos)
      << "an unknown kind is reported at its item";
  EXPECT_NE(errors("    address: 10.0.0.5:6379\n    stream: s\n    secret_file: " + secret_ +
                   "\n    max_ban: 60d\n")
                .find("fleet.bans.max_ban"),
            std::string::npos);
  for (const char* entries : {"0", "245761"}) {
    EXPECT_NE(errors("    address: 10.0.0.5:6379\n    stream: s\n    secret_file: " + secret_ +
                     "\n    max_entries: " + entries + "\n")
                  .find("fleet.bans.max_entries"),
              std::string::npos)
        << entries << ": 1 up to the table less the room kept for manual bans";
  }
  EXPECT_NE(errors("    address: 10.0.0.5:6379\n    stream: s\n    secret_file: " + secret_ +
                   "\n    streams: s\n")
                .find("streams"),
            std::string::npos);
  // a secret every user may read signs nothing
  chmod(secret_.c_str(), 0644);
  EXPECT_FALSE(
      errors("    address: 10.0.0.5:6379\n    stream: s\n    secret_file: " + secret_ + "\n")
          .empty());
}

}  // namespace
}  // namespace floodgate::config
