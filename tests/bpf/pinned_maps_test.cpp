// SPDX-License-Identifier: MIT
// The limiter's maps open from their pins only in this build's layout: a pin of another
// layout where the table expects one (left by an older build) is refused in one line.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "bpf/xdp_fixture.h"
#include "controller/xdp_limiter_maps.h"
#include "kernel/pins.h"
#include "kernel/unique_fd.h"
#include "kernel/write_generation.h"
#include "kernel/xdp_neighbour.h"

namespace floodgate::test {
namespace {

class PinnedMapsTest : public XdpProgramTest {
 protected:
  // Pins a new map of `type` and sizes where the limiter's map `name` was pinned.
  void pinInstead(const std::string& name, bpf_map_type type, uint32_t key_size,
                  uint32_t value_size, uint32_t max_entries, uint32_t flags = 0) {
    const std::string path = mapPinPath(pin_name_, name);
    ASSERT_EQ(unlink(path.c_str()), 0) << path << ": " << std::strerror(errno);
    LIBBPF_OPTS(bpf_map_create_opts, options, .map_flags = flags);
    UniqueFd map(bpf_map_create(type, name.c_str(), key_size, value_size, max_entries, &options));
    ASSERT_TRUE(map.valid()) << std::strerror(errno);
    ASSERT_EQ(bpf_obj_pin(map.get(), path.c_str()), 0) << std::strerror(errno);
  }

  // The test never attaches: a pin where the link's goes (the counters map) makes the
  // limiter open as attached.
  void pinStandInLink() {
    UniqueFd stand_in(bpf_obj_get(mapPinPath(pin_name_, "counters").c_str()));
    ASSERT_TRUE(stand_in.valid()) << std::strerror(errno);
    ASSERT_EQ(bpf_obj_pin(stand_in.get(), linkPinPath(pin_name_).c_str()), 0)
        << std::strerror(errno);
  }

  // The one line XdpLimiterMaps::open refuses the pins with ("" if it opened them).
  std::string refusal() {
    auto maps = XdpLimiterMaps::open(pin_name_);
    return maps.ok() ? "" : maps.error().message;
  }
};

TEST_F(PinnedMapsTest, EveryMapOfTheTableOpensFromPinsOfThisLayout) {
  load({sourceRule(100, 100)});
  auto maps = XdpLimiterMaps::open(pin_name_);
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  int opened = 0, missing = 0;
  maps->forEachMap([&](const auto& map) { (map.fd() >= 0 ? opened : missing)++; });
  EXPECT_EQ(opened, 22);
  EXPECT_EQ(missing, 0);
}

TEST_F(PinnedMapsTest, AMapWhoseValuesHaveAnotherSizeIsRefused) {
  load({sourceRule(100, 100)});
  const uint32_t older = sizeof(fg_rule) + 8;
  pinInstead("rules", BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), older, FG_MAX_RULES * FG_RULE_SETS);
  const std::string message = refusal();
  EXPECT_EQ(message, "the pinned map 'rules' (" + mapPinPath(pin_name_, "rules") + ") has " +
                         std::to_string(older) + "-byte values, this floodgate expects " +
                         std::to_string(sizeof(fg_rule)) +
                         " (pinned by another version): run 'floodgate detach " + pin_name_ +
                         "', then attach again (bucket state starts over)");
}

TEST_F(PinnedMapsTest, ATrieWhoseKeysHaveAnotherSizeIsRefused) {
  load({sourceRule(100, 100)});
  // an IPv4 key where the IPv6 ban trie belongs
  pinInstead("bans_v6", BPF_MAP_TYPE_LPM_TRIE, sizeof(fg_lpm_v4), sizeof(fg_ban), 16,
             BPF_F_NO_PREALLOC);
  const std::string message = refusal();
  EXPECT_NE(message.find("'bans_v6'"), std::string::npos) << message;
  EXPECT_NE(message.find("has 8-byte keys, this floodgate expects 20 "), std::string::npos)
      << message;
  EXPECT_NE(message.find("floodgate detach " + pin_name_), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(PinnedMapsTest, APerCpuArrayOfAnotherLayoutIsRefused) {
  load({sourceRule(100, 100)});
  pinInstead("counters", BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(uint32_t), sizeof(uint64_t),
             static_cast<uint32_t>(FG_VERDICT_COUNT) * FG_REASON_COUNT);
  const std::string message = refusal();
  EXPECT_NE(message.find("'counters'"), std::string::npos) << message;
  EXPECT_NE(message.find("has 8-byte values, this floodgate expects 16 "), std::string::npos)
      << message;
}

// A program of another version counts another number of reasons: its counters at this
// build's indices would be misnamed (an older one's drop/rate read as pass/link_control), so
// they are refused instead. A larger map, whose every index this build reads would be there.
TEST_F(PinnedMapsTest, CountersOfAnotherNumberOfReasonsAreRefused) {
  pin_name_ = "bpfc-" + std::to_string(getpid());  // XdpLimiter::open takes interface names
  load({sourceRule(100, 100)});
  pinInstead("counters", BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(uint32_t), sizeof(fg_counter),
             static_cast<uint32_t>(FG_VERDICT_COUNT) * (FG_REASON_COUNT + 1));
  ASSERT_NO_FATAL_FAILURE(pinStandInLink());
  auto limiter = XdpLimiter::open(pin_name_);
  ASSERT_TRUE(limiter.ok()) << limiter.error().message;
  auto rows = limiter->counters();
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message.find("floodgate detach " + pin_name_), std::string::npos)
      << rows.error().message;
  EXPECT_TRUE(limiter->ruleCounters().ok());  // the rest of the limiter still reads
}

// A limiter attached by a floodgate from before the link-control counter has no pin of it:
// the limiter still opens (every command works on it) and reads the count as none; a pin of
// that name in another layout is refused.
TEST_F(PinnedMapsTest, TheLinkControlCounterMayBeMissingButNotOfAnotherLayout) {
  pin_name_ = "bpfl-" + std::to_string(getpid());  // XdpLimiter::open takes interface names
  load({sourceRule(100, 100)});
  const std::string path = mapPinPath(pin_name_, "link_ctl_over");
  ASSERT_EQ(unlink(path.c_str()), 0) << std::strerror(errno);
  ASSERT_NO_FATAL_FAILURE(pinStandInLink());
  auto limiter = XdpLimiter::open(pin_name_);
  ASSERT_TRUE(limiter.ok()) << limiter.error().message;
  auto over = limiter->linkControlOverBudget();
  ASSERT_TRUE(over.ok()) << over.error().message;
  EXPECT_FALSE(over->has_value());
  EXPECT_TRUE(limiter->counters().ok());

  UniqueFd other(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "link_ctl_over", sizeof(uint32_t),
                                sizeof(uint64_t), 1, nullptr));
  ASSERT_TRUE(other.valid()) << std::strerror(errno);
  ASSERT_EQ(bpf_obj_pin(other.get(), path.c_str()), 0) << std::strerror(errno);
  auto refused = limiter->linkControlOverBudget();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'link_ctl_over'"), std::string::npos)
      << refused.error().message;
}

// Every reload counts itself in the write generation pinned beside the maps: a limiter object
// tells another's reload (a daemon, one by hand) from its own, and a limiter attached without
// the pin gets one at its first reload.
TEST_F(PinnedMapsTest, AReloadElsewhereIsToldApartFromOnesOwn) {
  const std::optional<bool> kYes(true), kNo(false);
  AttachOptions small;
  small.list_max_entries = 2;
  load({sourceRule(100, 100)}, small);
  const auto count = [&] {
    auto read = readWriteGeneration(pin_name_);
    EXPECT_TRUE(read.ok()) << read.error().message;
    return read.ok() ? read->value_or(0) : 0;
  };
  EXPECT_EQ(count(), 1u) << "the load's reload";
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo);
  reload({sourceRule(50, 50)});
  EXPECT_EQ(count(), 2u);
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo) << "its own";

  auto other = bumpWriteGeneration(pin_name_);  // what another process's reload does
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(*other, 3u);
  EXPECT_EQ(limiter().reloadedElsewhere(), kYes);
  // an object opened after that reload, told of the count its own attach wrote before it
  limiter().sawWriteGeneration(*other);
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo);
  limiter().sawWriteGeneration(0);  // no count written: what it saw stays
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo);
  limiter().sawWriteGeneration(*other - 1);
  EXPECT_EQ(limiter().reloadedElsewhere(), kYes);
  reload({sourceRule(100, 100)});
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo) << "written again by this one";

  // a reload its checks refuse writes nothing, and counts nothing
  AttachOptions too_long;
  too_long.interface = pin_name_;
  too_long.rules = named({sourceRule(100, 100)});
  too_long.deny = std::vector<Cidr>{*parseCidr("10.0.0.1/32"), *parseCidr("10.0.0.2/32"),
                                    *parseCidr("10.0.0.3/32")};
  const uint64_t before = count();
  EXPECT_FALSE(limiter().reload(too_long).ok());
  EXPECT_EQ(count(), before);
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo);

  // an object whose maps are no longer the pinned ones (detached, and another limiter's
  // settings pinned since) would write maps no program runs with: it refuses, and counts
  // nothing on the count found at the path, which is the other limiter's
  const uint64_t others = count();
  const std::string settings_pin = mapPinPath(pin_name_, "settings_map");
  UniqueFd own_settings(bpf_obj_get(settings_pin.c_str()));
  ASSERT_TRUE(own_settings.valid()) << std::strerror(errno);
  pinInstead("settings_map", BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(fg_settings), 1);
  AttachOptions stale;
  stale.interface = pin_name_;
  stale.rules = named({sourceRule(100, 100)});
  Status refused_stale = limiter().reload(stale);
  ASSERT_FALSE(refused_stale.ok());
  EXPECT_NE(refused_stale.error().message.find("nothing was written; run it again"),
            std::string::npos)
      << refused_stale.error().message;
  EXPECT_EQ(count(), others);
  ASSERT_EQ(unlink(settings_pin.c_str()), 0) << std::strerror(errno);
  ASSERT_EQ(bpf_obj_pin(own_settings.get(), settings_pin.c_str()), 0) << std::strerror(errno);

  // a limiter from before the count, or one being detached, has none pinned: that is no
  // reload elsewhere, and the next reload pins one
  ASSERT_EQ(unlink(mapPinPath(pin_name_, kWriteGenerationName).c_str()), 0);
  auto none = readWriteGeneration(pin_name_);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo);
  reload({sourceRule(100, 100)});
  EXPECT_EQ(count(), 1u);
  EXPECT_EQ(limiter().reloadedElsewhere(), kNo);

  // a pin of that name that is no array of one count is refused, not misread
  ASSERT_EQ(unlink(mapPinPath(pin_name_, kWriteGenerationName).c_str()), 0);
  UniqueFd per_cpu(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, kWriteGenerationName, sizeof(uint32_t),
                                  sizeof(uint64_t), 1, nullptr));
  ASSERT_TRUE(per_cpu.valid()) << std::strerror(errno);
  ASSERT_EQ(bpf_obj_pin(per_cpu.get(), mapPinPath(pin_name_, kWriteGenerationName).c_str()), 0);
  auto refused = readWriteGeneration(pin_name_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not an array of one count"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(limiter().reloadedElsewhere(), std::nullopt) << "neither, where it cannot be read";
}

// A program swapped onto floodgate's link by hand (`bpftool link update`) limits nothing: it
// is told from floodgate's by whether it uses the limiter's maps.
TEST_F(PinnedMapsTest, AProgramIsToldByWhetherItUsesTheLimitersMaps) {
  load({sourceRule(100, 100)});
  auto own = programInfo(loaded_->programFd());
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(limiter().programUsesMaps(own->id), std::optional<bool>(true));
  // r0 = XDP_PASS; exit
  const bpf_insn pass[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  UniqueFd other(bpf_prog_load(BPF_PROG_TYPE_XDP, "pass", "GPL", pass, 2, nullptr));
  ASSERT_TRUE(other.valid()) << std::strerror(errno);
  auto foreign = programInfo(other.get());
  ASSERT_TRUE(foreign.ok()) << foreign.error().message;
  EXPECT_EQ(limiter().programUsesMaps(foreign->id), std::optional<bool>(false));
}

}  // namespace
}  // namespace floodgate::test
