// SPDX-License-Identifier: MIT
// The Grafana dashboard is valid JSON, importable, and queries only the metrics floodgate exports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

const char* const kDashboardPath = FLOODGATE_SOURCE_DIR "/config/grafana/floodgate-dashboard.json";

// The metrics contract of DESIGN.md: each family and the labels it carries.
const std::map<std::string, std::set<std::string>>& contractMetrics() {
  static const std::map<std::string, std::set<std::string>> metrics{
      {"floodgate_packets_total", {"interface", "verdict", "reason"}},
      {"floodgate_bytes_total", {"interface", "verdict", "reason"}},
      {"floodgate_rule_packets_total", {"interface", "rule", "verdict"}},
      {"floodgate_rule_bytes_total", {"interface", "rule", "verdict"}},
      {"floodgate_tracked_sources", {"interface", "family"}},
      {"floodgate_bans_active", {"interface"}},
      {"floodgate_config_reloads_total", {"result"}},
      {"floodgate_config_generation", {}},
      {"floodgate_build_info", {"version"}},
      {"floodgate_rule_sources_total", {"interface", "rule", "outcome"}},
      {"floodgate_rule_untracked_packets_total", {"interface", "rule", "verdict"}},
      {"floodgate_events_total", {"interface", "event"}},
      {"floodgate_events_dropped_total", {"interface", "reason"}},
      {"floodgate_link_control_over_budget_total", {"interface"}},
      {"floodgate_http_escalations_total", {"result"}},
      {"floodgate_fleet_bans_received_total", {"result"}},
      {"floodgate_fleet_bans_published_total", {"result"}},
      {"floodgate_rule_limit", {"interface", "rule", "kind"}},
  };
  return metrics;
}

// Prometheus' own metric that tells whether the controller is scraped.
const std::string kUp = "up";

// Labels every scraped series carries besides its own.
const std::set<std::string> kTargetLabels{"job", "instance"};

// The values a label may take, where the contract fixes them.
const std::map<std::string, std::set<std::string>>& labelValues() {
  static const std::map<std::string, std::set<std::string>> values{
      {"verdict", {"pass", "drop", "monitor"}},
      {"reason",
       {"rate", "deny", "ban", "allow", "malformed", "fragment", "non_ip", "default",
        "link_control"}},
      {"result", {"success", "failure"}},
      {"kind", {"pps", "burst", "bps", "burst_bytes"}},
  };
  return values;
}

struct Matcher {
  std::string label;
  std::string op;
  std::string value;
};

struct Selector {
  std::string metric;
  std::vector<Matcher> matchers;
};

// What a PromQL expression reads: its series selectors, range durations and the labels it
// groups or matches on; errors when the scanner could not make sense of it.
struct Scan {
  std::vector<Selector> selectors;
  std::vector<std::string> ranges;
  std::vector<std::string> groupingLabels;
  std::vector<std::string> errors;
};

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool isIdentChar(char c) { return isIdentStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\n") - begin + 1);
}

// A small PromQL scanner: enough to find every metric a dashboard query reads.
class Scanner {
 public:
  explicit Scanner(const std::string& expr) : s_(expr) {}

  Scan run() {
    bool afterMetric = false;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (c == '"' || c == '\'' || c == '`') {
        readString();
        afterMetric = false;
      } else if (c == '{') {
        std::vector<Matcher> matchers = readMatchers();
        if (afterMetric) {
          scan_.selectors.back().matchers = std::move(matchers);
        } else {
          scan_.selectors.push_back(Selector{"", std::move(matchers)});
        }
        afterMetric = false;
      } else if (c == '[') {
        const auto end = s_.find(']', i_);
        if (end == std::string::npos) return fail("unclosed [");
        scan_.ranges.push_back(trim(s_.substr(i_ + 1, end - i_ - 1)));
        i_ = end + 1;
        afterMetric = false;
      } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
        while (i_ < s_.size() && (isIdentChar(s_[i_]) || s_[i_] == '.')) ++i_;
        afterMetric = false;
      } else if (c == '$') {
        ++i_;
        while (i_ < s_.size() && isIdentChar(s_[i_])) ++i_;
        afterMetric = false;
      } else if (isIdentStart(c)) {
        afterMetric = readIdentifier();
      } else {
        ++i_;
        afterMetric = false;
      }
    }
    return scan_;
  }

 private:
  Scan fail(const std::string& what) {
    scan_.errors.push_back(what + " at offset " + std::to_string(i_));
    return scan_;
  }

  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }

  std::string readIdent() {
    const size_t begin = i_;
    while (i_ < s_.size() && isIdentChar(s_[i_])) ++i_;
    return s_.substr(begin, i_ - begin);
  }

  // Reads a quoted string at i_ and returns its contents.
  std::string readString() {
    const char quote = s_[i_++];
    std::string out;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\' && quote != '`' && i_ + 1 < s_.size()) ++i_;
      out += s_[i_++];
    }
    if (i_ >= s_.size()) {
      scan_.errors.push_back("unclosed string");
    } else {
      ++i_;
    }
    return out;
  }

  std::vector<Matcher> readMatchers() {
    std::vector<Matcher> out;
    ++i_;  // '{'
    while (true) {
      skipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return out;
      }
      if (i_ >= s_.size() || !isIdentStart(s_[i_])) {
        scan_.errors.push_back("bad label matcher at offset " + std::to_string(i_));
        i_ = s_.size();
        return out;
      }
      Matcher m;
      m.label = readIdent();
      skipSpace();
      for (const char* op : {"=~", "!~", "!=", "="}) {
        if (s_.compare(i_, std::string(op).size(), op) == 0) {
          m.op = op;
          i_ += m.op.size();
          break;
        }
      }
      skipSpace();
      if (m.op.empty() || i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'' && s_[i_] != '`')) {
        scan_.errors.push_back("bad label matcher for " + m.label);
        i_ = s_.size();
        return out;
      }
      m.value = readString();
      out.push_back(m);
    }
  }

  // Reads a keyword, function name or metric name; true when it was a metric name.
  bool readIdentifier() {
    static const std::set<std::string> grouping{"by",       "without",    "on",
                                                "ignoring", "group_left", "group_right"};
    static const std::set<std::string> keywords{
        "and",  "or",       "unless", "bool",   "offset", "atan2",      "sum",          "min",
        "max",  "avg",      "group",  "stddev", "stdvar", "count",      "count_values", "bottomk",
        "topk", "quantile", "inf",    "nan",    "limitk", "limit_ratio"};
    const std::string ident = readIdent();
    std::string lower = ident;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    skipSpace();
    const bool parenNext = i_ < s_.size() && s_[i_] == '(';
    if (grouping.count(lower)) {
      if (parenNext) {
        const auto end = s_.find(')', i_);
        if (end == std::string::npos) {
          scan_.errors.push_back("unclosed label list after " + ident);
          i_ = s_.size();
          return false;
        }
        std::stringstream list(s_.substr(i_ + 1, end - i_ - 1));
        for (std::string label; std::getline(list, label, ',');) {
          if (!trim(label).empty()) scan_.groupingLabels.push_back(trim(label));
        }
        i_ = end + 1;
      }
      return false;
    }
    if (keywords.count(lower) || parenNext) return false;  // an operator or a function
    scan_.selectors.push_back(Selector{ident, {}});
    return true;
  }

  const std::string& s_;
  size_t i_ = 0;
  Scan scan_;
};

Scan scanPromQL(const std::string& expr) { return Scanner(expr).run(); }

// Everything wrong with one dashboard query; the metrics it reads are added to `seen`.
std::vector<std::string> checkExpr(const std::string& expr, std::set<std::string>& seen) {
  const Scan scan = scanPromQL(expr);
  std::vector<std::string> problems = scan.errors;
  std::set<std::string> knownLabels = kTargetLabels;
  for (const auto& [metric, labels] : contractMetrics()) {
    knownLabels.insert(labels.begin(), labels.end());
  }
  if (scan.selectors.empty()) problems.push_back("reads no metric");
  for (const Selector& sel : scan.selectors) {
    if (sel.metric.empty()) {
      problems.push_back("a selector without a metric name");
      continue;
    }
    const auto contract = contractMetrics().find(sel.metric);
    if (contract == contractMetrics().end() && sel.metric != kUp) {
      problems.push_back("unknown metric " + sel.metric);
      continue;
    }
    seen.insert(sel.metric);
    std::set<std::string> labels = kTargetLabels;
    if (contract != contractMetrics().end()) {
      labels.insert(contract->second.begin(), contract->second.end());
    }
    bool interfaceFiltered = false;
    for (const Matcher& m : sel.matchers) {
      if (!labels.count(m.label)) {
        problems.push_back(sel.metric + " has no label " + m.label);
        continue;
      }
      if (m.label == "interface" && m.op == "=~" && m.value == "$interface") {
        interfaceFiltered = true;
      }
      const auto allowed = labelValues().find(m.label);
      if (allowed == labelValues().end() || m.value.find('$') != std::string::npos) continue;
      if (m.op != "=" && m.op != "=~") continue;
      std::stringstream alternatives(m.value);
      for (std::string value; std::getline(alternatives, value, '|');) {
        if (!allowed->second.count(value)) {
          problems.push_back(m.label + " has no value \"" + value + "\"");
        }
      }
    }
    if (labels.count("interface") && !interfaceFiltered) {
      problems.push_back(sel.metric + " is not filtered by interface=~\"$interface\"");
    }
  }
  for (const std::string& range : scan.ranges) {
    if (range != "$__rate_interval" && range != "$__range") {
      problems.push_back("range [" + range + "]: use [$__rate_interval]");
    }
  }
  for (const std::string& label : scan.groupingLabels) {
    if (!knownLabels.count(label)) problems.push_back("groups by unknown label " + label);
  }
  return problems;
}

json loadDashboard() {
  std::ifstream in(kDashboardPath);
  if (!in) {
    ADD_FAILURE() << "cannot open " << kDashboardPath;
    return json();
  }
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    ADD_FAILURE() << kDashboardPath << ": " << e.what();
    return json();
  }
}

// Every panel, including those inside rows.
void collectPanels(const json& list, std::vector<json>& out) {
  if (!list.is_array()) return;
  for (const json& panel : list) {
    out.push_back(panel);
    if (panel.contains("panels")) collectPanels(panel["panels"], out);
  }
}

const json* findVariable(const json& dashboard, const std::string& name) {
  if (!dashboard.contains("templating") || !dashboard["templating"].contains("list"))
    return nullptr;
  for (const json& variable : dashboard["templating"]["list"]) {
    if (variable.value("name", "") == name) return &variable;
  }
  return nullptr;
}

bool usesDatasourceVariable(const json& node) {
  return node.contains("datasource") && node["datasource"].is_object() &&
         node["datasource"].value("uid", "") == "${datasource}";
}

TEST(MonitoringDashboard, ScannerFindsWhatAQueryReads) {
  const Scan scan = scanPromQL(
      R"(topk(10, sum by (rule, interface) (rate(floodgate_rule_packets_total{interface=~"$interface",verdict="drop"}[$__rate_interval]))) / on (rule) group_left() up{job="x}"} > bool 2e3)");
  EXPECT_TRUE(scan.errors.empty());
  ASSERT_EQ(scan.selectors.size(), 2u);
  EXPECT_EQ(scan.selectors[0].metric, "floodgate_rule_packets_total");
  ASSERT_EQ(scan.selectors[0].matchers.size(), 2u);
  EXPECT_EQ(scan.selectors[0].matchers[1].label, "verdict");
  EXPECT_EQ(scan.selectors[0].matchers[1].value, "drop");
  EXPECT_EQ(scan.selectors[1].metric, "up");
  EXPECT_EQ(scan.selectors[1].matchers[0].value, "x}");
  EXPECT_EQ(scan.ranges, std::vector<std::string>{"$__rate_interval"});
  EXPECT_EQ(scan.groupingLabels, (std::vector<std::string>{"rule", "interface", "rule"}));
}

TEST(MonitoringDashboard, CheckRejectsBadQueries) {
  std::set<std::string> seen;
  const std::string good =
      R"(sum by (reason) (rate(floodgate_packets_total{interface=~"$interface",verdict="drop"}[$__rate_interval])))";
  EXPECT_TRUE(checkExpr(good, seen).empty());
  // A misspelt metric, a label value outside the contract, a fixed range, a missing
  // interface filter, a label the metric lacks, an unknown grouping label, no metric.
  for (
      const std::string bad : {
          R"(rate(floodgate_packet_total{interface=~"$interface"}[$__rate_interval]))",
          R"(rate(floodgate_packets_total{interface=~"$interface",verdict="dropped"}[$__rate_interval]))",
          R"(rate(floodgate_packets_total{interface=~"$interface",reason=~"rate|flood"}[$__rate_interval]))",
          R"(rate(floodgate_packets_total{interface=~"$interface"}[5m]))",
          R"(sum(floodgate_bans_active))",
          R"(floodgate_config_generation{interface="eth0"})",
          R"(sum by (source) (floodgate_bans_active{interface=~"$interface"}))",
          R"(vector(1))",
          R"({__name__="floodgate_build_info"})",
          R"(rate(floodgate_packets_total{interface=~"$interface"[$__rate_interval]))",
      }) {
    EXPECT_FALSE(checkExpr(bad, seen).empty()) << bad;
  }
}

TEST(MonitoringDashboard, IsAnImportableDashboard) {
  const json dashboard = loadDashboard();
  ASSERT_TRUE(dashboard.is_object());
  EXPECT_GE(dashboard.value("schemaVersion", 0), 36);
  EXPECT_FALSE(dashboard.value("title", "").empty());
  EXPECT_FALSE(dashboard.value("uid", "").empty());

  const json* datasource = findVariable(dashboard, "datasource");
  ASSERT_NE(datasource, nullptr) << "no datasource template variable";
  EXPECT_EQ(datasource->value("type", ""), "datasource");
  EXPECT_EQ(datasource->value("query", ""), "prometheus");

  const json* interface = findVariable(dashboard, "interface");
  ASSERT_NE(interface, nullptr) << "no interface template variable";
  EXPECT_EQ(interface->value("type", ""), "query");
  EXPECT_TRUE(usesDatasourceVariable(*interface));
  ASSERT_TRUE(interface->contains("query"));
  const json& query = (*interface)["query"];
  const std::string queryText =
      query.is_string() ? query.get<std::string>() : query.value("query", "");
  EXPECT_EQ(queryText, "label_values(floodgate_packets_total, interface)");

  std::vector<json> panels;
  collectPanels(dashboard.value("panels", json::array()), panels);
  ASSERT_FALSE(panels.empty());
  std::set<int> ids;
  for (const json& panel : panels) {
    const std::string title = panel.value("title", "");
    SCOPED_TRACE("panel \"" + title + "\"");
    EXPECT_FALSE(title.empty());
    ASSERT_TRUE(panel.contains("id") && panel["id"].is_number_integer());
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "duplicate panel id";
    ASSERT_TRUE(panel.contains("gridPos"));
    for (const char* key : {"x", "y", "w", "h"}) {
      EXPECT_TRUE(panel["gridPos"].contains(key) && panel["gridPos"][key].is_number_integer())
          << key;
    }
    if (panel.value("type", "") == "row") continue;
    EXPECT_TRUE(usesDatasourceVariable(panel)) << "panel datasource is not ${datasource}";
    ASSERT_TRUE(panel.contains("targets") && panel["targets"].is_array());
    EXPECT_FALSE(panel["targets"].empty());
  }
}

TEST(MonitoringDashboard, QueriesUseOnlyContractMetricsAndCoverThemAll) {
  const json dashboard = loadDashboard();
  ASSERT_TRUE(dashboard.is_object());
  std::vector<json> panels;
  collectPanels(dashboard.value("panels", json::array()), panels);

  std::set<std::string> seen;
  std::vector<std::string> exprs;
  for (const json& panel : panels) {
    if (!panel.contains("targets")) continue;
    for (const json& target : panel["targets"]) {
      const std::string expr = target.value("expr", "");
      SCOPED_TRACE("panel \"" + panel.value("title", "") + "\": " + expr);
      EXPECT_FALSE(expr.empty()) << "a target without an expression";
      if (target.contains("datasource")) {
        EXPECT_TRUE(usesDatasourceVariable(target));
      }
      for (const std::string& problem : checkExpr(expr, seen)) ADD_FAILURE() << problem;
      exprs.push_back(expr);
    }
  }
  for (const auto& [metric, labels] : contractMetrics()) {
    EXPECT_TRUE(seen.count(metric)) << "no panel shows " << metric;
  }

  // The panels the kit promises: drops by reason, per rule, top rules, sources by family,
  // reloads by result.
  auto anyQuery = [&](const std::string& metric, const std::string& groupLabel) {
    return std::any_of(exprs.begin(), exprs.end(), [&](const std::string& expr) {
      const Scan scan = scanPromQL(expr);
      const bool readsMetric = std::any_of(scan.selectors.begin(), scan.selectors.end(),
                                           [&](const Selector& s) { return s.metric == metric; });
      return readsMetric &&
             std::count(scan.groupingLabels.begin(), scan.groupingLabels.end(), groupLabel) > 0;
    });
  };
  EXPECT_TRUE(anyQuery("floodgate_packets_total", "verdict")) << "no passed vs dropped";
  EXPECT_TRUE(anyQuery("floodgate_packets_total", "reason")) << "no drops by reason";
  EXPECT_TRUE(anyQuery("floodgate_rule_packets_total", "rule")) << "no drops per rule";
  EXPECT_TRUE(anyQuery("floodgate_tracked_sources", "family")) << "no sources by family";
  EXPECT_TRUE(anyQuery("floodgate_config_reloads_total", "result")) << "no reloads by result";
  EXPECT_TRUE(std::any_of(exprs.begin(), exprs.end(), [](const std::string& expr) {
    return expr.rfind("topk(", 0) == 0 &&
           expr.find("floodgate_rule_packets_total") != std::string::npos;
  })) << "no top rules by drops";
}

}  // namespace
