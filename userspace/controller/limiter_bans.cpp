// SPDX-License-Identifier: MIT
// Bans of a running limiter from the controller's side (the program starts and retires its
// own), and syncing a list to what a config file says.
#include <atomic>
#include <cstring>
#include <set>

#include "controller/limiter.h"

namespace floodgate {
namespace {

template <class Key>
Key banKey(const Cidr& cidr) {
  Key key{};
  key.prefixlen = cidr.prefix;
  std::memcpy(key.addr, cidr.addr.data(), sizeof(key.addr));
  return key;
}

template <class Key>
Cidr cidrOf(const Key& key, Family family) {
  Cidr cidr;
  cidr.family = family;
  cidr.prefix = static_cast<uint8_t>(key.prefixlen);
  std::memcpy(cidr.addr.data(), key.addr, sizeof(key.addr));
  return cidr;
}

}  // namespace

Status Limiter::banAdd(const Cidr& cidr, uint64_t duration_ns) {
  fg_ban ban{};
  if (duration_ns) {
    auto now = nowUnits();
    if (!now) return now.error();
    ban.expires = *now + (duration_ns << FG_TIME_SHIFT);
  }
  ban.prefixlen = cidr.prefix;
  ban.rule_id = FG_BAN_MANUAL;
  Result<bool> inserted = cidr.family == Family::kV4
                              ? bans_v4_.insertNew(banKey<fg_lpm_v4>(cidr), ban)
                              : bans_v6_.insertNew(banKey<fg_lpm_v6>(cidr), ban);
  if (!inserted) return inserted.error();
  if (*inserted) {
    std::atomic_ref<uint32_t>(settings_value_.get()->ban_entries[static_cast<int>(cidr.family)])
        .fetch_add(1);
    return okStatus();
  }
  // already banned: the new time replaces the old one
  return cidr.family == Family::kV4 ? bans_v4_.update(banKey<fg_lpm_v4>(cidr), ban)
                                    : bans_v6_.update(banKey<fg_lpm_v6>(cidr), ban);
}

Result<bool> Limiter::banRemove(const Cidr& cidr) {
  Result<bool> erased = cidr.family == Family::kV4 ? bans_v4_.erase(banKey<fg_lpm_v4>(cidr))
                                                   : bans_v6_.erase(banKey<fg_lpm_v6>(cidr));
  if (erased.ok() && *erased) {
    std::atomic_ref<uint32_t>(settings_value_.get()->ban_entries[static_cast<int>(cidr.family)])
        .fetch_sub(1);
  }
  return erased;
}

Result<std::vector<BanEntry>> Limiter::bans() const {
  auto now = nowUnits();
  if (!now) return now.error();
  auto rules = activeRules();
  std::vector<BanEntry> out;
  auto describe = [&](const Cidr& cidr, const fg_ban& ban) {
    BanEntry entry;
    entry.cidr = cidr;
    entry.forever = ban.expires == 0;
    int64_t left = static_cast<int64_t>(ban.expires - *now);
    entry.expired = !entry.forever && left <= 0;
    if (!entry.forever && left > 0)
      entry.remaining_ns = static_cast<uint64_t>(left) >> FG_TIME_SHIFT;
    entry.by = "manual";
    if (ban.rule_id != FG_BAN_MANUAL) {
      entry.by = "rule " + std::to_string(ban.rule_id);
      if (rules) {
        for (const fg_rule& rule : *rules) {
          if (rule.id == ban.rule_id) entry.by = rule.name;
        }
      }
    }
    out.push_back(entry);
  };
  auto v4 = bans_v4_.keys();
  if (!v4) return v4.error();
  for (const auto& key : *v4) {
    if (auto ban = bans_v4_.find(key)) describe(cidrOf(key, Family::kV4), *ban);
  }
  auto v6 = bans_v6_.keys();
  if (!v6) return v6.error();
  for (const auto& key : *v6) {
    if (auto ban = bans_v6_.find(key)) describe(cidrOf(key, Family::kV6), *ban);
  }
  return out;
}

Status Limiter::syncList(ListKind kind, const std::vector<Cidr>& wanted) {
  auto current = listEntries(kind);
  if (!current) return current.error();
  std::set<std::string> want, have;
  for (const Cidr& cidr : wanted) want.insert(cidr.toString());
  std::vector<Cidr> stale, missing;
  for (const Cidr& cidr : *current) {
    have.insert(cidr.toString());
    if (!want.count(cidr.toString())) stale.push_back(cidr);
  }
  for (const Cidr& cidr : wanted) {
    if (!have.count(cidr.toString())) missing.push_back(cidr);
  }
  // add first: an address in both old and new lists is never unlisted for a moment
  if (auto added = listAdd(kind, missing); !added) return added.error();
  if (auto removed = listRemove(kind, stale); !removed) return removed.error();
  return okStatus();
}

}  // namespace floodgate
