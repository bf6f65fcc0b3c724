// SPDX-License-Identifier: MIT
// Bans of a running limiter from the controller's side (the program starts and retires its
// own), and syncing a list to what a config file says.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>

#include "controller/xdp_limiter.h"
#include "kernel/system.h"

namespace floodgate {
namespace {

// What putBan did: added an entry, replaced one (started by `replaced`: a rule id or an
// FG_BAN_* origin), or kept one running that outlasts the new ban.
struct BanPut {
  enum What { kAdded, kReplaced, kKept } what = kAdded;
  uint32_t replaced = 0;
};

// Puts `ban` at `cidr` of the ban tries, keeping `count` (the program's ban_entries of its
// family) equal to the number of entries whoever adds or deletes.
//
// The program deletes an entry it finds over and counts it out itself. So an entry that
// is over, or about to be (within `margin` ticks), is not replaced in place: the program
// could delete the new ban a moment later, taking it for the old one. It is deleted here
// (counted out by whichever delete succeeds) and the new ban inserted as a new entry;
// `erased_fleet` counts the fleet bans deleted so, whether or not the put then succeeds.
Result<BanPut> putBan(LpmPair<fg_ban>& trie, const Cidr& cidr, const fg_ban& ban, BanUpdate update,
                      uint64_t now, uint64_t margin, uint32_t& count, const std::string& what,
                      uint32_t& erased_fleet) {
  std::atomic_ref<uint32_t> entries(count);
  for (int attempt = 0; attempt < 8; ++attempt) {
    Result<bool> inserted = trie.insertNew(cidr, ban);
    if (!inserted) {
      if (entries.load() >= FG_BAN_MAX_ENTRIES) {
        return Error::failure("the ban table of " + what + " is full (" +
                              std::to_string(FG_BAN_MAX_ENTRIES) +
                              " entries): remove bans, or deny whole prefixes instead");
      }
      return inserted.error();
    }
    if (*inserted) {
      entries.fetch_add(1);
      return BanPut{};
    }
    auto existing = trie.find(cidr);
    if (!existing) continue;  // deleted since: insert again
    if (existing->expires != 0 && now + margin >= existing->expires) {
      Result<bool> erased = trie.erase(cidr);
      if (!erased) return erased.error();
      if (*erased) {
        entries.fetch_sub(1);
        erased_fleet += existing->rule_id == FG_BAN_FLEET;
      }
      continue;
    }
    const bool outlasts =
        existing->expires == 0 || (ban.expires != 0 && existing->expires >= ban.expires);
    if (update == BanUpdate::kExtend && outlasts) return BanPut{BanPut::kKept};
    fg_ban put = ban;
    // A fleet ban extends this host's own ban, and no more: it stays the host's (its start
    // and who started it), so a fleet lift treats it as this host's ban, by its age, and
    // cannot lift one this host started after the lift was signed by extending it first.
    if (ban.rule_id == FG_BAN_FLEET && existing->rule_id != FG_BAN_FLEET) {
      put.rule_id = existing->rule_id;
      put.since = existing->since;
    }
    Result<bool> replaced = trie.replaceExisting(cidr, put);
    if (!replaced) return replaced.error();
    if (*replaced) return BanPut{BanPut::kReplaced, existing->rule_id};
  }
  return Error::failure("a ban on " + what + " kept changing under this command: try again");
}

}  // namespace

std::string banStartedBy(uint32_t rule_id, const std::vector<fg_rule>& rules) {
  if (rule_id == FG_BAN_MANUAL) return "manual";
  if (rule_id == FG_BAN_ESCALATION) return "escalation";
  if (rule_id == FG_BAN_FLEET) return "fleet";
  for (const fg_rule& rule : rules) {
    if (rule.id == rule_id) return rule.name;
  }
  return "rule#" + std::to_string(rule_id);
}

Status XdpLimiter::banAdd(const Cidr& cidr, uint64_t duration_ns, BanUpdate update,
                          BanOrigin origin) {
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
  ban.rule_id = static_cast<uint32_t>(origin);
  const uint64_t second = 1'000'000'000ULL / tickNs();
  const int family = static_cast<int>(cidr.family);
  uint32_t& count = settings_value_.get()->ban_entries[family];
  // fleet bans over (or nearly) that were deleted to make way, counted out whatever follows
  uint32_t erased_fleet = 0;
  Result<BanPut> put =
      putBan(maps_.bans, cidr, ban, update, *now, second, count, interface_, erased_fleet);
  fleet_bans_[family] -= std::min(fleet_bans_[family], erased_fleet);
  if (!put) return put.error();
  // keeps the count of fleet bans: an entry a fleet ban added or took over, or one it held
  // that another ban took over
  const bool was_fleet = put->what == BanPut::kReplaced && put->replaced == FG_BAN_FLEET;
  // a fleet ban that extended this host's own ban left it this host's (putBan)
  const bool is_fleet = origin == BanOrigin::kFleet && (put->what == BanPut::kAdded || was_fleet);
  if (is_fleet && !was_fleet) ++fleet_bans_[family];
  if (was_fleet && !is_fleet && fleet_bans_[family] > 0) --fleet_bans_[family];
  return okStatus();
}

bool XdpLimiter::fleetBanHasRoom(const Cidr& cidr, uint32_t room) {
  if (!fleet_bans_counted_) {
    // unread, the tries fail banAdd too, which counts the ban failed
    auto counted = countFleetBans();
    if (!counted) return true;
    fleet_bans_ = *counted;
    fleet_bans_counted_ = true;
  }
  const int family = static_cast<int>(cidr.family);
  const uint32_t entries =
      std::atomic_ref<uint32_t>(settings_value_.get()->ban_entries[family]).load();
  // nor the room rule bans leave to manual bans and escalations, which the fleet's are not
  if (fleet_bans_[family] < room && entries < FG_BAN_MAX_ENTRIES - FG_BAN_RESERVE) return true;
  // the trie finds the longest prefix holding `cidr`: a wider ban is not this one's entry
  const std::optional<fg_ban> running = maps_.bans.find(cidr);
  return running && running->prefixlen == static_cast<uint32_t>(cidr.prefix);
}

Result<bool> XdpLimiter::banRemove(const Cidr& cidr) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  Result<bool> erased = maps_.bans.erase(cidr);
  if (erased.ok() && *erased) {
    std::atomic_ref<uint32_t>(settings_value_.get()->ban_entries[static_cast<int>(cidr.family)])
        .fetch_sub(1);
  }
  return erased;
}

Result<bool> XdpLimiter::banRemoveStartedBefore(const Cidr& cidr, uint64_t age_ns) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  auto now = currentJiffies();
  if (!now) return now.error();
  auto ban = maps_.bans.find(cidr);
  if (!ban) return false;
  // Over, or within a second of it: the program may delete it and start a new ban (a rule's)
  // in the same entry between this look and the delete below, which would then take the new
  // one. The program ends this one itself.
  const uint64_t second = 1'000'000'000ULL / tickNs();
  if (ban->expires != 0 && *now + second >= ban->expires) return false;
  // A fleet ban came from a stream record read before the lift (the stream's order), so it
  // is older than the lift whatever its start says: the lift's age, from its signer's
  // clock, may be a minute off.
  if (ban->rule_id == FG_BAN_FLEET) {
    Result<bool> removed = banRemove(cidr);
    const int family = static_cast<int>(cidr.family);
    if (removed.ok() && *removed && fleet_bans_[family] > 0) --fleet_bans_[family];
    return removed;
  }
  const uint64_t age_ticks = age_ns / tickNs();
  // started later than `age_ns` ago (the program's own bans may start on a tick ahead)
  if (ban->since > *now || *now - ban->since < age_ticks) return false;
  return banRemove(cidr);
}

namespace {

// Calls visit(cidr, ban) for each entry of the ban tries, IPv4 first.
template <class Visit>
Status eachBan(const LpmPair<fg_ban>& bans, Visit visit) {
  auto cidrs = bans.keys();
  if (!cidrs) return cidrs.error();
  for (const Cidr& cidr : *cidrs) {
    if (auto ban = bans.find(cidr)) visit(cidr, *ban);
  }
  return okStatus();
}

bool banOver(const fg_ban& ban, uint64_t now_jiffies) {
  return ban.expires != 0 && now_jiffies >= ban.expires;
}

}  // namespace

// Every fleet entry there is, over or not: one over holds its entry until the program meets
// its source or the sweep deletes it, and bans short enough would otherwise fill the table
// under a count that stays low.
Result<std::array<uint32_t, 2>> XdpLimiter::countFleetBans() const {
  std::array<uint32_t, 2> counted{};
  auto count = [&](const Cidr& cidr, const fg_ban& ban) {
    if (ban.rule_id == FG_BAN_FLEET) ++counted[static_cast<int>(cidr.family)];
  };
  if (Status s = eachBan(maps_.bans, count); !s) return s.error();
  return counted;
}

Result<std::vector<BanEntry>> XdpLimiter::bans() const {
  auto now = currentJiffies();
  if (!now) return now.error();
  auto active = activeRules();
  const std::vector<fg_rule> rules = active ? *active : std::vector<fg_rule>{};
  std::vector<BanEntry> out;
  auto describe = [&](const Cidr& cidr, const fg_ban& ban) {
    if (banOver(ban, *now)) return;  // over; the program or the sweep deletes it
    BanEntry entry;
    entry.cidr = cidr;
    entry.forever = ban.expires == 0;
    if (!entry.forever) entry.remaining_ns = (ban.expires - *now) * tickNs();
    entry.by = banStartedBy(ban.rule_id, rules);
    out.push_back(entry);
  };
  if (Status s = eachBan(maps_.bans, describe); !s) return s.error();
  return out;
}

Result<size_t> XdpLimiter::sweepExpiredBans() {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  auto jiffies = currentJiffies();
  if (!jiffies) return jiffies.error();
  // only bans over for a minute: one that just ran out may be deleted and started again by
  // the program in between our look and our delete, and the new one must not go with it
  const uint64_t grace = 60 * 1'000'000'000ULL / tickNs();
  const uint64_t a_minute_ago = *jiffies > grace ? *jiffies - grace : 0;
  std::vector<Cidr> over;
  std::array<uint32_t, 2> fleet{};  // counted again on the way (what another process did too)
  auto collect = [&](const Cidr& cidr, const fg_ban& ban) {
    if (ban.rule_id == FG_BAN_FLEET) ++fleet[static_cast<int>(cidr.family)];
    if (banOver(ban, a_minute_ago)) over.push_back(cidr);
  };
  if (Status s = eachBan(maps_.bans, collect); !s) return s.error();
  fleet_bans_ = fleet;
  fleet_bans_counted_ = true;
  size_t removed = 0;
  for (const Cidr& cidr : over) {
    // read again just before deleting: a ban started since the listing is left alone
    auto ban = maps_.bans.find(cidr);
    if (!ban || !banOver(*ban, a_minute_ago)) continue;
    auto erased = banRemove(cidr);  // counted out only if this call deleted it
    if (!erased) return erased.error();
    removed += *erased;
    uint32_t& fleet_count = fleet_bans_[static_cast<int>(cidr.family)];
    if (*erased && ban->rule_id == FG_BAN_FLEET && fleet_count > 0) --fleet_count;
  }
  return removed;
}

Status XdpLimiter::syncList(ListKind kind, const std::vector<Cidr>& wanted) {
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
  // Add first: an address in both old and new lists is never unlisted for a moment (a new
  // prefix inside an old one that goes). Unless the old and new entries of a family together
  // would not fit (reload checked that the new ones alone do): then the stale ones go first.
  auto max_entries = listMaxEntries();
  if (!max_entries) return max_entries.error();
  size_t together[2] = {0, 0};
  for (const Cidr& cidr : *current) ++together[static_cast<int>(cidr.family)];
  for (const Cidr& cidr : missing) ++together[static_cast<int>(cidr.family)];
  const bool stale_first = together[0] > *max_entries || together[1] > *max_entries;
  if (stale_first) {
    if (auto removed = listRemove(kind, stale); !removed) return removed.error();
  }
  if (auto added = listAdd(kind, missing); !added) return added.error();
  if (!stale_first) {
    if (auto removed = listRemove(kind, stale); !removed) return removed.error();
  }
  // the removed prefixes' bits stayed set (harmless, a trie lookup): clear them now
  if (stale.empty()) return okStatus();
  return rebuildListFilter(kind);
}

}  // namespace floodgate
