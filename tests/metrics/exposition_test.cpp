// SPDX-License-Identifier: MIT
// The exposition text: escaping, every series present with zeros, HELP and TYPE once each.
#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace floodgate::metrics {
namespace {

Snapshot twoInterfaces() {
  Snapshot s;
  s.version = "1.2.3";
  s.reloads_success = 4;
  s.reloads_failure = 1;
  s.config_generation = 5;
  InterfaceMetrics a;
  a.interface = "eth0";
  a.counters = {{FG_VERDICT_DROP, FG_REASON_RATE, 100, 6000}};
  RuleCounters rule;
  rule.name = "per \"source\"";
  rule.by_verdict[FG_VERDICT_DROP] = {FG_VERDICT_DROP, 0, 7, 420};
  rule.table[FG_TABLE_CAPPED] = 11;
  rule.table[FG_TABLE_UNTRACKED_DROP] = 12;
  rule.table[FG_TABLE_BAN_FAILED] = 5;
  a.rules = {rule};
  a.events[FG_EVENT_BAN_START] = 2;
  a.event_stats.suppressed = 9;
  a.tracked_v4 = 1234.4;
  a.bans_active = 3;
  a.link_control_over = 8;
  a.merged_packets = true;
  a.limits = {{"per-source", {50, 5, 0, 0}}, {"bytes", {0, 0, 8000000, 100000}}};
  a.adaptive_tightened = 6;
  a.adaptive_relaxed = 2;
  InterfaceMetrics b;
  b.interface = "eth1";
  s.interfaces = {a, b};
  s.configured = {{"eth0", true}, {"eth1", true}, {"eth2", false}};
  return s;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has(const std::string& text, const std::string& line) {
  for (const auto& l : lines(text)) {
    if (l == line) return true;
  }
  return false;
}

TEST(Exposition, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(escapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escapeLabelValue("plain-name_1"), "plain-name_1");
}

// Prometheus refuses the whole scrape over one label value that is not UTF-8, and an
// interface name may hold any byte: each byte outside well-formed UTF-8 is U+FFFD.
TEST(Exposition, ALabelValueIsAlwaysUtf8) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(escapeLabelValue("eth\xff"), "eth" + replacement);
  EXPECT_EQ(escapeLabelValue("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")
      << "well-formed UTF-8 as it is";
  EXPECT_EQ(escapeLabelValue("a\xC3"), "a" + replacement) << "cut short";
  EXPECT_EQ(escapeLabelValue("\xC0\xAF"), replacement + replacement) << "overlong";
  EXPECT_EQ(escapeLabelValue("\xED\xA0\x80"), replacement + replacement + replacement)
      << "a surrogate";
  EXPECT_EQ(escapeLabelValue("\xF4\x90\x80\x80"),
            replacement + replacement + replacement + replacement)
      << "above U+10FFFF";
  EXPECT_EQ(escapeLabelValue("\x80\"\xE2\x82"), replacement + "\\\"" + replacement + replacement);
}

TEST(Exposition, EveryVerdictAndReasonOfEveryInterfaceIsPresentZerosToo) {
  std::string text = render(twoInterfaces());
  const char* verdicts[] = {"pass", "drop", "monitor"};
  const char* reasons[] = {"rate",     "deny",   "ban",     "allow",       "malformed",
                           "fragment", "non_ip", "default", "link_control"};
  for (const char* iface : {"eth0", "eth1"}) {
    for (const char* v : verdicts) {
      for (const char* r : reasons) {
        std::string labels = std::string("{interface=\"") + iface + "\",verdict=\"" + v +
                             "\",reason=\"" + r + "\"} ";
        bool counted =
            std::string(iface) == "eth0" && std::string(v) == "drop" && std::string(r) == "rate";
        EXPECT_TRUE(has(text, "floodgate_packets_total" + labels + (counted ? "100" : "0")))
            << labels;
        EXPECT_TRUE(has(text, "floodgate_bytes_total" + labels + (counted ? "6000" : "0")))
            << labels;
      }
    }
  }
  EXPECT_TRUE(has(text, "floodgate_tracked_sources{interface=\"eth1\",family=\"ipv6\"} 0"));
  EXPECT_TRUE(has(text, "floodgate_bans_active{interface=\"eth1\"} 0"));
}

TEST(Exposition, RuleNamesAreEscapedAndEachVerdictShown) {
  std::string text = render(twoInterfaces());
  EXPECT_TRUE(has(text,
                  "floodgate_rule_packets_total{interface=\"eth0\",rule=\"per "
                  "\\\"source\\\"\",verdict=\"drop\"} 7"));
  EXPECT_TRUE(has(text,
                  "floodgate_rule_bytes_total{interface=\"eth0\",rule=\"per "
                  "\\\"source\\\"\",verdict=\"drop\"} 420"));
  EXPECT_TRUE(has(text,
                  "floodgate_rule_packets_total{interface=\"eth0\",rule=\"per "
                  "\\\"source\\\"\",verdict=\"monitor\"} 0"));
}

TEST(Exposition, GaugesAndDaemonSeries) {
  std::string text = render(twoInterfaces());
  EXPECT_TRUE(has(text, "floodgate_tracked_sources{interface=\"eth0\",family=\"ipv4\"} 1234"));
  EXPECT_TRUE(has(text, "floodgate_bans_active{interface=\"eth0\"} 3"));
  EXPECT_TRUE(has(text, "floodgate_merged_packets{interface=\"eth0\"} 1"));
  EXPECT_TRUE(has(text, "floodgate_merged_packets{interface=\"eth1\"} 0"));
  EXPECT_TRUE(has(text, "floodgate_bans_failed_total{interface=\"eth0\"} 5"));
  EXPECT_TRUE(has(text, "floodgate_bans_failed_total{interface=\"eth1\"} 0"));
  // the daemon's running total, where it keeps one, over the running rules' sum
  Snapshot kept = twoInterfaces();
  kept.interfaces[0].bans_failed = 9;
  EXPECT_TRUE(has(render(kept), "floodgate_bans_failed_total{interface=\"eth0\"} 9"));
  EXPECT_TRUE(has(text, "floodgate_config_reloads_total{result=\"success\"} 4"));
  EXPECT_TRUE(has(text, "floodgate_config_reloads_total{result=\"failure\"} 1"));
  EXPECT_TRUE(has(text, "floodgate_config_generation 5"));
  EXPECT_TRUE(has(text, "floodgate_build_info{version=\"1.2.3\"} 1"));
  EXPECT_TRUE(has(text, "floodgate_interface_up{interface=\"eth0\"} 1"));
  EXPECT_TRUE(has(text, "floodgate_interface_up{interface=\"eth2\"} 0")) << "listed, missing";
}

TEST(Exposition, SourceTableAndEventSeries) {
  std::string text = render(twoInterfaces());
  EXPECT_TRUE(has(
      text,
      R"(floodgate_rule_sources_total{interface="eth0",rule="per \"source\"",outcome="capped"} 11)"))
      << text;
  EXPECT_TRUE(has(
      text,
      R"(floodgate_rule_untracked_packets_total{interface="eth0",rule="per \"source\"",verdict="drop"} 12)"));
  EXPECT_TRUE(has(text, R"(floodgate_events_total{interface="eth0",event="ban_start"} 2)"));
  EXPECT_TRUE(has(text, R"(floodgate_events_total{interface="eth1",event="limited"} 0)"));
  EXPECT_TRUE(has(text, R"(floodgate_events_dropped_total{interface="eth0",reason="budget"} 9)"));
}

// A limiter attached by a floodgate whose program does not count them has no series: a 0
// there would say the budget was never spent.
TEST(Exposition, LinkControlOverBudgetOnlyWhereTheProgramCountsIt) {
  std::string text = render(twoInterfaces());
  EXPECT_TRUE(has(text, R"(floodgate_link_control_over_budget_total{interface="eth0"} 8)")) << text;
  EXPECT_EQ(text.find(R"(floodgate_link_control_over_budget_total{interface="eth1"})"),
            std::string::npos)
      << text;
  Snapshot counted = twoInterfaces();
  counted.interfaces[1].link_control_over = 0;
  EXPECT_TRUE(
      has(render(counted), R"(floodgate_link_control_over_budget_total{interface="eth1"} 0)"));
}

TEST(Exposition, FleetBanSeriesByResultZerosToo) {
  Snapshot s;
  s.fleet_bans_received[kFleetBanApplied] = 7;
  s.fleet_bans_received[kFleetBanForged] = 2;
  s.fleet_bans_received[kFleetBanLifted] = 4;
  s.fleet_bans_received[kFleetBanNoRoom] = 3;
  s.fleet_bans_published.sent = 3;
  s.fleet_bans_published.failed = 1;
  std::string text = render(s);
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="applied"} 7)")) << text;
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="forged"} 2)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="replayed"} 0)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="allowlisted"} 0)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="lifted"} 4)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="superseded"} 0)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_received_total{result="no_room"} 3)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_published_total{result="sent"} 3)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_published_total{result="failed"} 1)"));
  EXPECT_TRUE(has(text, R"(floodgate_fleet_bans_published_total{result="dropped"} 0)"));
}

TEST(Exposition, RuleLimitsShowEveryRateARuleHasAndAdaptiveStepsAreEvents) {
  std::string text = render(twoInterfaces());
  EXPECT_TRUE(
      has(text, R"(floodgate_rule_limit{interface="eth0",rule="per-source",kind="pps"} 50)"));
  EXPECT_TRUE(
      has(text, R"(floodgate_rule_limit{interface="eth0",rule="per-source",kind="burst"} 5)"));
  EXPECT_TRUE(
      has(text, R"(floodgate_rule_limit{interface="eth0",rule="bytes",kind="bps"} 8000000)"));
  EXPECT_TRUE(has(
      text, R"(floodgate_rule_limit{interface="eth0",rule="bytes",kind="burst_bytes"} 100000)"));
  EXPECT_EQ(text.find(R"(floodgate_rule_limit{interface="eth0",rule="per-source",kind="bps"})"),
            std::string::npos)
      << "a rate the rule does not have is not a series";
  EXPECT_TRUE(has(text, R"(floodgate_events_total{interface="eth0",event="adaptive_tighten"} 6)"));
  EXPECT_TRUE(has(text, R"(floodgate_events_total{interface="eth0",event="adaptive_relax"} 2)"));
  EXPECT_TRUE(has(text, R"(floodgate_events_total{interface="eth1",event="adaptive_relax"} 0)"));
}

// Only a rule that gives SYN cookies has their series; the others' would be zeros forever.
TEST(Exposition, SynCookieSeriesOnlyForRulesWithSynCookies) {
  Snapshot s = twoInterfaces();
  RuleCounters cookies;
  cookies.name = "syn";
  cookies.syn_cookies = true;
  cookies.table[FG_TABLE_COOKIE_SENT] = 40;
  cookies.table[FG_TABLE_COOKIE_VERIFIED] = 3;
  s.interfaces[0].rules.push_back(cookies);
  const std::string text = render(s);
  EXPECT_TRUE(has(
      text, "floodgate_rule_syn_cookies_total{interface=\"eth0\",rule=\"syn\",result=\"sent\"} 40"))
      << text;
  EXPECT_TRUE(has(text,
                  "floodgate_rule_syn_cookies_total{interface=\"eth0\",rule=\"syn\",result="
                  "\"verified\"} 3"));
  EXPECT_TRUE(has(text,
                  "floodgate_rule_syn_cookies_total{interface=\"eth0\",rule=\"syn\",result="
                  "\"failed\"} 0"));
  EXPECT_EQ(text.find("floodgate_rule_syn_cookies_total{interface=\"eth0\",rule=\"per"),
            std::string::npos)
      << text;
}

TEST(Exposition, HelpAndTypeOncePerFamilyBeforeItsSamples) {
  std::string text = render(twoInterfaces());
  std::map<std::string, int> help, type;
  std::map<std::string, std::string> type_of;
  for (const auto& line : lines(text)) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      help[line.substr(7, line.find(' ', 7) - 7)]++;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      type[name]++;
      type_of[name] = line.substr(line.rfind(' ') + 1);
    } else {
      std::string name = line.substr(0, line.find_first_of("{ "));
      EXPECT_EQ(type.count(name), 1u) << "sample before its TYPE: " << line;
    }
  }
  const std::map<std::string, std::string> families = {
      {"floodgate_packets_total", "counter"},
      {"floodgate_bytes_total", "counter"},
      {"floodgate_rule_packets_total", "counter"},
      {"floodgate_rule_bytes_total", "counter"},
      {"floodgate_tracked_sources", "gauge"},
      {"floodgate_rule_limit", "gauge"},
      {"floodgate_rule_sources_total", "counter"},
      {"floodgate_rule_untracked_packets_total", "counter"},
      {"floodgate_rule_syn_cookies_total", "counter"},
      {"floodgate_events_total", "counter"},
      {"floodgate_events_dropped_total", "counter"},
      {"floodgate_link_control_over_budget_total", "counter"},
      {"floodgate_merged_packets", "gauge"},
      {"floodgate_bans_active", "gauge"},
      {"floodgate_bans_failed_total", "counter"},
      {"floodgate_interface_up", "gauge"},
      {"floodgate_config_reloads_total", "counter"},
      {"floodgate_http_escalations_total", "counter"},
      {"floodgate_fleet_bans_received_total", "counter"},
      {"floodgate_fleet_bans_published_total", "counter"},
      {"floodgate_config_generation", "gauge"},
      {"floodgate_build_info", "gauge"}};
  EXPECT_EQ(help.size(), families.size());
  for (const auto& [name, kind] : families) {
    EXPECT_EQ(help[name], 1) << name;
    EXPECT_EQ(type[name], 1) << name;
    EXPECT_EQ(type_of[name], kind) << name;
  }
}

TEST(Exposition, NoInterfacesStillGivesTheDaemonSeries) {
  Snapshot s;
  s.version = "0.1.0";
  std::string text = render(s);
  EXPECT_TRUE(has(text, "floodgate_config_generation 0"));
  EXPECT_TRUE(has(text, "# TYPE floodgate_packets_total counter"));
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace floodgate::metrics
