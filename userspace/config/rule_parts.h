// SPDX-License-Identifier: MIT
// The parts of one rule that have a parser of their own (internal to rules_section.cpp).
#pragma once

#include <string>

#include "controller/rule_spec.h"
#include "floodgate/yaml/yaml_reader.h"

namespace floodgate::config {

// A rule's `match:` {protocol, dst_ports, tcp_flags, src} into `spec`.
void parseMatch(YamlReader& reader, const YamlEntry& entry, const std::string& base_dir,
                RuleSpec& spec);

}  // namespace floodgate::config
