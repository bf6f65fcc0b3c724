// SPDX-License-Identifier: MIT
// The learn report as text, JSON, a YAML fragment and a diff of limits.
#include "learn/learn_output.h"

#include <cstdio>
#include <sstream>

#include "floodgate/common/units.h"

namespace floodgate::learn {
namespace {

std::string limitFlow(const LimitSpec& limit) {
  std::ostringstream out;
  out << "{";
  const char* sep = "";
  if (limit.pps) {
    out << "pps: " << limit.pps;
    sep = ", ";
  }
  if (limit.burst) {
    out << sep << "burst: " << limit.burst;
    sep = ", ";
  }
  if (limit.bits_per_s) {
    out << sep << "bps: " << limit.bits_per_s;
    sep = ", ";
  }
  if (limit.burst_bytes) out << sep << "burst_bytes: " << limit.burst_bytes;
  out << "}";
  return out.str();
}

bool chosenIsShown(uint64_t milli) { return milli == 50000 || milli == 99000 || milli == 99900; }

std::string spreadRow(const char* label, const Spread& s, bool extra) {
  char line[200];
  if (extra) {
    std::snprintf(line, sizeof(line), "  %-10s %12llu %12llu %12llu %12llu %12llu\n", label,
                  static_cast<unsigned long long>(s.p50), static_cast<unsigned long long>(s.p99),
                  static_cast<unsigned long long>(s.p999),
                  static_cast<unsigned long long>(s.chosen),
                  static_cast<unsigned long long>(s.max));
  } else {
    std::snprintf(line, sizeof(line), "  %-10s %12llu %12llu %12llu %12llu\n", label,
                  static_cast<unsigned long long>(s.p50), static_cast<unsigned long long>(s.p99),
                  static_cast<unsigned long long>(s.p999), static_cast<unsigned long long>(s.max));
  }
  return line;
}

nlohmann::json spreadJson(const Spread& s) {
  return {{"p50", s.p50}, {"p99", s.p99}, {"p99_9", s.p999}, {"chosen", s.chosen}, {"max", s.max}};
}

nlohmann::json limitJson(const LimitSpec& limit) {
  return {{"pps", limit.pps},
          {"burst", limit.burst},
          {"bps", limit.bits_per_s},
          {"burst_bytes", limit.burst_bytes}};
}

double share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// The 1-based line of `name: RULE` in `text` under `rules:`, 0 when not found.
int ruleLine(const std::string& text, const std::string& rule) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool in_rules = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.rfind("rules:", 0) == 0) in_rules = true;
    if (!in_rules) continue;
    const size_t at = line.find("name:");
    if (at == std::string::npos) continue;
    std::string value = line.substr(at + 5);
    const size_t first = value.find_first_not_of(" \t\"'");
    if (first == std::string::npos) continue;
    value = value.substr(first);
    const size_t last = value.find_first_of(" \t\"',}#");
    if (value.substr(0, last) == rule) return number;
  }
  return 0;
}

}  // namespace

std::string formatMilli(uint64_t milli) {
  std::string out = std::to_string(milli / 1000);
  uint64_t rest = milli % 1000;
  if (rest == 0) return out;
  char digits[8];
  std::snprintf(digits, sizeof(digits), "%03llu", static_cast<unsigned long long>(rest));
  std::string fraction = digits;
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  return out + "." + fraction;
}

std::string reportText(const std::string& interface, const LearnReport& report) {
  std::ostringstream out;
  const std::string at = "p" + formatMilli(report.percentile_milli);
  out << "floodgate learn " << interface << ": " << formatDuration(report.duration_ns) << ", "
      << report.samples << " samples every " << formatDuration(report.sample_ns)
      << "; proposals at " << at << " x " << formatMilli(report.margin_milli) << "\n";
  if (report.sources_beyond_cap > 0) {
    out << "at the cap of " << report.max_sources << " sources: " << report.sources_beyond_cap
        << " sightings of further sources were not followed (--max-sources)\n";
  }
  const bool extra = !chosenIsShown(report.percentile_milli);
  for (const RuleLearned& rule : report.rules) {
    out << "\nrule " << rule.rule.name << ": " << rule.sources << " sources, "
        << rule.source_windows << " source-seconds with traffic\n";
    if (rule.source_windows > 0) {
      char head[200];
      if (extra) {
        std::snprintf(head, sizeof(head), "  %-10s %12s %12s %12s %12s %12s\n", "", "p50", "p99",
                      "p99.9", at.c_str(), "max");
      } else {
        std::snprintf(head, sizeof(head), "  %-10s %12s %12s %12s %12s\n", "", "p50", "p99",
                      "p99.9", "max");
      }
      out << head << spreadRow("packets/s", rule.pps, extra) << spreadRow("bits/s", rule.bps, extra)
          << spreadRow("burst", rule.burst, extra);
      out << "  (bits/s priced at the rule's mean frame size; burst: most packets in "
          << formatDuration(report.sample_ns) << ")\n";
    }
    out << "  packets: " << rule.rule_packets << " counted by the rule, " << rule.tracked_packets
        << " per source, " << rule.untracked_packets << " untracked (no slot)\n";
    out << "  now:      limit " << limitFlow(rule.rule.current) << "\n";
    if (!rule.proposal) {
      out << "  no proposal: " << rule.note << "\n";
      continue;
    }
    out << "  proposed: limit " << limitFlow(*rule.proposal) << "  (" << at << " x "
        << formatMilli(report.margin_milli) << ")\n";
    if (!rule.not_replayed.empty()) {
      // not "0 dropped": a share never computed must not read as a safe one
      out << "  would have dropped: not evaluated, " << rule.not_replayed << "\n";
      continue;
    }
    char line[200];
    std::snprintf(line, sizeof(line),
                  "  would have dropped %llu of %llu packets (%.2f%%), %llu sources replayed\n",
                  static_cast<unsigned long long>(rule.replay_dropped),
                  static_cast<unsigned long long>(rule.replayed_packets),
                  100.0 * share(rule.replay_dropped, rule.replayed_packets),
                  static_cast<unsigned long long>(rule.replayed_sources));
    out << line;
  }
  return out.str();
}

nlohmann::json reportJson(const std::string& interface, const LearnReport& report) {
  nlohmann::json out = {{"interface", interface},
                        {"duration_s", static_cast<double>(report.duration_ns) / 1e9},
                        {"sample_interval_s", static_cast<double>(report.sample_ns) / 1e9},
                        {"samples", report.samples},
                        {"percentile", static_cast<double>(report.percentile_milli) / 1000},
                        {"margin", static_cast<double>(report.margin_milli) / 1000},
                        {"max_sources", report.max_sources},
                        {"sources_beyond_cap", report.sources_beyond_cap}};
  out["rules"] = nlohmann::json::array();
  for (const RuleLearned& rule : report.rules) {
    nlohmann::json r = {{"name", rule.rule.name},
                        {"id", rule.rule.id},
                        {"per_source", rule.rule.per_source},
                        {"sources", rule.sources},
                        {"source_windows", rule.source_windows},
                        {"pps", spreadJson(rule.pps)},
                        {"bps", spreadJson(rule.bps)},
                        {"burst", spreadJson(rule.burst)},
                        {"packets",
                         {{"rule", rule.rule_packets},
                          {"per_source", rule.tracked_packets},
                          {"untracked", rule.untracked_packets}}},
                        {"current", limitJson(rule.rule.current)},
                        {"proposal", nullptr},
                        {"replay", nullptr},
                        {"note", rule.note}};
    if (rule.proposal) {
      r["proposal"] = limitJson(*rule.proposal);
      r["replay"] = {{"sources", rule.replayed_sources},
                     {"packets", rule.replayed_packets},
                     {"dropped", rule.replay_dropped},
                     {"dropped_share", share(rule.replay_dropped, rule.replayed_packets)},
                     {"not_evaluated", nullptr}};
      if (!rule.not_replayed.empty()) {
        r["replay"]["dropped"] = nullptr;
        r["replay"]["dropped_share"] = nullptr;
        r["replay"]["not_evaluated"] = rule.not_replayed;
      }
    }
    out["rules"].push_back(r);
  }
  return out;
}

std::string proposalYaml(const std::string& interface, const LearnReport& report) {
  std::ostringstream out;
  out << "# floodgate learn " << interface << ": " << formatDuration(report.duration_ns)
      << " of per-source rates; each limit is p" << formatMilli(report.percentile_milli) << " x "
      << formatMilli(report.margin_milli) << " of what the rule's sources sent\n";
  out << "rules:\n";
  bool any = false;
  for (const RuleLearned& rule : report.rules) {
    if (!rule.proposal) continue;
    out << "  - name: " << rule.rule.name << "\n    limit: " << limitFlow(*rule.proposal) << "\n";
    any = true;
  }
  if (!any) out << "  []  # no rule saw per-source traffic\n";
  return out.str();
}

std::string proposalDiff(const ConfigRules& config, const LearnReport& report) {
  std::ostringstream out;
  out << "--- " << config.path << "\n+++ " << config.path << " (floodgate learn)\n";
  for (const RuleLearned& rule : report.rules) {
    if (!rule.proposal) continue;
    const RuleSpec* spec = nullptr;
    for (const RuleSpec& candidate : config.rules) {
      if (candidate.name == rule.rule.name) spec = &candidate;
    }
    if (!spec) {
      out << "# rule " << rule.rule.name << " is running but not in " << config.path << "\n";
      continue;
    }
    LimitSpec now = spec->limit;
    LimitSpec proposed = *rule.proposal;
    // the file's own bps limit stays what the file says
    proposed.bits_per_s = now.bits_per_s;
    proposed.burst_bytes = now.burst_bytes;
    if (spec->algorithm != Algorithm::kTokenBucket) {
      // the parser gives a window rule the default bursts it does not use, and refuses them
      // written: the line to paste carries none
      now.burst = now.burst_bytes = 0;
      proposed.burst = proposed.burst_bytes = 0;
    }
    if (proposed.pps == now.pps && proposed.burst == now.burst) continue;
    const int line = ruleLine(config.text, spec->name);
    out << "@@ rule " << spec->name;
    if (line > 0) out << " (line " << line << ")";
    out << " @@\n-    limit: " << limitFlow(now) << "\n+    limit: " << limitFlow(proposed) << "\n";
  }
  return out.str();
}

}  // namespace floodgate::learn
