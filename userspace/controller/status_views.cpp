// SPDX-License-Identifier: MIT
// Formatting of counters and status, one shape for JSON and one for terminals.
#include "controller/status_views.h"

#include <cstdio>
#include <sstream>

#include "controller/rule_compiler.h"
#include "floodgate/common/units.h"

namespace floodgate {
namespace {

const char* policyName(uint32_t policy) { return policy == FG_POLICY_DROP ? "drop" : "pass"; }

nlohmann::json limitsJson(const fg_rule& rule, const fg_limit* pair) {
  LimitSpec limits = describeLimits(rule, pair);
  nlohmann::json out = nlohmann::json::object();
  if (limits.pps) {
    out["pps"] = limits.pps;
    out["burst"] = limits.burst;
  }
  if (limits.bits_per_s) {
    out["bps"] = limits.bits_per_s;
    out["burst_bytes"] = limits.burst_bytes;
  }
  return out;
}

std::string limitsText(const fg_rule& rule, const fg_limit* pair) {
  LimitSpec limits = describeLimits(rule, pair);
  std::string out;
  if (limits.pps) out += formatCount(limits.pps) + " pps burst " + formatCount(limits.burst);
  if (limits.bits_per_s) {
    if (!out.empty()) out += ", ";
    out += formatBitRate(limits.bits_per_s) + "/s burst " + std::to_string(limits.burst_bytes) +
           " bytes";
  }
  return out;
}

// The table stats of a rule by name (enum fg_table_stat order).
const char* const kTableStatNames[FG_TABLE_STAT_COUNT] = {
    "new_sources",        "capped",           "table_full",       "untracked_passed",
    "untracked_dropped",  "bans_failed",      "syn_cookies_sent", "syn_cookies_verified",
    "syn_cookies_failed", "verified_sources", "returning_sources"};

std::string untrackedText(const fg_rule& rule) {
  if (rule.key_kind != FG_KEY_SOURCE) return "";
  auto capText = [](uint64_t cap) { return cap ? formatCount(cap) + "/s" : "unlimited"; };
  const std::string returning = rule.remember_ticks
                                    ? capText(describeReturningSources(rule)) +
                                          (rule.remember_connected ? " (connected)" : "")
                                    : std::string("off");
  return "; new sources " + capText(describeNewSources(rule)) + ", returning " + returning +
         ", untracked " + (rule.untracked_own ? limitsText(rule, rule.untracked) : "as one source");
}

nlohmann::json programJson(const std::optional<ProgramInfo>& program) {
  if (!program) return nullptr;
  return {{"id", program->id}, {"name", program->name}, {"tag", program->tag}};
}

nlohmann::json progArrayJson(const std::optional<ProgArraySlot>& where) {
  if (!where) return nullptr;
  return {{"map_id", where->map_id},
          {"map_name", where->map_name},
          {"slot", where->slot ? nlohmann::json(*where->slot) : nlohmann::json(nullptr)}};
}

// Where the program runs and what is behind it, for people.
std::string neighboursText(const XdpLimiterStatus& status) {
  std::string out;
  if (status.prog_array) {
    const ProgArraySlot& where = *status.prog_array;
    out += "  in " +
           (where.slot ? "slot " + std::to_string(*where.slot) : std::string("no slot (removed)")) +
           " of prog array " + where.map_name + " (id " + std::to_string(where.map_id) +
           "); the XDP hook is its root program's\n";
  }
  if (!status.has_next_slot) {
    out += "  next: no slot (attached by an older floodgate; --replace adds one)\n";
  } else if (status.next_program) {
    out += "  next: " + describeProgram(*status.next_program) + ", tag " +
           status.next_program->tag + ", gets what floodgate passes\n";
  } else {
    out += "  next: none (what floodgate passes goes to the kernel)\n";
  }
  return out;
}

// The link-control budget: null without bound.
nlohmann::json linkControlJson(const fg_limit& limit) {
  if (!limit.interval) return nullptr;
  LinkControlBudget budget = describeLinkControl(limit);
  return {{"pps", budget.pps}, {"burst", budget.burst}};
}

std::string linkControlText(const fg_limit& limit) {
  if (!limit.interval) return "pass by no rule, without bound";
  LinkControlBudget budget = describeLinkControl(limit);
  return "pass by no rule up to " + std::to_string(budget.pps) + "/s (burst " +
         std::to_string(budget.burst) + "), then meet the rules";
}

}  // namespace

nlohmann::json statsJson(const std::string& interface, const std::vector<CounterRow>& rows,
                         const std::vector<RuleCounters>& rules,
                         const std::optional<fg_counter>& link_control_over) {
  nlohmann::json out;
  out["interface"] = interface;
  out["counters"] = nlohmann::json::array();
  for (const CounterRow& row : rows) {
    out["counters"].push_back({{"verdict", verdictName(row.verdict)},
                               {"reason", reasonName(row.reason)},
                               {"packets", row.packets},
                               {"bytes", row.bytes}});
  }
  out["rules"] = nlohmann::json::array();
  for (const RuleCounters& rule : rules) {
    nlohmann::json entry{{"id", rule.id}, {"name", rule.name}};
    uint64_t matched_packets = 0, matched_bytes = 0;
    for (const CounterRow& row : rule.by_verdict) {
      entry[std::string(verdictName(row.verdict))] = {{"packets", row.packets},
                                                      {"bytes", row.bytes}};
      matched_packets += row.packets;
      matched_bytes += row.bytes;
    }
    entry["matched"] = {{"packets", matched_packets}, {"bytes", matched_bytes}};
    nlohmann::json table = nlohmann::json::object();
    for (int stat = 0; stat < FG_TABLE_STAT_COUNT; ++stat)
      table[kTableStatNames[stat]] = rule.table[stat];
    entry["sources"] = table;
    out["rules"].push_back(entry);
  }
  out["link_control_over_budget"] = link_control_over
                                        ? nlohmann::json{{"packets", link_control_over->packets},
                                                         {"bytes", link_control_over->bytes}}
                                        : nlohmann::json(nullptr);
  return out;
}

std::string statsText(const std::string& interface, const std::vector<CounterRow>& rows,
                      const std::vector<RuleCounters>& rules,
                      const std::optional<fg_counter>& link_control_over) {
  std::ostringstream out;
  out << "interface " << interface << "\n";
  char line[160];
  std::snprintf(line, sizeof(line), "  %-8s %-12s %14s %16s\n", "verdict", "reason", "packets",
                "bytes");
  out << line;
  for (const CounterRow& row : rows) {
    if (row.packets == 0) continue;
    std::snprintf(line, sizeof(line), "  %-8s %-12s %14llu %16llu\n", verdictName(row.verdict),
                  reasonName(row.reason), static_cast<unsigned long long>(row.packets),
                  static_cast<unsigned long long>(row.bytes));
    out << line;
  }
  // NDP and MLD past the link's budget are counted above as the rules decided
  if (!link_control_over) {
    out << "  link_control over its budget: not counted by this limiter's program (attached "
           "by an older floodgate: 'floodgate attach "
        << interface << " --replace' adds the count)\n";
  } else if (link_control_over->packets) {
    std::snprintf(line, sizeof(line),
                  "  link_control over its budget, met the rules: %llu packets, %llu bytes\n",
                  static_cast<unsigned long long>(link_control_over->packets),
                  static_cast<unsigned long long>(link_control_over->bytes));
    out << line;
  }
  if (!rules.empty()) {
    std::snprintf(line, sizeof(line), "  %-20s %14s %14s %14s\n", "rule", "passed", "dropped",
                  "monitored");
    out << line;
    for (const RuleCounters& rule : rules) {
      std::snprintf(line, sizeof(line), "  %-20s %14llu %14llu %14llu\n", rule.name.c_str(),
                    static_cast<unsigned long long>(rule.by_verdict[FG_VERDICT_PASS].packets),
                    static_cast<unsigned long long>(rule.by_verdict[FG_VERDICT_DROP].packets),
                    static_cast<unsigned long long>(rule.by_verdict[FG_VERDICT_MONITOR].packets));
      out << line;
    }
    std::snprintf(line, sizeof(line), "  %-20s %14s %14s %14s %14s %14s\n", "sources of rule",
                  "new", "capped", "table full", "untracked ok", "untracked drop");
    out << line;
    for (const RuleCounters& rule : rules) {
      std::snprintf(line, sizeof(line), "  %-20s %14llu %14llu %14llu %14llu %14llu\n",
                    rule.name.c_str(), static_cast<unsigned long long>(rule.table[0]),
                    static_cast<unsigned long long>(rule.table[1]),
                    static_cast<unsigned long long>(rule.table[2]),
                    static_cast<unsigned long long>(rule.table[3]),
                    static_cast<unsigned long long>(rule.table[4]));
      out << line;
    }
    bool cookies = false;
    for (const RuleCounters& rule : rules) {
      cookies = cookies || rule.table[FG_TABLE_COOKIE_SENT] || rule.table[FG_TABLE_COOKIE_FAILED];
    }
    if (cookies) {
      std::snprintf(line, sizeof(line), "  %-20s %14s %14s %14s %14s\n", "syn cookies of rule",
                    "sent", "verified", "failed", "took a slot");
      out << line;
      for (const RuleCounters& rule : rules) {
        std::snprintf(line, sizeof(line), "  %-20s %14llu %14llu %14llu %14llu\n",
                      rule.name.c_str(),
                      static_cast<unsigned long long>(rule.table[FG_TABLE_COOKIE_SENT]),
                      static_cast<unsigned long long>(rule.table[FG_TABLE_COOKIE_VERIFIED]),
                      static_cast<unsigned long long>(rule.table[FG_TABLE_COOKIE_FAILED]),
                      static_cast<unsigned long long>(rule.table[FG_TABLE_VERIFIED_SLOT]));
        out << line;
      }
    }
  }
  return out.str();
}

nlohmann::json statusJson(const XdpLimiterStatus& status) {
  nlohmann::json out{
      {"interface", status.interface},
      {"program_id", status.program_id},
      {"program_name", status.program_name},
      {"foreign_program", status.foreign_program},
      {"mode", status.mode},
      {"monitor", status.monitor},
      {"table_slots", status.table_slots},
      {"policies",
       {{"malformed", policyName(status.settings.malformed_policy)},
        {"fragments", policyName(status.settings.fragment_policy)},
        {"unknown_ipv6_ext", policyName(status.settings.unknown_ext_policy)}}},
      {"link_control", linkControlJson(status.settings.link_control)},
      {"allow_entries", status.settings.allow_entries[0] + status.settings.allow_entries[1]},
      {"deny_entries", status.settings.deny_entries[0] + status.settings.deny_entries[1]},
      {"tracked_sources", {{"ipv4", status.tracked_v4}, {"ipv6", status.tracked_v6}}},
      {"hook", status.prog_array ? "prog_array" : "xdp"},
      {"prog_array", progArrayJson(status.prog_array)},
      {"next_program", programJson(status.next_program)},
      {"merged_packets",
       status.merged_packets ? nlohmann::json(*status.merged_packets) : nlohmann::json(nullptr)},
  };
  out["rules"] = nlohmann::json::array();
  for (const fg_rule& rule : status.rules) {
    out["rules"].push_back(
        {{"id", rule.id},
         {"name", rule.name},
         {"key", rule.key_kind == FG_KEY_GLOBAL ? "global" : "source"},
         {"ipv4_prefix", rule.ipv4_prefix},
         {"ipv6_prefix", rule.ipv6_prefix},
         {"on_exceed", rule.action == FG_ACTION_MONITOR ? "monitor" : "drop"},
         {"limit", limitsJson(rule, rule.limits)},
         {"new_sources_per_s", describeNewSources(rule)},
         {"syn_cookies", synCookiesName(static_cast<SynCookies>(rule.syn_cookies))},
         {"verified_sources_per_s", describeVerifiedSources(rule)},
         {"remembers_sources", rule.remember_ticks != 0},
         {"remember", rule.remember_ticks == 0  ? "off"
                      : rule.remember_connected ? "connected"
                                                : "seen"},
         {"returning_sources_per_s", describeReturningSources(rule)},
         {"untracked", limitsJson(rule, rule.untracked)}});
  }
  return out;
}

std::string statusText(const XdpLimiterStatus& status) {
  std::ostringstream out;
  out << status.interface << ": program " << status.program_id
      << (status.program_name.empty() ? "" : " (" + status.program_name + ")") << ", "
      << (status.prog_array ? std::string("in a prog array") : status.mode + " mode")
      << (status.monitor ? ", MONITOR ONLY (nothing is dropped)" : "") << "\n";
  if (status.merged_packets) out << "  WARNING: " << *status.merged_packets << "\n";
  if (status.mode == "moved") {
    out << "  NOT RUNNING on it: the interface was renamed " << status.moved_to
        << " since the attach, and its limiter runs there; 'floodgate detach "
        << status
               .interface << "' and attach again to limit the one of this name (bucket state starts over)\n";
  }
  if (status.foreign_program) {
    out << "  NOT RUNNING: the program on its link does not use this limiter's maps (put there "
           "outside floodgate, e.g. by 'bpftool link update'), so nothing is limited; 'floodgate "
           "attach "
        << status.interface << " --replace' puts floodgate's program back, its state kept\n";
  }
  if (status.mode == "severed") {
    out << "  NOT RUNNING: the interface was deleted since the attach, which cut "
           "the limiter off it; 'floodgate attach "
        << status.interface << "' with its config attaches it again, its state kept\n";
  }
  out << neighboursText(status);
  out << "  table " << status.table_slots << " slots, tracking " << status.tracked_v4
      << " IPv4 and " << status.tracked_v6 << " IPv6 sources\n";
  out << "  allow " << status.settings.allow_entries[0] + status.settings.allow_entries[1]
      << " prefixes, deny " << status.settings.deny_entries[0] + status.settings.deny_entries[1]
      << " prefixes; malformed " << policyName(status.settings.malformed_policy) << ", fragments "
      << policyName(status.settings.fragment_policy) << "\n";
  out << "  neighbour discovery and MLD from the link: "
      << linkControlText(status.settings.link_control) << "\n";
  for (const fg_rule& rule : status.rules) {
    out << "  rule " << rule.name << ": " << limitsText(rule, rule.limits) << " per "
        << (rule.key_kind == FG_KEY_GLOBAL
                ? std::string("interface")
                : "source (/" + std::to_string(rule.ipv4_prefix) + " IPv4, /" +
                      std::to_string(rule.ipv6_prefix) + " IPv6)")
        << (rule.action == FG_ACTION_MONITOR ? ", monitor" : "") << untrackedText(rule) << "\n";
  }
  return out.str();
}

}  // namespace floodgate
