// SPDX-License-Identifier: MIT
// Source-set compilation: direct bits per prefix, then each prefix inherits its ancestors'.
#include "controller/source_sets.h"

#include <map>
#include <tuple>

namespace floodgate {
namespace {

using PrefixKey = std::tuple<Family, std::array<uint8_t, 16>, uint8_t>;

PrefixKey keyOf(const Cidr& cidr) { return {cidr.family, cidr.addr, cidr.prefix}; }

}  // namespace

std::vector<std::pair<Cidr, uint64_t>> compileSourceSets(const std::vector<RuleSpec>& rules) {
  std::map<PrefixKey, std::pair<Cidr, uint64_t>> direct;
  for (const RuleSpec& rule : rules) {
    for (Cidr cidr : rule.sources) {
      maskAddress(cidr.addr, cidr.prefix);
      auto& entry = direct[keyOf(cidr)];
      entry.first = cidr;
      entry.second |= 1ULL << (rule.id & 63);
    }
  }
  std::vector<std::pair<Cidr, uint64_t>> out;
  out.reserve(direct.size());
  for (const auto& [key, entry] : direct) {
    uint64_t bits = entry.second;
    Cidr ancestor = entry.first;
    // walk up the shorter prefixes of this one: at most 128 map lookups
    for (int prefix = entry.first.prefix - 1; prefix >= 0; --prefix) {
      ancestor.prefix = static_cast<uint8_t>(prefix);
      maskAddress(ancestor.addr, prefix);
      if (auto it = direct.find(keyOf(ancestor)); it != direct.end()) bits |= it->second.second;
    }
    out.emplace_back(entry.first, bits);
  }
  return out;
}

std::array<size_t, 2> sourceSetEntries(const std::vector<std::pair<Cidr, uint64_t>>& sets) {
  std::array<size_t, 2> count{0, 0};
  for (const auto& entry : sets) ++count[static_cast<int>(entry.first.family)];
  return count;
}

}  // namespace floodgate
