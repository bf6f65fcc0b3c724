// SPDX-License-Identifier: MIT
// Bans keep their time: they end when they should on the program's 64-bit jiffies, never
// early and never again after a long silence, and the table keeps room for manual bans.
#include <gtest/gtest.h>

#include <initializer_list>
#include <map>

#include "bpf/xdp_fixture.h"
#include "kernel/bpf_map.h"
#include "kernel/pins.h"
#include "kernel/system.h"

namespace floodgate::test {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ULL;
constexpr uint64_t kDay = 86400 * kSecond;

class BansTest : public XdpProgramTest {
 protected:
  // The IPv4 ban trie as the program sees it, to write entries of any age. (A lookup in a
  // trie finds the longest prefix that holds the key, not only the key itself.)
  BpfMap<fg_lpm_v4, fg_ban> banTrie() {
    auto map = BpfMap<fg_lpm_v4, fg_ban>::openPinned(mapPinPath(pin_name_, "bans_v4"), "bans_v4");
    EXPECT_TRUE(map.ok()) << map.error().message;
    return std::move(*map);
  }

  static fg_lpm_v4 hostKey(uint8_t last_octet) {
    fg_lpm_v4 key{};
    key.prefixlen = 32;
    key.addr[0] = 192;
    key.addr[1] = 0;
    key.addr[2] = 2;
    key.addr[3] = last_octet;
    return key;
  }

  uint64_t jiffies() {
    auto now = currentJiffies();
    EXPECT_TRUE(now.ok());
    return now.ok() ? *now : 0;
  }

  // Makes the bans of 192.0.2.0/`prefixlens` that hold 192.0.2.`last_octet` over a tick ago.
  void endBansHolding(uint8_t last_octet, std::initializer_list<uint32_t> prefixlens) {
    auto trie = banTrie();
    for (uint32_t prefixlen : prefixlens) {
      fg_lpm_v4 key = hostKey(last_octet);
      key.prefixlen = prefixlen;
      auto entry = trie.find(key);
      ASSERT_TRUE(entry.has_value()) << prefixlen;
      ASSERT_EQ(entry->prefixlen, prefixlen);
      entry->expires = jiffies() - 1;
      ASSERT_TRUE(trie.update(key, *entry).ok());
    }
  }

  // As if rule bans had filled the IPv4 ban table up to the room kept for manual bans.
  void fillBansUpToTheReserve() {
    auto settings = limiter().settings();
    ASSERT_TRUE(settings.ok());
    settings->ban_entries[0] = FG_BAN_MAX_ENTRIES - FG_BAN_RESERVE;
    auto settings_map = BpfMap<uint32_t, fg_settings>::openPinned(
        mapPinPath(pin_name_, "settings_map"), "settings_map");
    ASSERT_TRUE(settings_map.ok()) << settings_map.error().message;
    ASSERT_TRUE(settings_map->update(0, *settings).ok());
  }

  uint32_t banCount() {
    auto settings = limiter().settings();
    EXPECT_TRUE(settings.ok());
    return settings.ok() ? settings->ban_entries[0] : 0;
  }
};

TEST_F(BansTest, ALongBanIsInForceFromTheMomentItIsWritten) {
  load({sourceRule(1000, 1000)});
  // two days: past the 39 hours after which a wrapping comparison took it as over
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.2"), 2 * kDay).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.3"), 30 * kDay).ok());
  EXPECT_EQ(run(udpFrom("192.0.2.2")), XDP_DROP);
  EXPECT_EQ(run(udpFrom("192.0.2.3")), XDP_DROP);
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  ASSERT_EQ(bans->size(), 2u);
  for (const BanEntry& ban : *bans) EXPECT_GT(ban.remaining_ns, 2 * kDay - 60 * kSecond);
}

TEST_F(BansTest, ABanLongerThanThirtyDaysIsRefused) {
  load({sourceRule(1000, 1000)});
  Status refused = limiter().banAdd(*parseCidr("192.0.2.2"), 30 * kDay + 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("deny list"), std::string::npos);
  EXPECT_EQ(banCount(), 0u);
}

TEST_F(BansTest, AnExpiredBanNeverComesBackHoweverLongItsSourceWasSilent) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.9"), 600 * kSecond).ok());  // counts it in
  auto trie = banTrie();
  // as if that 10-minute ban was written 40 hours ago, ten 3-day spans ago, and 100 days ago
  const uint32_t hz = *kernelHz();
  for (uint64_t ago_s : {40ULL * 3600, 10ULL * 3 * 86400, 100ULL * 86400}) {
    const uint64_t now = jiffies();
    fg_ban old{};
    // jiffies start near 2^32 - 300 HZ: on a machine up for less than the age at a high
    // HZ, the oldest ban possible
    old.since = now > ago_s * hz ? now - ago_s * hz : 1;
    old.expires = old.since + 600ULL * hz;
    old.prefixlen = 32;
    old.rule_id = FG_BAN_MANUAL;
    ASSERT_TRUE(trie.update(hostKey(9), old).ok());
    EXPECT_EQ(run(udpFrom("192.0.2.9")), XDP_PASS) << ago_s << " s ago";
    EXPECT_FALSE(trie.find(hostKey(9)).has_value()) << "the program deletes what is over";
    EXPECT_EQ(banCount(), 0u);
    ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.9"), 600 * kSecond).ok());
  }
}

TEST_F(BansTest, ALiftRemovesAFleetBanWhateverItsAgeAndAnOwnBanOnlyIfOlder) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(
      limiter()
          .banAdd(*parseCidr("192.0.2.40"), 600 * kSecond, BanUpdate::kExtend, BanOrigin::kFleet)
          .ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.41"), 600 * kSecond).ok());  // manual
  // both started just now; a lift aged a minute (its signer's clock a minute behind)
  auto fleet = limiter().banRemoveStartedBefore(*parseCidr("192.0.2.40"), 60 * kSecond);
  ASSERT_TRUE(fleet.ok()) << fleet.error().message;
  EXPECT_TRUE(*fleet) << "a fleet ban came from a record older than the lift";
  auto own = limiter().banRemoveStartedBefore(*parseCidr("192.0.2.41"), 60 * kSecond);
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_FALSE(*own) << "this host's own ban, started after the lift, stands";
  EXPECT_EQ(run(udpFrom("192.0.2.40")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.41")), XDP_DROP);
  EXPECT_EQ(banCount(), 1u);
}

// A fleet ban meeting this host's own ban extends it and no more: the ban stays this host's
// (its start, who started it, none of the fleet's room), so a lift signed before this host
// banned cannot lift it by way of a fleet ban read first.
TEST_F(BansTest, AFleetBanExtendsAnOwnBanWhichStaysTheHosts) {
  load({sourceRule(1000, 1000)});
  const Cidr own = *parseCidr("192.0.2.41");
  ASSERT_TRUE(limiter().banAdd(own, 60 * kSecond).ok());  // manual, started just now
  const fg_ban before = *banTrie().find(hostKey(41));
  ASSERT_TRUE(limiter().banAdd(own, 600 * kSecond, BanUpdate::kExtend, BanOrigin::kFleet).ok());
  const fg_ban after = *banTrie().find(hostKey(41));
  EXPECT_EQ(after.rule_id, FG_BAN_MANUAL);
  EXPECT_EQ(after.since, before.since);
  EXPECT_GE(after.expires, before.expires + 500ULL * *kernelHz()) << "extended";
  EXPECT_TRUE(limiter().fleetBanHasRoom(*parseCidr("192.0.2.42"), 1))
      << "the extended ban takes none of the fleet's room";
  // a lift signed a minute ago: older than this host's ban, which stands
  auto lifted = limiter().banRemoveStartedBefore(own, 60 * kSecond);
  ASSERT_TRUE(lifted.ok()) << lifted.error().message;
  EXPECT_FALSE(*lifted);
  EXPECT_EQ(run(udpFrom("192.0.2.41")), XDP_DROP);
  // a fleet ban this host then bans for longer becomes this host's, out of the fleet's room
  ASSERT_TRUE(
      limiter()
          .banAdd(*parseCidr("192.0.2.42"), 60 * kSecond, BanUpdate::kExtend, BanOrigin::kFleet)
          .ok());
  EXPECT_FALSE(limiter().fleetBanHasRoom(*parseCidr("192.0.2.43"), 1));
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.42"), 600 * kSecond).ok());
  EXPECT_EQ(banTrie().find(hostKey(42))->rule_id, FG_BAN_MANUAL);
  EXPECT_TRUE(limiter().fleetBanHasRoom(*parseCidr("192.0.2.43"), 1));
  // a fleet ban that is over is deleted to make way for this host's new ban: counted out
  ASSERT_TRUE(
      limiter()
          .banAdd(*parseCidr("192.0.2.44"), 60 * kSecond, BanUpdate::kExtend, BanOrigin::kFleet)
          .ok());
  EXPECT_FALSE(limiter().fleetBanHasRoom(*parseCidr("192.0.2.45"), 1));
  auto trie = banTrie();
  auto over = trie.find(hostKey(44));
  ASSERT_TRUE(over.has_value());
  over->expires = jiffies() - 10ULL * *kernelHz();
  ASSERT_TRUE(trie.update(hostKey(44), *over).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.44"), 600 * kSecond).ok());
  EXPECT_EQ(trie.find(hostKey(44))->rule_id, FG_BAN_MANUAL);
  EXPECT_TRUE(limiter().fleetBanHasRoom(*parseCidr("192.0.2.45"), 1));
}

TEST_F(BansTest, ALiftLeavesABanThatIsOverToTheProgram) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.42"), 600 * kSecond).ok());
  auto trie = banTrie();
  auto over = trie.find(hostKey(42));
  ASSERT_TRUE(over.has_value());
  // ran out a tick ago: the program may delete it and start a new ban in its place at any
  // moment, which a delete here would then take
  over->since = jiffies() - 700ULL * *kernelHz();
  over->expires = jiffies() - 1;
  ASSERT_TRUE(trie.update(hostKey(42), *over).ok());
  auto lifted = limiter().banRemoveStartedBefore(*parseCidr("192.0.2.42"), 0);
  ASSERT_TRUE(lifted.ok()) << lifted.error().message;
  EXPECT_FALSE(*lifted);
  EXPECT_TRUE(trie.find(hostKey(42)).has_value()) << "left to the program";
  EXPECT_EQ(banCount(), 1u);
  EXPECT_EQ(run(udpFrom("192.0.2.42")), XDP_PASS);  // which ends it and counts it out
  EXPECT_EQ(banCount(), 0u);
}

TEST_F(BansTest, TheSweepDeletesBansThatAreOverAndListsNeverShowThem) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.20"), 600 * kSecond).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.21"), 600 * kSecond).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.22"), 0).ok());  // until removed
  ASSERT_EQ(banCount(), 3u);
  auto trie = banTrie();
  const uint64_t hz = *kernelHz();
  auto just_over = trie.find(hostKey(21));
  ASSERT_TRUE(just_over.has_value());
  just_over->expires = jiffies() - 1;  // ran out a tick ago: left to the program a while
  ASSERT_TRUE(trie.update(hostKey(21), *just_over).ok());
  auto over = trie.find(hostKey(20));
  ASSERT_TRUE(over.has_value());
  over->expires = jiffies() - 61 * hz;  // over for a minute; its source never came back
  ASSERT_TRUE(trie.update(hostKey(20), *over).ok());
  auto listed = limiter().bans();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u) << "ban list never shows a ban that is over";
  auto swept = limiter().sweepExpiredBans();
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  EXPECT_EQ(*swept, 1u);
  EXPECT_FALSE(trie.find(hostKey(20)).has_value());
  EXPECT_TRUE(trie.find(hostKey(21)).has_value());
  EXPECT_EQ(banCount(), 2u);
  EXPECT_EQ(run(udpFrom("192.0.2.21")), XDP_PASS);  // the program ends the one just over
  EXPECT_EQ(banCount(), 1u);
  EXPECT_EQ(run(udpFrom("192.0.2.22")), XDP_DROP);
}

TEST_F(BansTest, ABanOfASourceWhoseBanTheProgramEndedIsCountedInAgain) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.30"), 600 * kSecond).ok());
  auto trie = banTrie();
  auto ban = trie.find(hostKey(30));
  ASSERT_TRUE(ban.has_value());
  ban->expires = jiffies() - 1;
  ASSERT_TRUE(trie.update(hostKey(30), *ban).ok());
  EXPECT_EQ(run(udpFrom("192.0.2.30")), XDP_PASS);  // the program deletes it, counts it out
  EXPECT_EQ(banCount(), 0u);
  // a new ban of the same source is a new entry, counted in: the program looks it up
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.30"), 600 * kSecond).ok());
  EXPECT_EQ(banCount(), 1u);
  EXPECT_EQ(run(udpFrom("192.0.2.30")), XDP_DROP);
  // and replacing a running ban keeps one entry, counted once
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.30"), 1200 * kSecond).ok());
  EXPECT_EQ(banCount(), 1u);
  // a ban about to run out is deleted and added anew, never replaced in place where the
  // program could delete the new one as the old
  ban = trie.find(hostKey(30));
  ASSERT_TRUE(ban.has_value());
  ban->expires = jiffies() + 1;
  ASSERT_TRUE(trie.update(hostKey(30), *ban).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.30"), 600 * kSecond).ok());
  EXPECT_EQ(banCount(), 1u);
  ban = trie.find(hostKey(30));
  ASSERT_TRUE(ban.has_value());
  EXPECT_GT(ban->expires, jiffies() + 500 * *kernelHz());
}

TEST_F(BansTest, ANarrowBanRunningOutNeverHidesAWiderOneStillRunning) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.0/24"), 600 * kSecond).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.60"), 600 * kSecond).ok());
  auto trie = banTrie();
  auto narrow = trie.find(hostKey(60));
  ASSERT_TRUE(narrow.has_value());
  narrow->expires = jiffies() - 1;
  ASSERT_TRUE(trie.update(hostKey(60), *narrow).ok());
  EXPECT_EQ(run(udpFrom("192.0.2.60")), XDP_DROP);  // the /24 still holds it
  EXPECT_EQ(banCount(), 1u);  // the /32 is gone (a lookup of it now finds the /24)
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  ASSERT_EQ(bans->size(), 1u);
  EXPECT_EQ((*bans)[0].cidr.toString(), "192.0.2.0/24");
}

// Four bans over, one inside another, under a wider one still running: the lookup goes
// through every one that ran out (deleting each) to the one running, so not one packet of the
// source gets by.
TEST_F(BansTest, NarrowBansRunningOutOneInsideAnotherNeverHideAWiderOneStillRunning) {
  load({sourceRule(1000, 1000)});
  for (const char* cidr :
       {"192.0.0.0/16", "192.0.2.0/24", "192.0.2.64/28", "192.0.2.68/30", "192.0.2.70"}) {
    ASSERT_TRUE(limiter().banAdd(*parseCidr(cidr), 600 * kSecond).ok()) << cidr;
  }
  // as many as the lookup goes through
  ASSERT_NO_FATAL_FAILURE(endBansHolding(70, {32, 30, 28, 24}));
  EXPECT_EQ(run(udpFrom("192.0.2.70")), XDP_DROP) << "the /16 holds it from the first packet";
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
  EXPECT_EQ(banCount(), 1u) << "the four that ran out are gone";
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  ASSERT_EQ(bans->size(), 1u);
  EXPECT_EQ((*bans)[0].cidr.toString(), "192.0.0.0/16");
}

// A ban over that the lookup did not reach (more bans over inside it than it looks through)
// does not stop the rule's ban of the same prefix: it is retired, and the new one starts.
TEST_F(BansTest, ARuleBanStartsWhereABanOfItsPrefixRanOut) {
  RuleSpec banning = sourceRule(1, 1);
  banning.ipv4_prefix = 24;
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  load({banning});
  const auto frame = udpFrom("192.0.2.70");
  ASSERT_EQ(run(frame), XDP_PASS);  // the /24's bucket is empty from here
  for (const char* cidr :
       {"192.0.2.0/24", "192.0.2.64/29", "192.0.2.68/30", "192.0.2.70/31", "192.0.2.70"}) {
    ASSERT_TRUE(limiter().banAdd(*parseCidr(cidr), 600 * kSecond).ok()) << cidr;
  }
  ASSERT_NO_FATAL_FAILURE(endBansHolding(70, {32, 31, 30, 29, 24}));
  auto trie = banTrie();
  EXPECT_EQ(run(frame), XDP_DROP);  // refused by its bucket: the rule bans the /24
  fg_lpm_v4 wide = hostKey(0);
  wide.prefixlen = 24;
  auto started = trie.find(wide);
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->prefixlen, 24u);
  EXPECT_GT(started->expires, jiffies() + 500ULL * *kernelHz()) << "a ban running, not the old";
  EXPECT_EQ(started->rule_id, (*limiter().activeRules())[0].id);
  EXPECT_EQ(banCount(), 1u);
  EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
}

TEST_F(BansTest, AnAutomaticBanNeverShortensOneAlreadyRunning) {
  load({sourceRule(1000, 1000)});
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.50"), 0).ok());  // until removed
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.51"), 7 * kDay).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.50"), 600 * kSecond, BanUpdate::kExtend).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.51"), 600 * kSecond, BanUpdate::kExtend).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.52"), 600 * kSecond, BanUpdate::kExtend).ok());
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.52"), 3600 * kSecond, BanUpdate::kExtend).ok());
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  std::map<std::string, BanEntry> by_source;
  for (const BanEntry& ban : *bans) by_source[ban.cidr.toString()] = ban;
  EXPECT_TRUE(by_source["192.0.2.50"].forever);
  EXPECT_GT(by_source["192.0.2.51"].remaining_ns, 6 * kDay);
  EXPECT_GT(by_source["192.0.2.52"].remaining_ns, 3000 * kSecond);  // extended
  EXPECT_EQ(banCount(), 3u);
  // an operator's ban replaces whatever was there
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.51"), 600 * kSecond).ok());
  bans = limiter().bans();
  ASSERT_TRUE(bans.ok());
  for (const BanEntry& ban : *bans) by_source[ban.cidr.toString()] = ban;
  EXPECT_LE(by_source["192.0.2.51"].remaining_ns, 600 * kSecond);
}

TEST_F(BansTest, RuleBansStopShortOfTheRoomKeptForManualBans) {
  RuleSpec banning = sourceRule(1, 1);
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  load({banning});
  fillBansUpToTheReserve();  // as a spoofed flood would have
  auto frame = udpFrom("192.0.2.40");
  EXPECT_EQ(run(frame), XDP_PASS);
  EXPECT_EQ(run(frame), XDP_DROP);  // over its limit: the rule would ban it, but may not
  EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 0u);
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ((*rules)[0].table[FG_TABLE_BAN_FAILED], 2u);
  // a manual ban still fits
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.41"), 600 * kSecond).ok());
  EXPECT_EQ(run(udpFrom("192.0.2.41")), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
}

// Fleet bans hold at most their room (fleet.bans.max_entries) of a family's table, counted
// by who started each ban: a manual ban takes none of it, nor does a wider ban holding the
// address make room for a ban of it; a fleet ban running is still extended, a lift makes
// room, a fleet ban that ended does once it is deleted, and no fleet ban takes the entries
// kept for manual bans and escalations.
TEST_F(BansTest, FleetBansStopAtTheirRoomAndLeaveTheRestToThisHost) {
  load({sourceRule(1000, 1000)});
  constexpr uint32_t kRoom = 2;
  auto fleetBan = [&](const char* cidr) {
    return limiter().banAdd(*parseCidr(cidr), 600 * kSecond, BanUpdate::kExtend, BanOrigin::kFleet);
  };
  auto room = [&](const char* cidr) { return limiter().fleetBanHasRoom(*parseCidr(cidr), kRoom); };
  ASSERT_TRUE(limiter().banAdd(*parseCidr("198.51.100.0/24"), 600 * kSecond).ok());  // manual
  EXPECT_TRUE(room("192.0.2.40"));
  ASSERT_TRUE(fleetBan("192.0.2.40").ok());
  ASSERT_TRUE(fleetBan("192.0.2.41").ok());
  EXPECT_FALSE(room("192.0.2.42"));
  EXPECT_FALSE(room("198.51.100.7")) << "the wider manual ban is no entry of its own";
  EXPECT_TRUE(room("192.0.2.40")) << "a running fleet ban is extended";
  EXPECT_TRUE(room("2001:db8::7")) << "the other family holds none";
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.50"), 600 * kSecond).ok()) << "manual";
  EXPECT_EQ(banCount(), 4u);

  auto lifted = limiter().banRemoveStartedBefore(*parseCidr("192.0.2.41"), 0);
  ASSERT_TRUE(lifted.ok() && *lifted);
  EXPECT_TRUE(room("192.0.2.42")) << "the lift made room";
  ASSERT_TRUE(fleetBan("192.0.2.42").ok());
  EXPECT_FALSE(room("192.0.2.43"));

  // 192.0.2.42's ban ended 10 s ago: over, it holds its entry still, and counts
  auto trie = banTrie();
  auto ended = trie.find(hostKey(42));
  ASSERT_TRUE(ended.has_value());
  ASSERT_EQ(ended->rule_id, FG_BAN_FLEET);
  ended->expires = jiffies() - 10ULL * *kernelHz();
  ASSERT_TRUE(trie.update(hostKey(42), *ended).ok());
  auto swept = limiter().sweepExpiredBans();
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  EXPECT_EQ(*swept, 0u) << "over for less than a minute";
  EXPECT_FALSE(room("192.0.2.43")) << "an entry over still takes room";
  // over for two minutes: the sweep deletes it, and the room is back
  ended->expires = jiffies() - 120ULL * *kernelHz();
  ASSERT_TRUE(trie.update(hostKey(42), *ended).ok());
  swept = limiter().sweepExpiredBans();
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  EXPECT_EQ(*swept, 1u);
  EXPECT_TRUE(room("192.0.2.43"));

  // nor do fleet bans take the entries rule bans leave to manual bans and escalations
  fillBansUpToTheReserve();
  EXPECT_FALSE(room("192.0.2.43")) << "rule bans filled the table up to the reserve";
  EXPECT_TRUE(room("192.0.2.40")) << "extended in place";
}

TEST_F(BansTest, OnlyASourceOverItsOwnLimitIsBanned) {
  RuleSpec banning = sourceRule(1, 1);
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  banning.new_sources_per_s = 1;  // room for one new source
  banning.untracked = {.pps = 1, .burst = 1};
  AttachOptions options;
  options.test_clock_hz = 1000;
  load({banning}, options);
  setClock(100000);
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);  // takes the cap's one slot
  // held out of the table: the untracked bucket admits the first, refuses the second
  EXPECT_EQ(run(udpFrom("192.0.2.2")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.3")), XDP_DROP);
  EXPECT_EQ(run(udpFrom("192.0.2.3")), XDP_DROP);
  EXPECT_EQ(banCount(), 0u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 0u);
  // the source with a slot, over its own limit, is banned
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_DROP);
  EXPECT_EQ(banCount(), 1u);
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
}

// A frame larger than a rule's whole byte window (a double-tagged full-size frame is 1522
// bytes, the smallest byte bucket 1518) is refused however quiet its source kept: the frame's
// size, not the source over its limit, so it is dropped and starts no ban. The same source
// over its limit with frames that fit is banned.
TEST_F(BansTest, AFrameNoFullBucketCouldAdmitIsDroppedButBansNoOne) {
  RuleSpec banning;
  banning.name = "bytes";
  banning.algorithm = Algorithm::kFixedWindow;
  banning.window_ns = kSecond;
  banning.limit.bits_per_s = 8 * 1518;  // 1518 bytes a window
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  AttachOptions options;
  options.test_clock_hz = 1000;
  load({banning}, options);
  setClock(100000);
  auto large = udpFrom("192.0.2.70", 1522 - 42);
  ASSERT_EQ(large.size(), 1522u);
  EXPECT_EQ(run(large), XDP_DROP);
  EXPECT_EQ(run(large), XDP_DROP);
  EXPECT_EQ(banCount(), 0u);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 2u);
  auto full = udpFrom("192.0.2.70", 1518 - 42);
  EXPECT_EQ(run(full), XDP_PASS) << "a window's worth, unbanned";
  EXPECT_EQ(run(full), XDP_DROP) << "over its limit";
  EXPECT_EQ(banCount(), 1u);
}

// A source that owns its slot and comes back after a silence ending in the hours before the
// unit clock wraps (its bucket time then reads as a debt) owes nothing: no bucket stays in
// debt for longer than the largest capacity. It passes, gets its burst, and is not banned.
TEST_F(BansTest, ASourceBackFromASilenceThatEndsJustBeforeTheUnitClockWrapsIsNotBanned) {
  // the test clock's last tick before the unit clock wraps, at 250 Hz
  constexpr uint64_t kLastTickBeforeTheWrap = UINT64_MAX / ((1000000000ULL / 250) << FG_TIME_SHIFT);
  RuleSpec banning = sourceRule(1, 3);
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  AttachOptions options;
  options.test_clock_hz = 250;
  load({banning}, options);
  const uint64_t start = 100000;
  setClock(start);
  auto frame = udpFrom("192.0.2.60");
  EXPECT_EQ(passes(frame, 2), 2);  // in debt, within its burst
  // back 30 minutes before the wrap, counted from when it was last seen
  setClock(start + kLastTickBeforeTheWrap - 250 * 60 * 30);
  EXPECT_EQ(passes(frame, 4), 4) << "the first packet, then a full bucket's burst of 3";
  EXPECT_EQ(banCount(), 0u);
  EXPECT_EQ(run(frame), XDP_DROP) << "over its limit now";
  EXPECT_EQ(banCount(), 1u);
}

// A CPU that read the clock a tick before another wrote that next tick as the slot's last
// packet sees the slot seen "later" than now: no silence, and no full bucket for a flood.
TEST_F(BansTest, ALastPacketATickAheadOfTheClockIsNoSilence) {
  AttachOptions options;
  options.test_clock_hz = 250;
  load({sourceRule(1, 3)}, options);
  auto frame = udpFrom("192.0.2.61");
  int passed = 0;
  for (uint64_t tick = 100000; tick < 100010; ++tick) {
    setClock(tick + 1);  // one CPU charges in the next tick
    passed += passes(frame, 1);
    setClock(tick);  // another still holds this one
    passed += passes(frame, 1);
  }
  EXPECT_EQ(passed, 3) << "the burst, and nothing in 40 ms at 1/s";
}

// Monitor mode bans nothing: a ban would outlast the dry run, and the daemon hands every ban a
// rule starts to the fleet, whose hosts would drop what this one only counts.
TEST_F(BansTest, MonitorModeStartsNoBan) {
  RuleSpec banning = sourceRule(1, 1);
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  AttachOptions options;
  options.monitor = true;
  options.test_clock_hz = 1000;
  load({banning}, options);
  setClock(100000);
  auto frame = udpFrom("192.0.2.50");
  EXPECT_EQ(passes(frame, 3), 3);
  EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_RATE), 2u);
  EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_BAN), 0u);
  EXPECT_EQ(banCount(), 0u);
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok()) << bans.error().message;
  EXPECT_TRUE(bans->empty());
  // out of monitor mode, the same source over its limit is banned
  options.monitor = false;
  reload({banning}, options);
  EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(banCount(), 1u);
  EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_BAN), 1u);
}

TEST_F(BansTest, BanListNamesWhoStartedEachBan) {
  RuleSpec banning = sourceRule(1, 1);
  banning.name = "syn-guard";
  banning.action = ExceedAction::kBan;
  banning.ban_ns = 600 * kSecond;
  load({banning});
  auto frame = udpFrom("192.0.2.50");
  EXPECT_EQ(run(frame), XDP_PASS);
  EXPECT_EQ(run(frame), XDP_DROP);  // over its limit: the rule bans it
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.51"), 600 * kSecond).ok());
  // what the daemon does with an address the HTTP layer reported
  ASSERT_TRUE(limiter()
                  .banAdd(*parseCidr("192.0.2.52"), 600 * kSecond, BanUpdate::kExtend,
                          BanOrigin::kEscalation)
                  .ok());
  // an escalation that would not outlast a running manual ban leaves it the operator's
  ASSERT_TRUE(limiter().banAdd(*parseCidr("192.0.2.53"), 0).ok());
  ASSERT_TRUE(limiter()
                  .banAdd(*parseCidr("192.0.2.53"), 600 * kSecond, BanUpdate::kExtend,
                          BanOrigin::kEscalation)
                  .ok());
  auto bans = limiter().bans();
  ASSERT_TRUE(bans.ok()) << bans.error().message;
  std::map<std::string, std::string> by;
  for (const BanEntry& ban : *bans) by[ban.cidr.toString()] = ban.by;
  EXPECT_EQ(by["192.0.2.50"], "syn-guard");
  EXPECT_EQ(by["192.0.2.51"], "manual");
  EXPECT_EQ(by["192.0.2.52"], "escalation");
  EXPECT_EQ(by["192.0.2.53"], "manual");
  EXPECT_EQ(banStartedBy(7, {}), "rule#7") << "a rule no longer there, in one word";
}

}  // namespace
}  // namespace floodgate::test
