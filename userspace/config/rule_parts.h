// SPDX-License-Identifier: MIT
// The parts of one rule that have a parser of their own (internal to rules_section.cpp).
#pragma once

#include <string>

#include "config/yaml_reader.h"
#include "controller/rule_spec.h"

namespace floodgate::config {

// A rule's `match:` {protocol, dst_ports, tcp_flags, src} into `spec`.
void parseMatch(YamlReader& reader, const YamlEntry& entry, const std::string& base_dir,
                RuleSpec& spec);

}  // namespace floodgate::config
