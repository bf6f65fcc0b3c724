// SPDX-License-Identifier: MIT
// The section parsers floodgate_config.cpp calls, one per top-level key (internal).
#pragma once

#include <string>
#include <vector>

#include "config/floodgate_config.h"
#include "floodgate/yaml/yaml_reader.h"

namespace floodgate::config {

// `interfaces:` — a list of names or {name, mode, adaptive}. `rules` are the config's valid
// rules, which `adaptive:` names; `rules_complete`: no rule was left out for an error (else
// a name not among them is not reported again).
std::vector<InterfaceConfig> parseInterfaces(YamlReader& reader, const YamlEntry& entry,
                                             const std::vector<RuleSpec>& rules,
                                             bool rules_complete);

// An interface's `adaptive:`, checked against `rules` (see parseInterfaces).
std::optional<AdaptiveConfig> parseAdaptive(YamlReader& reader, const YamlEntry& entry,
                                            const std::vector<RuleSpec>& rules,
                                            bool rules_complete);

// `defaults:`.
DefaultsConfig parseDefaults(YamlReader& reader, const YamlEntry& entry);

// The most distinct prefixes of each family a CIDR list may hold (a prefix listed twice, by two
// feeds say, counts once, as it takes one entry), and the words of the error past it.
struct CidrListBound {
  size_t per_family = 0;
  std::string limit;  // what sets it: "defaults.list_size", "the 262144 a rule's match.src can"
  std::string fix;    // how to get under it
};

// `allow:`, `deny:` and a rule's `match.src`: a list of CIDRs and {file: PATH} entries;
// relative paths are taken from `base_dir`. Each prefix is returned once, where first listed.
// Reading stops at the first entry that takes the
// list past `bound` (one error, and no prefixes returned): a file named again and again
// (through an alias, say) would otherwise hold the whole of memory.
std::vector<Cidr> parseCidrList(YamlReader& reader, const YamlEntry& entry, const std::string& what,
                                const std::string& base_dir, const CidrListBound& bound);

// `rules:`.
std::vector<RuleSpec> parseRules(YamlReader& reader, const YamlEntry& entry,
                                 const std::string& base_dir);

// `fleet:` (its `bans:`).
FleetBansConfig parseFleet(YamlReader& reader, const YamlEntry& entry);

}  // namespace floodgate::config
