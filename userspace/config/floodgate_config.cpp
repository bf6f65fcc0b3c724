// SPDX-License-Identifier: MIT
// The top level of floodgate.yaml: reads the file, owns its keys, hands each section to its
// parser (the `http:` one to the HTTP library), and checks what spans sections.
#include "config/floodgate_config.h"

#include <algorithm>
#include <filesystem>

#include "config/sections.h"
#include "controller/rule_compiler.h"
#include "controller/source_sets.h"
#include "floodgate/common/read_file.h"
#include "floodgate/common/units.h"
#include "floodgate/core/config_parser.h"
#include "floodgate/core/header_text.h"
#include "floodgate/yaml/yaml_mark.h"

namespace floodgate::config {
namespace {

// The rules' match.src sets share one pair of LPM tries of FG_LIST_MAX_ENTRIES each: every
// distinct prefix of any rule's set is an entry.
void checkSourceSetsFit(YamlReader& reader, const YamlEntry& entry,
                        const std::vector<RuleSpec>& rules) {
  const std::array<size_t, 2> count = sourceSetEntries(compileSourceSets(rules));
  for (auto [family, name] : {std::pair{0, "IPv4"}, std::pair{1, "IPv6"}}) {
    if (count[family] > FG_LIST_MAX_ENTRIES) {
      reader.error(entry.key, "the rules' match.src sets hold " + std::to_string(count[family]) +
                                  " distinct " + name + " prefixes, more than the " +
                                  std::to_string(FG_LIST_MAX_ENTRIES) +
                                  " they can: merge them into shorter prefixes");
    }
  }
}

void parseRoot(YamlReader& reader, const YAML::Node& root, const std::string& base_dir,
               FloodgateConfig& config) {
  if (!root.IsDefined() || root.IsNull()) {
    reader.diagnostics().add(reader.file(), 0, 0,
                             "the config is empty (expected a mapping of interfaces, defaults, "
                             "allow, deny, rules, http, fleet)");
    return;
  }
  std::optional<YamlFields> fields = reader.mapping(
      {root, root}, "", {"interfaces", "defaults", "allow", "deny", "rules", "http", "fleet"});
  if (!fields) return;
  // Rules first: an interface's adaptive: names them (diagnostics are sorted by position).
  const size_t errors_before_rules = reader.errorCount();
  // `rules:` with every rule commented out reads as null; `rules: []` says none is meant
  if (const YamlEntry* e = fields->find("rules")) {
    if (e->value.IsNull()) config.empty_sections.push_back("rules");
    config.rules = parseRules(reader, *e, base_dir);
  }
  const bool rules_complete = reader.errorCount() == errors_before_rules;
  if (const YamlEntry* e = fields->find("rules"); e && rules_complete) {
    checkSourceSetsFit(reader, *e, config.rules);
  }
  if (const YamlEntry* e = fields->find("interfaces"))
    config.interfaces = parseInterfaces(reader, *e, config.rules, rules_complete);
  // Defaults first: the list sizes bound allow and deny.
  if (const YamlEntry* e = fields->find("defaults")) config.defaults = parseDefaults(reader, *e);
  for (auto [key, list] : {std::pair{"allow", &config.allow}, std::pair{"deny", &config.deny}}) {
    const YamlEntry* e = fields->find(key);
    if (!e) continue;
    // `deny:` with every entry commented out is an empty list the config still owns.
    // each list is two LPM tries (IPv4, IPv6) of defaults.list_size entries
    const CidrListBound bound{config.defaults.list_max_entries, "defaults.list_size",
                              "raise it (up to " + std::to_string(FG_LARGEST_LIST_ENTRIES) +
                                  ") or merge prefixes into shorter ones"};
    *list =
        e->value.IsNull() ? std::vector<Cidr>() : parseCidrList(reader, *e, key, base_dir, bound);
  }
  if (const YamlEntry* e = fields->find("http")) {
    if (e->value.IsNull()) {
      config.empty_sections.push_back("http");
    } else {
      config.http = http::parseHttpSection(reader, *e);
    }
  }
  if (const YamlEntry* e = fields->find("fleet")) {
    const YAML::Node& fleet = e->value;
    if (fleet.IsNull()) {
      config.empty_sections.push_back("fleet");
    } else if (fleet.IsMap() && fleet["bans"] && fleet["bans"].IsNull()) {
      config.empty_sections.push_back("fleet.bans");
    }
    config.fleet_bans = parseFleet(reader, *e);
  }
}

std::string baseDirOf(const std::string& file_name) {
  return std::filesystem::path(file_name).parent_path().string();
}

}  // namespace

FloodgateConfig parseConfig(const std::string& text, const std::string& file_name,
                            Diagnostics& diagnostics) {
  FloodgateConfig config;
  // Sections report as they go (unknown keys of a mapping before its values); the user
  // reads them in file order.
  Diagnostics found;
  YamlReader reader(file_name, found);
  std::optional<YAML::Node> root;
  try {
    root.emplace(loadOneDocument(text));
  } catch (const YAML::Exception& e) {
    addAt(diagnostics, file_name, e, "YAML syntax error: ");
    return config;
  }
  // The parsers check every node's type before reading it; this is the net under a yaml-cpp
  // throw none of them foresaw, so it still reaches the user as one positioned line.
  try {
    parseRoot(reader, *root, baseDirOf(file_name), config);
  } catch (const YAML::Exception& e) {
    addAt(found, file_name, e);
  } catch (const std::exception& e) {
    // what the process cannot do at all (no random key for the lists' index): one line,
    // after those found before it
    found.add(file_name, 0, 0, std::string("cannot read the config: ") + e.what());
  }
  for (Diagnostic& d : reader.sortedDiagnostics()) diagnostics.add(std::move(d));
  diagnostics.addOmitted(found.omitted());
  return config;
}

namespace {

// An IPv4-mapped prefix (::ffff:a.b.c.d/n) in `name`: no packet carries one as its source.
std::optional<std::string> mappedWarning(const Cidr& cidr, const std::string& name) {
  std::optional<Cidr> v4 = mappedIpv4(cidr);
  if (!v4) return std::nullopt;
  return name + " holds " + cidr.toString() +
         ", an IPv4-mapped IPv6 prefix: no packet carries one as its source, so it "
         "never matches (for IPv4 sources write " +
         v4->toString() + ")";
}

// Whether `cidr` is unicast space wider than kWidestIpv4 / kWidestIpv6 (see there).
bool widerThanANetwork(const Cidr& cidr) {
  if (cidr.family == Family::kV4) return cidr.prefix < kWidestIpv4 && cidr.addr[0] < 224;
  return cidr.prefix < kWidestIpv6 && cidr.prefix >= 3 && (cidr.addr[0] & 0xe0) == 0x20;
}

}  // namespace

std::vector<std::string> cidrWarnings(const std::vector<Cidr>& list, const std::string& name,
                                      const std::string& verb) {
  std::vector<std::string> out;
  // unicast prefixes wider than any one network's (widerThanANetwork), told once
  const Cidr* first_wide = nullptr;
  size_t wide = 0;
  for (const Cidr& cidr : list) {
    if (cidr.prefix == 0) {
      out.push_back(name + " holds " + cidr.toString() + ": it " + verb + " every " +
                    (cidr.family == Family::kV4 ? "IPv4" : "IPv6") + " source");
    } else if (std::optional<std::string> mapped = mappedWarning(cidr, name)) {
      out.push_back(std::move(*mapped));
    } else if (widerThanANetwork(cidr)) {
      if (!first_wide) first_wide = &cidr;
      ++wide;
    }
  }
  if (first_wide) {
    out.push_back(name + " holds " + first_wide->toString() +
                  (wide > 1 ? " (and " + std::to_string(wide - 1) + " more)" : std::string()) +
                  ", wider than any one network's (a /" + std::to_string(kWidestIpv4) +
                  " of IPv4, a /" + std::to_string(kWidestIpv6) + " of IPv6): " +
                  (wide > 1 ? "each " : "it ") + verb + " every source in it; check the length");
  }
  return out;
}

namespace {

void listWarnings(const std::optional<std::vector<Cidr>>& list, const char* name, const char* verb,
                  std::vector<std::string>& out) {
  if (!list) return;
  for (std::string& warning : cidrWarnings(*list, name, verb)) out.push_back(std::move(warning));
}

// Frames that `policy` passes with their L4 header unread (`what`, under `setting`) carry
// no ports or flags, so they meet only the rules that need neither, and only from the
// sources those rules match: with none for every source, a flood of them walks around the
// rules from any address no such rule lists.
void unreadPortsWarnings(const FloodgateConfig& config, FramePolicy policy, const char* setting,
                         const std::string& what, std::vector<std::string>& out) {
  if (config.rules.empty() || policy != FramePolicy::kPass) return;
  auto portless = [](const RuleSpec& rule) {
    return rule.dst_ports.empty() && !rule.tcp_flags_set && !rule.tcp_flags_clear;
  };
  const auto& rules = config.rules;
  if (std::any_of(rules.begin(), rules.end(),
                  [&](const RuleSpec& rule) { return portless(rule) && rule.sources.empty(); })) {
    return;
  }
  const std::string fix =
      "; add a rule without ports (a per-source limit on the protocol) or "
      "set " +
      std::string(setting) + ": drop";
  if (std::none_of(rules.begin(), rules.end(), portless)) {
    out.push_back("every rule names ports or TCP flags, which " + what + " do not carry: with " +
                  setting + " pass they meet no rule and pass unlimited" + fix);
  } else {
    out.push_back("every rule without ports or TCP flags names match.src: " + what +
                  " from other sources meet no rule and, with " + setting +
                  " pass, pass unlimited" + fix + " (a rule without match.src)");
  }
}

// Ban times past fleet.bans.max_ban: such bans are never shared (every host would refuse
// them), and a start reads back the report stream's last ban time but the fleet's last max_ban
// only, so a report signed before a lift older than that is replayed without it, and bans.
void fleetBanTimeWarnings(const FloodgateConfig& config, std::vector<std::string>& out) {
  const config::FleetBansConfig& fleet = config.fleet_bans;
  const std::string max_ban = formatDuration(fleet.max_ban_ns);
  if (config.http && config.http->escalate.enabled &&
      config.http->escalate.ban_ns > fleet.max_ban_ns) {
    const std::string ban = formatDuration(config.http->escalate.ban_ns);
    std::string what;
    if (fleet.share_escalation) {
      what = "its bans are not shared with the fleet, though fleet.bans.share lists escalation";
    }
    if (!config.http->escalate.redis_stream.empty()) {
      what += std::string(what.empty() ? "" : ", and ") +
              "a restarted controller reads back offender reports of the last " + ban +
              " but the fleet's lifts of the last " + max_ban +
              " only, so it bans again an address the fleet lifted before then";
    }
    if (!what.empty()) {
      out.push_back("http.escalate.ban (" + ban + ") is longer than fleet.bans.max_ban (" +
                    max_ban + "): " + what +
                    "; set fleet.bans.max_ban to at least http.escalate.ban");
    }
  }
  if (!fleet.share_rule) return;
  for (const RuleSpec& rule : config.rules) {
    if (rule.action != ExceedAction::kBan || rule.ban_ns <= fleet.max_ban_ns) continue;
    out.push_back("rule " + rule.name + " bans for " + formatDuration(rule.ban_ns) +
                  ", longer than fleet.bans.max_ban (" + max_ban +
                  "): its bans are not shared with the fleet, though fleet.bans.share lists "
                  "rule; set fleet.bans.max_ban to at least its ban, or shorten the ban");
  }
}

// Sections given with nothing in them: a template with every entry commented out reads as
// valid, and what it was to switch on is off without a word. An empty list or mapping
// written out (`rules: []`) is meant, and not warned of.
void emptySectionWarnings(const FloodgateConfig& config, std::vector<std::string>& out) {
  for (const std::string& key : config.empty_sections) {
    if (key == "rules") {
      out.push_back(
          "rules is empty: no rule limits anything on an interface this config is attached to; "
          "add a rule (e.g. - {name: per-source, limit: {pps: 1k}}), or write rules: [] if "
          "none is meant");
      continue;
    }
    const char* what = key == "http" ? "the HTTP limits are off (no policy, no escalation)"
                                     : "fleet bans are off (none is shared or received)";
    out.push_back(key + " is empty: " + what + "; fill it in, or remove the key");
  }
}

// Token-bucket rates that run more than 0.1% lower than written (a unit's time is kept in whole
// 1/65536 ns): a global limit of 10 Tbit/s, say. What runs is what `status` shows.
void coarseRateWarnings(const RuleSpec& rule, std::vector<std::string>& out) {
  if (rule.algorithm != Algorithm::kTokenBucket) return;
  for (auto [limit, where] :
       {std::pair{&rule.limit, ""}, std::pair{&rule.untracked, "untracked "}}) {
    if (auto note = coarseRateNote(limit->pps, false)) {
      out.push_back("rule " + rule.name + ": " + where + "pps " + *note);
    }
    if (auto note = coarseRateNote(limit->bits_per_s, true)) {
      out.push_back("rule " + rule.name + ": " + where + "bps " + *note);
    }
  }
}

}  // namespace

std::vector<std::string> configWarnings(const FloodgateConfig& config) {
  std::vector<std::string> out;
  listWarnings(config.allow, "allow", "lets through, unlimited,", out);
  listWarnings(config.deny, "deny", "drops", out);
  for (const RuleSpec& rule : config.rules) {
    coarseRateWarnings(rule, out);
    for (const Cidr& cidr : rule.sources) {
      if (auto mapped = mappedWarning(cidr, "match.src of rule " + rule.name)) {
        out.push_back(std::move(*mapped));
      }
    }
  }
  unreadPortsWarnings(config, config.defaults.fragments, "defaults.fragments",
                      "non-first fragments", out);
  unreadPortsWarnings(config, config.defaults.unknown_ext, "defaults.unknown_ipv6_ext",
                      "IPv6 packets whose extension headers the parser cannot follow", out);
  if (config.defaults.malformed == FramePolicy::kPass) {
    out.push_back(
        "defaults.malformed pass lets a frame whose source the parser never reached (a third "
        "VLAN tag, a header cut short) through without deny, allow, bans or any rule, and "
        "hides a malformed frame's ports from every port or flag rule; use it only to watch "
        "such frames, then set defaults.malformed: drop");
  }
  // the same secret, whichever file holds it: compared by content
  if (config.fleet_bans.enabled && config.http) {
    const struct {
      const std::string& secret;
      const char* file;
      const char* holders;
    } services[] = {
        {config.http->escalate.secret, "http.escalate.secret_file",
         "every service host that reports offenders"},
        {config.http->publish.secret, "http.publish.secret_file",
         "every service host that follows the published policies"},
    };
    for (const auto& service : services) {
      if (service.secret.empty() || service.secret != config.fleet_bans.secret) continue;
      out.push_back(std::string("fleet.bans.secret_file holds the secret of ") + service.file +
                    ": " + service.holders +
                    " can then sign fleet-wide bans and lifts, past the report thresholds and "
                    "per-reporter limits; give fleet.bans a secret of its own");
      break;
    }
  }
  if (config.fleet_bans.enabled) fleetBanTimeWarnings(config, out);
  emptySectionWarnings(config, out);
  if (config.http) {
    for (const http::IpPrefix& proxy : config.http->trusted_proxies) {
      if (proxy.prefix_len != 0) continue;
      out.push_back("http.trusted_proxies holds " + proxy.toString() +
                    ": every client is then believed about who it is, so any client picks its "
                    "own key and can get another address banned; list only your proxies");
    }
    for (const http::PolicyConfig& policy : config.http->policies) {
      if (policy.key.kind != http::KeyKind::kHeader ||
          !http::equalsIgnoreCase(policy.key.header, "Cookie")) {
        continue;
      }
      out.push_back("http policy " + policy.name +
                    " keys by the Cookie header, a client's whole cookie jar: one cookie more, "
                    "or the same in another order, is another key, so it limits nobody who "
                    "does that; key by the session the service reads (key: user)");
    }
  }
  return out;
}

FloodgateConfig loadConfig(const std::string& path, Diagnostics& diagnostics, std::string* text) {
  Result<std::string> read = readWholeFile(path, kMaxConfigBytes);
  if (!read) {
    diagnostics.add(path, 0, 0, "cannot read the config file: " + read.error().message);
    return {};
  }
  FloodgateConfig config = parseConfig(*read, path, diagnostics);
  if (text != nullptr) *text = std::move(*read);
  return config;
}

Result<FloodgateConfig> loadValidConfig(const std::string& path, std::string* text) {
  Diagnostics diagnostics;
  FloodgateConfig config = loadConfig(path, diagnostics, text);
  if (diagnostics.empty()) return config;
  std::string message = diagnostics.format();
  message.pop_back();  // the last newline
  return Error::failure(std::move(message));
}

Result<AttachOptions> attachOptionsFor(const FloodgateConfig& config,
                                       const std::string& interface) {
  AttachOptions options;
  options.interface = interface;
  if (!config.interfaces.empty()) {
    const InterfaceConfig* found = nullptr;
    for (const InterfaceConfig& entry : config.interfaces) {
      if (entry.name == interface) found = &entry;
    }
    if (!found) {
      std::string listed;  // only here: a daemon asks this for each of thousands
      for (const InterfaceConfig& entry : config.interfaces) {
        listed += (listed.empty() ? "" : ", ") + entry.name;
      }
      return Error::usage("interface '" + interface + "' is not in the config's interfaces (" +
                          listed + "): add it there, or name one of those");
    }
    options.mode = found->mode;
    options.next = found->next;
    options.root_prog_array = found->root_prog_array;
    options.root_slot = found->root_slot;
  }
  options.rules = config.rules;
  // Positional ids suit a fresh attach; a reload must instead keep each rule's id by name.
  for (size_t i = 0; i < options.rules.size(); ++i) options.rules[i].id = static_cast<uint32_t>(i);
  options.monitor = config.defaults.monitor;
  options.table_slots = config.defaults.table_slots;
  options.list_max_entries = config.defaults.list_max_entries;
  options.malformed = config.defaults.malformed;
  options.fragments = config.defaults.fragments;
  options.unknown_ext = config.defaults.unknown_ext;
  options.link_control = config.defaults.link_control;
  options.allow = config.allow;
  options.deny = config.deny;
  return options;
}

}  // namespace floodgate::config
