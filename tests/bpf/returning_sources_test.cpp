// SPDX-License-Identifier: MIT
// Sources that come back: a source that held a slot within its limits is remembered, and
// when it returns while the new-source cap refuses (a spoofed flood), it takes a slot from
// the rule's reserve for remembered sources. Run on the program's test clock.
#include <arpa/inet.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf/xdp_fixture.h"
#include "fg_gcra.h"
#include "kernel/bpf_map.h"

namespace floodgate::test {
namespace {

constexpr uint64_t kHz = 1000;  // one tick a millisecond
constexpr uint64_t kStart = 100000;

class ReturningSourcesTest : public XdpProgramTest {
 protected:
  // 100 pps with a burst of 5 a source, one new source a second into a table of one set
  // of four ways: a few sources fill it, and the cap is easy to run dry.
  static RuleSpec rule() {
    RuleSpec spec = sourceRule(100, 5);
    spec.new_sources_per_s = 1;
    spec.untracked = {.pps = 1, .burst = 1};
    return spec;
  }

  // Loads `rules` over a table of one set of four ways, on a test clock of `hz` ticks a
  // second.
  void loadOneSet(std::vector<RuleSpec> rules, uint64_t hz = kHz) {
    AttachOptions options;
    options.table_slots = 4;
    options.test_clock_hz = hz;
    load(std::move(rules), options);
    now_ = kStart;
    setClock(now_);
  }
  void loadOneSet(const RuleSpec& spec) { loadOneSet(std::vector<RuleSpec>{spec}); }

  // Moves the clock on by `ms`.
  void later(uint64_t ms) {
    now_ += ms;
    setClock(now_);
  }

  // The fingerprint of IPv4 source `host_order` under the rule at `position` of those
  // loaded, with the table's seed (which a flooder does not know).
  uint64_t fingerprintOf(uint32_t host_order, size_t position = 0) {
    auto settings = limiter().settings();
    auto rules = limiter().activeRules();
    EXPECT_TRUE(settings.ok() && rules.ok() && position < rules->size());
    const fg_rule& rule = (*rules)[position];
    const uint64_t hash =
        fg_addr_hash(settings->hash_seed, FG_FAMILY_V4, static_cast<uint64_t>(host_order) << 32, 0);
    return fg_key_fingerprint(hash, rule.id, rule.epoch, FG_FAMILY_V4);
  }

  // The element of `sets` holding the memory entry of fingerprint `fp` in a table of fewer
  // sets than FG_MIN_SET_ELEMENTS (as loadOneSet's), which has that many elements.
  static uint32_t memoryElement(uint64_t fp) {
    return fg_memory_element_of(fp, FG_MIN_SET_ELEMENTS - 1);
  }

  // Three sources of 10.0.0.0/8 (host order) whose memory entries under the rule at
  // `position` are in `element`, found with the table's seed (a flooder does not know it).
  std::vector<uint32_t> sourcesInElement(uint32_t element, size_t position = 0) {
    std::vector<uint32_t> out;
    for (uint32_t host = 0x0a000001; host < 0x0a000001 + (64u << 20) && out.size() < 3; ++host) {
      if (memoryElement(fingerprintOf(host, position)) == element) out.push_back(host);
    }
    return out;
  }

  static std::string dotted(uint32_t host) {
    return std::to_string(host >> 24) + "." + std::to_string((host >> 16) & 255) + "." +
           std::to_string((host >> 8) & 255) + "." + std::to_string(host & 255);
  }

  // How many memory entries of `set` hold fingerprint `fp`'s tag.
  static int memoryEntriesOf(const fg_set& set, uint64_t fp) {
    int entries = 0;
    for (uint64_t entry : set.memory)
      entries += entry && fg_memory_entry_tag(entry) == fg_memory_tag(fp);
    return entries;
  }

  bool holdsSlot(const std::string& address) {
    auto slots = limiter().slots();
    EXPECT_TRUE(slots.ok()) << slots.error().message;
    in_addr want{};
    inet_pton(AF_INET, address.c_str(), &want);
    for (const fg_slot& slot : *slots) {
      if (slot.fingerprint && std::memcmp(slot.addr, &want, 4) == 0) return true;
    }
    return false;
  }

  uint64_t stat(uint32_t which) {
    auto rules = limiter().ruleCounters();
    EXPECT_TRUE(rules.ok());
    return rules->empty() ? 0 : rules->front().table[which];
  }

  // A source takes a slot (the cap has had two seconds to refill) and comes back within
  // its limit a tick later: it is remembered.
  void seenGood(const std::string& address) {
    later(2000);
    ASSERT_EQ(run(udpFrom(address)), XDP_PASS);
    later(10);
    ASSERT_EQ(run(udpFrom(address)), XDP_PASS);
    ASSERT_TRUE(holdsSlot(address));
  }

  // Four new sources, two seconds apart so the cap admits each, take the set's four ways:
  // every source that held one before has lost it. The last leaves the cap empty.
  void fillWithNewSources() {
    for (int i = 1; i <= 4; ++i) {
      later(2000);
      ASSERT_EQ(run(udpFrom("203.0.113." + std::to_string(i))), XDP_PASS);
    }
    for (int i = 1; i <= 4; ++i) ASSERT_TRUE(holdsSlot("203.0.113." + std::to_string(i)));
  }

  // The set filled (the source's slot lost, the cap empty), the source sends again:
  // whether it got a slot.
  bool getsASlotBack(const std::string& address) {
    fillWithNewSources();
    later(1);
    run(udpFrom(address));
    return holdsSlot(address);
  }

  uint64_t now_ = kStart;
};

TEST_F(ReturningSourcesTest, ARememberedSourceGetsASlotWhileTheCapRefusesNewOnes) {
  loadOneSet(rule());
  seenGood("192.0.2.10");
  fillWithNewSources();
  ASSERT_FALSE(holdsSlot("192.0.2.10"));

  later(1);
  // a source never seen: the cap (used a tick ago) refuses it
  run(udpFrom("198.18.0.99"));
  EXPECT_FALSE(holdsSlot("198.18.0.99"));
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
  // the remembered one takes a slot from the reserve, and keeps its own bucket of 5
  EXPECT_EQ(passes(udpFrom("192.0.2.10"), 8), 5);
  EXPECT_TRUE(holdsSlot("192.0.2.10"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 1u);
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
}

TEST_F(ReturningSourcesTest, ASourceSeenOnceIsNotRemembered) {
  loadOneSet(rule());
  // one packet, as every source of a spoofed flood sends
  later(2000);
  ASSERT_EQ(run(udpFrom("192.0.2.11")), XDP_PASS);
  EXPECT_FALSE(getsASlotBack("192.0.2.11"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
}

TEST_F(ReturningSourcesTest, ASourceAtItsLimitIsNotRemembered) {
  loadOneSet(rule());
  later(2000);
  // over its burst of 5 in its first tick: refused, not one to let in ahead of others
  EXPECT_EQ(passes(udpFrom("192.0.2.12"), 10), 5);
  later(10);
  ASSERT_EQ(run(udpFrom("192.0.2.12")), XDP_PASS);  // a later tick, within its limit
  EXPECT_FALSE(getsASlotBack("192.0.2.12"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
}

TEST_F(ReturningSourcesTest, NoSourceIsNewlyRememberedWhileTheCapRefuses) {
  loadOneSet(rule());
  later(2000);
  ASSERT_EQ(run(udpFrom("192.0.2.18")), XDP_PASS);
  // a flood: the cap, used a tick ago, refuses a source never seen
  later(1);
  run(udpFrom("198.18.0.97"));
  ASSERT_EQ(stat(FG_TABLE_CAPPED), 1u);
  // what would remember the source now would remember the flood's sources alike
  later(10);
  ASSERT_EQ(run(udpFrom("192.0.2.18")), XDP_PASS);
  EXPECT_FALSE(getsASlotBack("192.0.2.18"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
}

TEST_F(ReturningSourcesTest, RememberedSourcesKeepTheirEntriesFromAnotherThatWouldShareThem) {
  loadOneSet(rule());
  // sources whose memory entries are the element of 192.0.2.19's: two that fill the
  // element's other entries, and one more that finds every entry taken
  std::vector<std::string> others;
  for (uint32_t host : sourcesInElement(memoryElement(fingerprintOf(0xc0000213))))  // 192.0.2.19
    others.push_back(dotted(host));
  ASSERT_EQ(others.size(), 3u);
  static_assert(FG_MEMORY_WAYS == 3, "the element's entries: 192.0.2.19 and two others");
  seenGood("192.0.2.19");
  seenGood(others[0]);
  seenGood(others[1]);
  seenGood(others[2]);  // would take an entry: each is still fresh, so it is remembered not
  fillWithNewSources();
  later(1);
  run(udpFrom("192.0.2.19"));
  run(udpFrom(others[2]));
  EXPECT_TRUE(holdsSlot("192.0.2.19"));
  EXPECT_FALSE(holdsSlot(others[2])) << others[2];
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 1u);
  // one of the element's first three is remembered as well as 192.0.2.19
  run(udpFrom(others[0]));
  EXPECT_TRUE(holdsSlot(others[0])) << others[0];
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 2u);
}

// An entry stays fresh for its writer's remember_for: a rule that remembers for less does
// not take an entry another rule still holds, though it would be lapsed by its own.
TEST_F(ReturningSourcesTest, ARuleRememberingForLessTakesNoEntryAnotherStillHolds) {
  RuleSpec long_memory = rule();  // UDP to port 53, as udpFrom sends
  long_memory.name = "long";
  long_memory.dst_ports = {PortRange{53, 53}};
  long_memory.remember_ns = 60'000'000'000ULL;
  RuleSpec short_memory = rule();
  short_memory.name = "short";
  short_memory.dst_ports = {PortRange{80, 80}};
  short_memory.remember_ns = 500'000'000ULL;
  loadOneSet({long_memory, short_memory});
  auto to80 = [](const std::string& src) {
    return PacketBuilder().eth().ipv4(src, "198.51.100.1").udp(80).payload(32).build();
  };
  // 192.0.2.20 remembered by the long rule; three sources whose entries under the short
  // rule are in the same element
  const uint64_t first = fingerprintOf(0xc0000214);  // 192.0.2.20
  const std::vector<uint32_t> others = sourcesInElement(memoryElement(first), 1);
  ASSERT_EQ(others.size(), 3u);
  auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
  ASSERT_TRUE(sets.ok()) << sets.error().message;
  auto remembered = [&](uint64_t fp) {
    auto set = sets->lookup(memoryElement(fp));
    EXPECT_TRUE(set.ok());
    return set.ok() && memoryEntriesOf(*set, fp) == 1;
  };
  // each seen good, two seconds apart (the cap's pace): by the third, the short rule's first
  // two have lapsed by its half second, the long rule's entry not by its minute
  seenGood("192.0.2.20");
  for (uint32_t other : others) {
    later(2000);
    ASSERT_EQ(run(to80(dotted(other))), XDP_PASS);
    later(10);
    ASSERT_EQ(run(to80(dotted(other))), XDP_PASS);
  }
  EXPECT_TRUE(remembered(first)) << "the long rule's entry, fresh, was taken";
  int shorts = 0;
  for (uint32_t other : others) shorts += remembered(fingerprintOf(other, 1));
  EXPECT_EQ(shorts, 2) << "the last took the entry of a lapsed one of its own rule";
}

// A table of FG_MIN_SET_ELEMENTS sets or more keeps a source's memory entry in the element
// of its own set, beside the set's tags: the one cache line a new source reads.
TEST_F(ReturningSourcesTest, ASourceIsRememberedBesideItsSetsTags) {
  AttachOptions options;
  options.table_slots = FG_MIN_SET_ELEMENTS * FG_TABLE_WAYS;
  options.test_clock_hz = kHz;
  load({rule()}, options);
  now_ = kStart;
  setClock(now_);
  seenGood("192.0.2.30");
  auto slots = limiter().slots();
  ASSERT_TRUE(slots.ok()) << slots.error().message;
  in_addr want{};
  inet_pton(AF_INET, "192.0.2.30", &want);
  size_t index = slots->size();
  for (size_t i = 0; i < slots->size(); ++i) {
    if ((*slots)[i].fingerprint && std::memcmp((*slots)[i].addr, &want, 4) == 0) index = i;
  }
  ASSERT_LT(index, slots->size());
  const uint64_t fp = (*slots)[index].fingerprint;
  auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
  ASSERT_TRUE(sets.ok()) << sets.error().message;
  auto set = sets->lookup(static_cast<uint32_t>(index / FG_TABLE_WAYS));
  ASSERT_TRUE(set.ok()) << set.error().message;
  uint16_t tags[FG_TABLE_WAYS];
  std::memcpy(tags, &set->tags, sizeof(tags));
  EXPECT_EQ(tags[index % FG_TABLE_WAYS], static_cast<uint16_t>(fp >> 48)) << "its slot's tag";
  EXPECT_EQ(memoryEntriesOf(*set, fp), 1) << "its memory entry, in the same element";
  // one cache line only if the 32-byte elements start on one: a plain array's values start
  // partway into a line, an mmapable one's on a page
  auto info = mapInfo(sets->fd(), "sets");
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_NE(info->map_flags & BPF_F_MMAPABLE, 0u) << "sets must be mmapable, for its alignment";
  static_assert(sizeof(fg_set) == 32 && 64 % sizeof(fg_set) == 0, "no element across two lines");
}

// A remember_for shorter than the once-a-second refresh: a source that keeps coming is
// refreshed within it, so its entry stays fresh through a flood (while the cap refuses, a
// lapsed entry would be a new memory, which a flood does not get).
TEST_F(ReturningSourcesTest, AShortRememberForIsRefreshedInTimeThroughAFlood) {
  RuleSpec spec = rule();
  spec.remember_ns = 200'000'000ULL;  // 200 ticks
  loadOneSet(spec);
  seenGood("192.0.2.31");
  const uint64_t fp = fingerprintOf(0xc000021f);  // 192.0.2.31
  auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
  ASSERT_TRUE(sets.ok()) << sets.error().message;
  auto stamp = [&]() -> uint32_t {
    auto set = sets->lookup(memoryElement(fp));
    EXPECT_TRUE(set.ok());
    for (uint64_t entry : set->memory) {
      if (entry && fg_memory_entry_tag(entry) == fg_memory_tag(fp))
        return static_cast<uint32_t>(entry);
    }
    return 0;
  };
  ASSERT_NE(stamp(), 0u) << "remembered";
  // 3 s of a flood: a spoofed source every 90 ms keeps the cap refusing, and the source
  // keeps sending within its limit
  for (int i = 0; i < 33; ++i) {
    later(90);
    run(udpFrom("198.18.1." + std::to_string(i + 1)));
    run(udpFrom("192.0.2.31"));
  }
  EXPECT_GT(stat(FG_TABLE_CAPPED), 20u);
  // an entry's stamp is the tick it stays fresh until
  const uint32_t now_stamp = static_cast<uint32_t>(now_) | 1;
  EXPECT_GT(static_cast<int32_t>(stamp() - now_stamp), 0) << "its entry is fresh";
}

TEST_F(ReturningSourcesTest, ASourceIsForgottenAfterRememberFor) {
  RuleSpec spec = rule();
  spec.remember_ns = 5'000'000'000ULL;  // 5 s; filling the set takes 8
  loadOneSet(spec);
  seenGood("192.0.2.13");
  EXPECT_FALSE(getsASlotBack("192.0.2.13"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
}

// The longest remember_for, at a tick rate whose tick is no whole number of nanoseconds
// (HZ 300): its ticks, rounded up, are more than a day's, and the entry must still be fresh.
TEST_F(ReturningSourcesTest, ADaysRememberForHoldsAtAnyTickRate) {
  RuleSpec spec = rule();
  spec.remember_ns = 86'400'000'000'000ULL;
  loadOneSet(std::vector<RuleSpec>{spec}, 300);
  seenGood("192.0.2.15");
  EXPECT_TRUE(getsASlotBack("192.0.2.15"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 1u);
}

// A reload that shortens remember_for applies to a remembered source at its next packet
// within its limits, not only once the remember_for it was written with has run out.
TEST_F(ReturningSourcesTest, AShortenedRememberForAppliesAtTheSourcesNextPacket) {
  RuleSpec spec = rule();
  spec.remember_ns = 60'000'000'000ULL;  // a minute
  loadOneSet(spec);
  seenGood("192.0.2.16");
  spec.remember_ns = 1'000'000'000ULL;  // a second; filling the set takes 8
  AttachOptions options;
  options.test_clock_hz = kHz;
  reload({spec}, options);
  later(10);
  ASSERT_EQ(run(udpFrom("192.0.2.16")), XDP_PASS);
  EXPECT_FALSE(getsASlotBack("192.0.2.16"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
}

// A rule a reload makes remember only sources with a connection lets none back in by what
// it remembered before, when every source seen good counted: those may have been spoofed.
TEST_F(ReturningSourcesTest, MemoriesFromBeforeRememberConnectedLetNoSourceBackIn) {
  RuleSpec spec = rule();
  loadOneSet(spec);
  seenGood("192.0.2.21");
  spec.remember_connected = true;
  AttachOptions options;
  options.test_clock_hz = kHz;
  reload({spec}, options);
  EXPECT_FALSE(getsASlotBack("192.0.2.21"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
}

TEST_F(ReturningSourcesTest, OffRemembersNoSource) {
  RuleSpec spec = rule();
  spec.remember_ns = 0;
  loadOneSet(spec);
  seenGood("192.0.2.14");
  fillWithNewSources();
  // it comes back as a new source would: by the cap, once the cap has a token again
  later(1);
  run(udpFrom("192.0.2.14"));
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
  later(2000);
  ASSERT_EQ(run(udpFrom("192.0.2.14")), XDP_PASS);
  EXPECT_TRUE(holdsSlot("192.0.2.14"));
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 0u);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 6u);  // its first slot, the four fillers, this one
}

TEST_F(ReturningSourcesTest, TheReserveHasACapOfItsOwn) {
  RuleSpec spec = rule();
  spec.returning_sources_per_s = 1;
  loadOneSet(spec);
  seenGood("192.0.2.15");
  seenGood("192.0.2.16");
  fillWithNewSources();
  later(1);
  run(udpFrom("192.0.2.15"));
  run(udpFrom("192.0.2.16"));
  EXPECT_TRUE(holdsSlot("192.0.2.15"));
  EXPECT_FALSE(holdsSlot("192.0.2.16")) << "the reserve admitted one, the cap none";
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 1u);
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
}

TEST_F(ReturningSourcesTest, ARememberedSourceOutsideAFloodUsesTheReserveNotTheCap) {
  loadOneSet(rule());
  seenGood("192.0.2.17");
  fillWithNewSources();
  // two seconds on, the cap has a token again: the remembered source still comes in by
  // the reserve, and the token is left for a source never seen
  later(2000);
  ASSERT_EQ(run(udpFrom("192.0.2.17")), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_RETURNING_SLOT), 1u);
  ASSERT_EQ(run(udpFrom("198.18.0.98")), XDP_PASS);
  EXPECT_TRUE(holdsSlot("198.18.0.98"));
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 6u);  // the two seen good, the four fillers, this one
}

}  // namespace
}  // namespace floodgate::test
