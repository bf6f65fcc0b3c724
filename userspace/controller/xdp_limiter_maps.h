// SPDX-License-Identifier: MIT
// The program's maps as the controller opens them: one table of name, key type and value
// type (the types from floodgate_shared.h), and LpmPair for the tries kept per family.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate_shared.h"
#include "kernel/bpf_map.h"

namespace floodgate {

// The trie key of `cidr` (fg_lpm_v4 or fg_lpm_v6, matching its family).
template <class Key>
Key lpmKey(const Cidr& cidr) {
  Key key{};
  key.prefixlen = cidr.prefix;
  std::memcpy(key.addr, cidr.addr.data(), sizeof(key.addr));
  return key;
}

// The prefix a trie key holds.
template <class Key>
Cidr lpmCidr(const Key& key) {
  Cidr cidr;
  cidr.family = sizeof(key.addr) == 4 ? Family::kV4 : Family::kV6;
  cidr.prefix = static_cast<uint8_t>(key.prefixlen);
  std::memcpy(cidr.addr.data(), key.addr, sizeof(key.addr));
  return cidr;
}

// One kind of prefix trie (a list, the bans, a source set) as the program keeps it: an
// IPv4 trie and an IPv6 trie, reached here by Cidr. Not thread-safe per object; the
// kernel makes each single-element operation atomic.
template <class Value>
class LpmPair {
 public:
  LpmPair(std::string v4_name, std::string v6_name)
      : v4_(std::move(v4_name)), v6_(std::move(v6_name)) {}

  BpfMap<fg_lpm_v4, Value>& v4() { return v4_; }
  const BpfMap<fg_lpm_v4, Value>& v4() const { return v4_; }
  BpfMap<fg_lpm_v6, Value>& v6() { return v6_; }

  std::optional<Value> find(const Cidr& cidr) const {
    return onFamily(cidr, [](const auto& map, const auto& key) { return map.find(key); });
  }
  Status update(const Cidr& cidr, const Value& value) {
    return onFamily(cidr, [&](auto& map, const auto& key) { return map.update(key, value); });
  }
  // Inserts only if absent; false if the prefix was already there.
  Result<bool> insertNew(const Cidr& cidr, const Value& value) {
    return onFamily(cidr, [&](auto& map, const auto& key) { return map.insertNew(key, value); });
  }
  // Replaces the value of a prefix that is there; false if it is not.
  Result<bool> replaceExisting(const Cidr& cidr, const Value& value) {
    return onFamily(cidr,
                    [&](auto& map, const auto& key) { return map.replaceExisting(key, value); });
  }
  // Removes `cidr`; false if it was not there.
  Result<bool> erase(const Cidr& cidr) {
    return onFamily(cidr, [](auto& map, const auto& key) { return map.erase(key); });
  }

  // Every prefix, IPv4 first, each family in its trie's order.
  Result<std::vector<Cidr>> keys() const {
    std::vector<Cidr> out;
    if (Status s = appendKeys(v4_, out); !s) return s.error();
    if (Status s = appendKeys(v6_, out); !s) return s.error();
    return out;
  }

  // Every prefix of one family, in its trie's order.
  Result<std::vector<Cidr>> keys(Family family) const {
    std::vector<Cidr> out;
    Status read = family == Family::kV4 ? appendKeys(v4_, out) : appendKeys(v6_, out);
    if (!read) return read.error();
    return out;
  }

  // Removes every prefix of both tries.
  Status clear() {
    auto all = keys();
    if (!all) return all.error();
    for (const Cidr& cidr : *all) (void)erase(cidr);
    return okStatus();
  }

  // Calls visit(map) for the IPv4 trie, then the IPv6 one.
  template <class Visit>
  void forEachMap(Visit&& visit) {
    visit(v4_);
    visit(v6_);
  }

 private:
  template <class Self, class Op>
  static auto onFamilyOf(Self& self, const Cidr& cidr, Op&& op) {
    return cidr.family == Family::kV4 ? op(self.v4_, lpmKey<fg_lpm_v4>(cidr))
                                      : op(self.v6_, lpmKey<fg_lpm_v6>(cidr));
  }
  template <class Op>
  auto onFamily(const Cidr& cidr, Op&& op) {
    return onFamilyOf(*this, cidr, op);
  }
  template <class Op>
  auto onFamily(const Cidr& cidr, Op&& op) const {
    return onFamilyOf(*this, cidr, op);
  }
  template <class Map>
  static Status appendKeys(const Map& map, std::vector<Cidr>& out) {
    auto keys = map.keys();
    if (!keys) return keys.error();
    for (const auto& key : *keys) out.push_back(lpmCidr(key));
    return okStatus();
  }

  BpfMap<fg_lpm_v4, Value> v4_;
  BpfMap<fg_lpm_v6, Value> v6_;
};

// The per-CPU count of link-control frames past the budget (bpf/maps.bpf.h), added after
// limiters were attached without it: not in the table below, its pin is opened at each read
// (XdpLimiter::linkControlOverBudget), so a limiter without it opens, and one that a replace
// gave it shows it at once.
inline const char* const kLinkControlOverMap = "link_ctl_over";

// Every pinned map of a limiter that the controller reads or writes: the table of them,
// each with its name (as in bpf/maps.bpf.h, and of its pin), key type and value type. The
// `events` ring buffer is EventReader's.
struct XdpLimiterMaps {
  using FilterMap = BpfMap<uint32_t, uint64_t>;

  BpfMap<uint32_t, fg_settings> settings{"settings_map"};
  BpfMap<uint32_t, fg_active> active{"active_map"};
  BpfMap<uint32_t, fg_rule> rules{"rules"};
  BpfMap<uint32_t, fg_rule_index> rule_index{"rule_index"};
  BpfMap<uint32_t, fg_slot> buckets{"buckets"};
  BpfMap<uint32_t, fg_rule_state> rule_state{"rule_state"};
  PerCpuArray<fg_counter> counters{"counters"};
  PerCpuArray<fg_counter> rule_counters{"rule_counters"};
  PerCpuArray<uint64_t> table_stats{"table_stats"};
  PerCpuArray<fg_event_stats> event_stats{"event_stats"};
  // By enum fg_list: the IPv4 lists' filters (FG_LIST_FILTER_WORDS words each), the lists.
  FilterMap list_filters[2]{FilterMap("allow_filter_v4"), FilterMap("deny_filter_v4")};
  LpmPair<uint8_t> lists[2]{{"allow_v4", "allow_v6"}, {"deny_v4", "deny_v6"}};
  LpmPair<fg_ban> bans{"bans_v4", "bans_v6"};
  // By rule set: prefix → the ids of the rules whose source set holds it, as bits.
  LpmPair<uint64_t> sources[FG_RULE_SETS]{{"sources_v4_0", "sources_v6_0"},
                                          {"sources_v4_1", "sources_v6_1"}};

  // Opens every map pinned for `interface` (whether or not a link is pinned yet). A map
  // whose key or value size is not this table's (pinned by another build) is refused in one
  // line: which map, the sizes expected and found, and to detach and attach again.
  static Result<XdpLimiterMaps> open(const std::string& interface);

  // Calls visit(map) for every map of the table.
  template <class Visit>
  void forEachMap(Visit&& visit) {
    visit(settings);
    visit(active);
    visit(rules);
    visit(rule_index);
    visit(buckets);
    visit(rule_state);
    visit(counters);
    visit(rule_counters);
    visit(table_stats);
    visit(event_stats);
    for (LpmPair<uint8_t>& list : lists) list.forEachMap(visit);
    for (FilterMap& filter : list_filters) visit(filter);
    bans.forEachMap(visit);
    for (LpmPair<uint64_t>& set : sources) set.forEachMap(visit);
  }
};

}  // namespace floodgate
