// SPDX-License-Identifier: MIT
// compileSourceSets: the rules' `match.src` prefixes as entries of the program's source-set
// tries, each with a bit per rule id whose set contains the prefix.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "controller/rule_spec.h"
#include "floodgate/common/cidr.h"

namespace floodgate {

// An LPM lookup returns only the longest matching entry, so each entry carries the bits of
// every rule with a prefix that contains it, not only of the rules that listed it.
std::vector<std::pair<Cidr, uint64_t>> compileSourceSets(const std::vector<RuleSpec>& rules);

// The entries compiled source sets take in each family's trie ([0] IPv4, [1] IPv6).
std::array<size_t, 2> sourceSetEntries(const std::vector<std::pair<Cidr, uint64_t>>& sets);

}  // namespace floodgate
