// SPDX-License-Identifier: MIT
// Bans of a running limiter from the controller's side (the program starts and retires its
// own), and syncing a list to what a config file says.
#include <atomic>
#include <cstring>
#include <set>

#include "controller/limiter.h"
#include "kernel/system.h"

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
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  if (duration_ns > kMaxBanNs) {
    return Error::usage("a ban lasts at most 30d; to keep " + cidr.toString() +
                        " out for longer, put it on the deny list (floodgate deny add)");
  }
  auto now = currentJiffies();
  if (!now) return now.error();
  fg_ban ban{};
  ban.since = *now;
  // in whole ticks, rounded up: the program ends it at the first tick not before its time
  if (duration_ns) ban.expires = *now + (duration_ns + tickNs() - 1) / tickNs();
  ban.prefixlen = cidr.prefix;
  ban.rule_id = FG_BAN_MANUAL;
  auto& count = settings_value_.get()->ban_entries[static_cast<int>(cidr.family)];
  // The program deletes an expired entry when it meets one, and counts it out itself: a
  // replacement must never bring a deleted entry back without counting it in again, or the
  // count reaches 0 with a ban in the table and the program stops looking.
  for (int attempt = 0; attempt < 8; ++attempt) {
    Result<bool> inserted = cidr.family == Family::kV4
                                ? bans_v4_.insertNew(banKey<fg_lpm_v4>(cidr), ban)
                                : bans_v6_.insertNew(banKey<fg_lpm_v6>(cidr), ban);
    if (!inserted) {
      if (std::atomic_ref<uint32_t>(count).load() >= FG_BAN_MAX_ENTRIES) {
        return Error::failure("the ban table of " + interface_ + " is full (" +
                              std::to_string(FG_BAN_MAX_ENTRIES) +
                              " entries): remove bans, or deny whole prefixes instead");
      }
      return inserted.error();
    }
    if (*inserted) {
      std::atomic_ref<uint32_t>(count).fetch_add(1);
      return okStatus();
    }
    // already banned: the new time replaces the old one, if the entry is still there
    Result<bool> replaced = cidr.family == Family::kV4
                                ? bans_v4_.replaceExisting(banKey<fg_lpm_v4>(cidr), ban)
                                : bans_v6_.replaceExisting(banKey<fg_lpm_v6>(cidr), ban);
    if (!replaced) return replaced.error();
    if (*replaced) return okStatus();
  }
  return Error::failure("the ban of " + cidr.toString() +
                        " kept changing under this command: try again");
}

Result<bool> Limiter::banRemove(const Cidr& cidr) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  Result<bool> erased = cidr.family == Family::kV4 ? bans_v4_.erase(banKey<fg_lpm_v4>(cidr))
                                                   : bans_v6_.erase(banKey<fg_lpm_v6>(cidr));
  if (erased.ok() && *erased) {
    std::atomic_ref<uint32_t>(settings_value_.get()->ban_entries[static_cast<int>(cidr.family)])
        .fetch_sub(1);
  }
  return erased;
}

namespace {

// Calls visit(cidr, ban) for each entry of a ban trie.
template <class Key, class Visit>
Status eachBan(const BpfMap<Key, fg_ban>& map, Family family, Visit visit) {
  auto keys = map.keys();
  if (!keys) return keys.error();
  for (const Key& key : *keys) {
    if (auto ban = map.find(key)) visit(cidrOf(key, family), *ban);
  }
  return okStatus();
}

bool banOver(const fg_ban& ban, uint64_t now_jiffies) {
  return ban.expires != 0 && now_jiffies >= ban.expires;
}

}  // namespace

Result<std::vector<BanEntry>> Limiter::bans() const {
  auto now = currentJiffies();
  if (!now) return now.error();
  auto rules = activeRules();
  std::vector<BanEntry> out;
  auto describe = [&](const Cidr& cidr, const fg_ban& ban) {
    if (banOver(ban, *now)) return;  // over; the program or the sweep deletes it
    BanEntry entry;
    entry.cidr = cidr;
    entry.forever = ban.expires == 0;
    if (!entry.forever) entry.remaining_ns = (ban.expires - *now) * tickNs();
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
  if (Status s = eachBan(bans_v4_, Family::kV4, describe); !s) return s.error();
  if (Status s = eachBan(bans_v6_, Family::kV6, describe); !s) return s.error();
  return out;
}

Result<size_t> Limiter::sweepExpiredBans() {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  auto now = currentJiffies();
  if (!now) return now.error();
  std::vector<Cidr> over;
  auto collect = [&](const Cidr& cidr, const fg_ban& ban) {
    if (banOver(ban, *now)) over.push_back(cidr);
  };
  if (Status s = eachBan(bans_v4_, Family::kV4, collect); !s) return s.error();
  if (Status s = eachBan(bans_v6_, Family::kV6, collect); !s) return s.error();
  size_t removed = 0;
  for (const Cidr& cidr : over) {
    // read again just before deleting: a ban started since the listing is left alone
    auto ban = cidr.family == Family::kV4 ? bans_v4_.find(banKey<fg_lpm_v4>(cidr))
                                          : bans_v6_.find(banKey<fg_lpm_v6>(cidr));
    if (!ban || !banOver(*ban, *now)) continue;
    auto erased = banRemove(cidr);  // counted out only if this call deleted it
    if (!erased) return erased.error();
    removed += *erased;
  }
  return removed;
}

Status Limiter::syncList(ListKind kind, const std::vector<Cidr>& wanted) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
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
