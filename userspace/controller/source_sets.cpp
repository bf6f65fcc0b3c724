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
  // In (family, address, length) order a prefix comes before every prefix inside it, and those
  // come next to one another: a stack of the prefixes around the one at hand, each with the
  // bits it has by then, gives every entry its ancestors' bits in one pass (a walk up 128
  // lengths per entry took seconds over the largest sets, and runs at every reload).
  std::vector<std::pair<Cidr, uint64_t>> out;
  out.reserve(direct.size());
  std::vector<size_t> around;  // indices into `out`, outermost first
  auto contains = [](const Cidr& outer, const Cidr& inner) {
    if (outer.family != inner.family || outer.prefix > inner.prefix) return false;
    std::array<uint8_t, 16> addr = inner.addr;
    maskAddress(addr, outer.prefix);
    return addr == outer.addr;
  };
  for (const auto& [key, entry] : direct) {
    while (!around.empty() && !contains(out[around.back()].first, entry.first)) around.pop_back();
    const uint64_t inherited = around.empty() ? 0 : out[around.back()].second;
    out.emplace_back(entry.first, entry.second | inherited);
    around.push_back(out.size() - 1);
  }
  return out;
}

std::array<size_t, 2> sourceSetEntries(const std::vector<std::pair<Cidr, uint64_t>>& sets) {
  std::array<size_t, 2> count{0, 0};
  for (const auto& entry : sets) ++count[static_cast<int>(entry.first.family)];
  return count;
}

}  // namespace floodgate
