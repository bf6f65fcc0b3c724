// SPDX-License-Identifier: MIT
// render: the Prometheus text format written family by family.
#include "metrics/exposition.h"

#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>

#include "controller/event_reader.h"

namespace floodgate::metrics {
namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

using Labels = std::vector<std::pair<const char*, std::string_view>>;

void sample(std::string& out, const char* name, const Labels& labels, const std::string& value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out += ',';
      out += labels[i].first;
      out += "=\"";
      out += escapeLabelValue(labels[i].second);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

std::string number(uint64_t value) { return std::to_string(value); }

std::string number(double value) {
  // Estimates are whole sources; print them without an exponent.
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f", std::round(value));
  return buf;
}

// The interface counters as a full verdict × reason matrix.
struct Matrix {
  uint64_t packets[FG_VERDICT_COUNT][FG_REASON_COUNT]{};
  uint64_t bytes[FG_VERDICT_COUNT][FG_REASON_COUNT]{};
};

Matrix matrixOf(const InterfaceMetrics& iface) {
  Matrix m;
  for (const CounterRow& row : iface.counters) {
    if (row.verdict >= FG_VERDICT_COUNT || row.reason >= FG_REASON_COUNT) continue;
    m.packets[row.verdict][row.reason] += row.packets;
    m.bytes[row.verdict][row.reason] += row.bytes;
  }
  return m;
}

// The length of the well-formed UTF-8 sequence at value[i], or 0 (RFC 3629: no overlong
// form, no surrogate, nothing above U+10FFFF).
size_t utf8Length(std::string_view value, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(value[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > value.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

uint64_t bansFailed(const std::vector<RuleCounters>& rules) {
  uint64_t failed = 0;
  for (const RuleCounters& rule : rules) failed += rule.table[FG_TABLE_BAN_FAILED];
  return failed;
}

std::string escapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    // Prometheus refuses a whole scrape over one label value that is not UTF-8 (an interface
    // name may hold any byte): such a byte is written as U+FFFD, as --json writes it
    const size_t length = utf8Length(value, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(value.substr(i, length));
      i += length;
      continue;
    }
    const char c = value[i++];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render(const Snapshot& snapshot) {
  std::string out;
  std::vector<Matrix> matrices;
  for (const auto& iface : snapshot.interfaces) matrices.push_back(matrixOf(iface));

  for (int bytes = 0; bytes < 2; ++bytes) {
    const char* name = bytes ? "floodgate_bytes_total" : "floodgate_packets_total";
    family(out, name, "counter",
           bytes ? "Bytes seen by the XDP limiter, by verdict and reason."
                 : "Packets seen by the XDP limiter, by verdict and reason.");
    for (size_t i = 0; i < snapshot.interfaces.size(); ++i) {
      for (uint32_t v = 0; v < FG_VERDICT_COUNT; ++v) {
        for (uint32_t r = 0; r < FG_REASON_COUNT; ++r) {
          uint64_t value = bytes ? matrices[i].bytes[v][r] : matrices[i].packets[v][r];
          sample(out, name,
                 {{"interface", snapshot.interfaces[i].interface},
                  {"verdict", verdictName(v)},
                  {"reason", reasonName(r)}},
                 number(value));
        }
      }
    }
  }

  for (int bytes = 0; bytes < 2; ++bytes) {
    const char* name = bytes ? "floodgate_rule_bytes_total" : "floodgate_rule_packets_total";
    family(out, name, "counter",
           bytes ? "Bytes matched by each active rule, by verdict."
                 : "Packets matched by each active rule, by verdict.");
    for (const auto& iface : snapshot.interfaces) {
      for (const RuleCounters& rule : iface.rules) {
        for (uint32_t v = 0; v < FG_VERDICT_COUNT; ++v) {
          const CounterRow& row = rule.by_verdict[v];
          sample(out, name,
                 {{"interface", iface.interface}, {"rule", rule.name}, {"verdict", verdictName(v)}},
                 number(bytes ? row.bytes : row.packets));
        }
      }
    }
  }

  family(out, "floodgate_tracked_sources", "gauge",
         "Sources holding a busy slot of the source table; an estimate scaled up from a "
         "bounded sample of slots.");
  for (const auto& iface : snapshot.interfaces) {
    sample(out, "floodgate_tracked_sources", {{"interface", iface.interface}, {"family", "ipv4"}},
           number(iface.tracked_v4));
    sample(out, "floodgate_tracked_sources", {{"interface", iface.interface}, {"family", "ipv6"}},
           number(iface.tracked_v6));
  }

  family(out, "floodgate_rule_sources_total", "counter",
         "New sources of each source rule, by outcome: new took a slot; capped (the new-source "
         "cap refused it) and table_full (the cap had room, every way of its set was still "
         "limited) were charged to the rule's untracked bucket; verified answered a SYN cookie and "
         "took "
         "a slot under the rule's verified-source cap; returning were remembered from an "
         "earlier slot held within its limits and took a slot from the rule's reserve for them.");
  for (const auto& iface : snapshot.interfaces) {
    for (const RuleCounters& rule : iface.rules) {
      for (auto [stat, outcome] :
           {std::pair{FG_TABLE_NEW_SOURCE, "new"}, std::pair{FG_TABLE_CAPPED, "capped"},
            std::pair{FG_TABLE_FULL, "table_full"}, std::pair{FG_TABLE_VERIFIED_SLOT, "verified"},
            std::pair{FG_TABLE_RETURNING_SLOT, "returning"}}) {
        sample(out, "floodgate_rule_sources_total",
               {{"interface", iface.interface}, {"rule", rule.name}, {"outcome", outcome}},
               number(rule.table[stat]));
      }
    }
  }

  family(out, "floodgate_rule_untracked_packets_total", "counter",
         "Packets of sources without a slot, charged to each rule's shared untracked bucket.");
  for (const auto& iface : snapshot.interfaces) {
    for (const RuleCounters& rule : iface.rules) {
      for (auto [stat, verdict] : {std::pair{FG_TABLE_UNTRACKED_PASS, "pass"},
                                   std::pair{FG_TABLE_UNTRACKED_DROP, "drop"}}) {
        sample(out, "floodgate_rule_untracked_packets_total",
               {{"interface", iface.interface}, {"rule", rule.name}, {"verdict", verdict}},
               number(rule.table[stat]));
      }
    }
  }

  family(out, "floodgate_rule_limit", "gauge",
         "The limits each active rule runs with now, by kind (pps, burst, bps, burst_bytes): "
         "the configured ones, or where floodgate set or adaptive: moved them.");
  for (const auto& iface : snapshot.interfaces) {
    for (const RuleLimit& rule : iface.limits) {
      const LimitSpec& l = rule.limit;
      for (auto [kind, value, shown] :
           {std::tuple{"pps", l.pps, l.pps != 0}, std::tuple{"burst", l.burst, l.burst != 0},
            std::tuple{"bps", l.bits_per_s, l.bits_per_s != 0},
            std::tuple{"burst_bytes", l.burst_bytes, l.burst_bytes != 0}}) {
        if (!shown) continue;
        sample(out, "floodgate_rule_limit",
               {{"interface", iface.interface}, {"rule", rule.rule}, {"kind", kind}},
               number(value));
      }
    }
  }

  family(out, "floodgate_rule_syn_cookies_total", "counter",
         "SYN cookies of each rule with syn_cookies: sent answered a SYN at the NIC; verified "
         "and failed are the ACKs to a listener that returned a valid or a bad cookie.");
  for (const auto& iface : snapshot.interfaces) {
    for (const RuleCounters& rule : iface.rules) {
      if (!rule.syn_cookies) continue;  // its counts stay 0: a series of zeros per rule
      for (auto [stat, result] : {std::pair{FG_TABLE_COOKIE_SENT, "sent"},
                                  std::pair{FG_TABLE_COOKIE_VERIFIED, "verified"},
                                  std::pair{FG_TABLE_COOKIE_FAILED, "failed"}}) {
        sample(out, "floodgate_rule_syn_cookies_total",
               {{"interface", iface.interface}, {"rule", rule.name}, {"result", result}},
               number(rule.table[stat]));
      }
    }
  }

  family(out, "floodgate_events_total", "counter",
         "State changes the program reported and the daemon read, by event; adaptive_tighten "
         "and adaptive_relax count the rule limits the daemon itself moved (adaptive:).");
  for (const auto& iface : snapshot.interfaces) {
    for (uint32_t type = 0; type < FG_EVENT_TYPES; ++type) {
      sample(out, "floodgate_events_total",
             {{"interface", iface.interface}, {"event", eventTypeName(type)}},
             number(iface.events[type]));
    }
    sample(out, "floodgate_events_total",
           {{"interface", iface.interface}, {"event", "adaptive_tighten"}},
           number(iface.adaptive_tightened));
    sample(out, "floodgate_events_total",
           {{"interface", iface.interface}, {"event", "adaptive_relax"}},
           number(iface.adaptive_relaxed));
  }

  family(out, "floodgate_events_dropped_total", "counter",
         "State changes the program did not report: over its per-CPU budget, or the ring "
         "buffer was full.");
  for (const auto& iface : snapshot.interfaces) {
    sample(out, "floodgate_events_dropped_total",
           {{"interface", iface.interface}, {"reason", "budget"}},
           number(iface.event_stats.suppressed));
    sample(out, "floodgate_events_dropped_total",
           {{"interface", iface.interface}, {"reason", "ring_full"}},
           number(iface.event_stats.lost));
  }

  family(out, "floodgate_link_control_over_budget_total", "counter",
         "IPv6 Neighbour Discovery and MLD frames past the interface's link-control budget "
         "(defaults.link_control), which then met the rules; their verdicts are counted in "
         "floodgate_packets_total.");
  for (const auto& iface : snapshot.interfaces) {
    if (!iface.link_control_over) continue;  // a program that does not count them
    sample(out, "floodgate_link_control_over_budget_total", {{"interface", iface.interface}},
           number(*iface.link_control_over));
  }

  family(out, "floodgate_merged_packets", "gauge",
         "1 while the interface runs XDP in generic mode and a device before the program "
         "merges a flow's segments (or what merges cannot be read): a merged packet counts "
         "once against pps limits. Read every 10 s; `floodgate status` names the devices and "
         "the commands that turn the merging off.");
  for (const auto& iface : snapshot.interfaces) {
    sample(out, "floodgate_merged_packets", {{"interface", iface.interface}},
           iface.merged_packets ? "1" : "0");
  }

  family(out, "floodgate_bans_active", "gauge",
         "Banned prefixes (IPv4 and IPv6), expired ones not yet removed included.");
  for (const auto& iface : snapshot.interfaces) {
    sample(out, "floodgate_bans_active", {{"interface", iface.interface}},
           number(iface.bans_active));
  }

  family(out, "floodgate_bans_failed_total", "counter",
         "Bans a rule would have started but did not: rule bans had filled the ban table up "
         "to the room kept for manual bans and HTTP escalations.");
  for (const auto& iface : snapshot.interfaces) {
    sample(out, "floodgate_bans_failed_total", {{"interface", iface.interface}},
           number(iface.bans_failed ? *iface.bans_failed : bansFailed(iface.rules)));
  }

  family(out, "floodgate_interface_up", "gauge",
         "1 while a configured interface exists and has its limiter attached; 0 while it does "
         "not exist (floodgate run attaches it when it appears) or was detached.");
  for (const InterfaceUp& iface : snapshot.configured) {
    sample(out, "floodgate_interface_up", {{"interface", iface.interface}}, iface.up ? "1" : "0");
  }

  family(out, "floodgate_config_reloads_total", "counter",
         "Config reloads by the daemon, by result.");
  sample(out, "floodgate_config_reloads_total", {{"result", "success"}},
         number(snapshot.reloads_success));
  sample(out, "floodgate_config_reloads_total", {{"result", "failure"}},
         number(snapshot.reloads_failure));

  family(out, "floodgate_http_escalations_total", "counter",
         "Offender reports from HTTP services (http.escalate), by result: banned in XDP, "
         "allowlisted (never banned), repeat (already banned), invalid (dropped), "
         "unauthorised (a stream entry not signed with the fleet's secret, too old or a copy; "
         "dropped), expired (read from the stream's past after its ban was over).");
  for (int result = 0; result < kEscalationResults; ++result) {
    sample(out, "floodgate_http_escalations_total", {{"result", kEscalationResultNames[result]}},
           number(snapshot.escalations[result]));
  }

  family(out, "floodgate_fleet_bans_received_total", "counter",
         "Ban and lift records read from the fleet's Redis stream (fleet.bans), by result: "
         "applied on every held interface, lifted (a lift record: the bans of its prefix "
         "removed everywhere), expired (over before it was read), superseded (replayed at a "
         "start, made needless by a later record of the same prefix), failed (no interface "
         "took it), no_room (the ban tables hold fleet.bans.max_entries fleet bans), "
         "and refused: forged (bad signature), replayed (read before), stale (signed too long "
         "ago or ahead of Redis's clock), too_long (ends beyond fleet.bans.max_ban), "
         "malformed, too_wide, and addresses never banned (loopback, unspecified, link_local, "
         "multicast, own_address, trusted_proxy, allowlisted).");
  for (int result = 0; result < kFleetBanResults; ++result) {
    sample(out, "floodgate_fleet_bans_received_total", {{"result", kFleetBanResultNames[result]}},
           number(snapshot.fleet_bans_received[result]));
  }
  family(out, "floodgate_fleet_bans_published_total", "counter",
         "Bans of this host published to the fleet's Redis stream (fleet.bans.share), by "
         "result: sent, failed (Redis did not take them after a second try), dropped (the send "
         "queue was full).");
  const FleetBansPublished& published = snapshot.fleet_bans_published;
  for (auto [name, value] :
       {std::pair{"sent", published.sent}, std::pair{"failed", published.failed},
        std::pair{"dropped", published.dropped}}) {
    sample(out, "floodgate_fleet_bans_published_total", {{"result", name}}, number(value));
  }

  family(out, "floodgate_config_generation", "gauge",
         "Configs applied since the daemon started (1 is the first).");
  sample(out, "floodgate_config_generation", {}, number(snapshot.config_generation));

  family(out, "floodgate_build_info", "gauge", "Always 1; the version of floodgate in a label.");
  sample(out, "floodgate_build_info", {{"version", snapshot.version}}, "1");
  return out;
}

}  // namespace floodgate::metrics
