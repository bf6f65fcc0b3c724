// SPDX-License-Identifier: MIT
// The running limiter of one interface: attach with pins, open by pins, and the map
// operations behind every CLI command.
#include "controller/xdp_limiter.h"

#include <bpf/bpf.h>
#include <net/if.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <set>

#include "controller/list_filter.h"
#include "controller/merged_packet_warning.h"
#include "controller/rule_compiler.h"
#include "controller/syn_cookie_host.h"
#include "fg_gcra.h"
#include "fg_window.h"
#include "floodgate/common/random_bytes.h"
#include "floodgate/common/text.h"
#include "kernel/pins.h"
#include "kernel/system.h"
#include "kernel/write_generation.h"
#include "kernel/xdp_neighbour.h"

namespace floodgate {
namespace {

static_assert(sizeof(fg_rule) % 8 == 0);
static_assert(sizeof(fg_slot) == 64, "fg_slot layout changed: keep it in step with the program");
static_assert(sizeof(fg_active) == 8, "the active set is flipped with one 8-byte store");
static_assert(sizeof(fg_counter) == 16);
static_assert(sizeof(fg_lpm_v4) == 8 && sizeof(fg_lpm_v6) == 20);
static_assert(offsetof(fg_rule, limits) % 8 == 0);

int listIndex(ListKind kind) { return kind == ListKind::kAllow ? FG_LIST_ALLOW : FG_LIST_DENY; }

// Mirrors the program's fg_slot_idle: nobody is limited by this slot any more.
bool slotIdle(const fg_slot& slot, uint64_t now) {
  for (uint64_t word : slot.state) {
    if (slot.algorithm == FG_ALG_TOKEN_BUCKET) {
      if (fg_bucket_ahead(word, now, 0) != 0) return false;
    } else if (slot.window_ms && !fg_window_idle(word, slot.algorithm, now >> FG_TIME_SHIFT,
                                                 slot.window_ms * 1000000ULL)) {
      return false;
    }
  }
  return true;
}

// The key of the source table's hash: secret and never 0 (0 is "not set yet"). With no
// randomness there is no seed, rather than a known one, with which an attacker could aim
// made-up sources at one set of the table and push an honest source out of it.
Result<uint64_t> randomSeed() {
  uint64_t seed = 0;
  while (seed == 0) {
    if (Status s = randomBytes(&seed, sizeof(seed)); !s) {
      return Error::failure("cannot key the source table: " + s.error().message);
    }
  }
  return seed;
}

}  // namespace

bool validTableSlots(uint64_t slots) {
  const bool power_of_two = slots && !(slots & (slots - 1));
  return power_of_two && slots >= FG_TABLE_WAYS && slots <= FG_LARGEST_TABLE_SLOTS;
}

std::string tableSlotsLimit() {
  return "a power of two from " + std::to_string(FG_TABLE_WAYS) + " to " +
         std::to_string(FG_LARGEST_TABLE_SLOTS);
}

Status validate(const AttachOptions& options) {
  if (!validTableSlots(options.table_slots)) {
    return Error::usage("table size must be " + tableSlotsLimit() + ", not " +
                        std::to_string(options.table_slots));
  }
  if (options.list_max_entries > FG_LARGEST_LIST_ENTRIES) {
    return Error::usage("list size must be at most " + std::to_string(FG_LARGEST_LIST_ENTRIES) +
                        ", not " + std::to_string(options.list_max_entries));
  }
  if (auto budget = compileLinkControl(options.link_control); !budget) return budget.error();
  if (options.keep_rules) return okStatus();
  if (options.rules.size() > FG_MAX_RULES) {
    return Error::usage("at most " + std::to_string(FG_MAX_RULES) + " rules are supported, not " +
                        std::to_string(options.rules.size()));
  }
  std::set<std::string> names;
  for (const RuleSpec& spec : options.rules) {
    if (!names.insert(spec.name).second) {
      return Error::usage("two rules are named '" + spec.name + "'");
    }
    if (auto compiled = compileRule(spec); !compiled) return compiled.error();
  }
  return okStatus();
}

const char* listKindName(ListKind kind) { return kind == ListKind::kAllow ? "allow" : "deny"; }

const char* verdictName(uint32_t verdict) {
  static const char* const kNames[] = {"pass", "drop", "monitor"};
  return verdict < FG_VERDICT_COUNT ? kNames[verdict] : "unknown";
}

const char* reasonName(uint32_t reason) {
  static const char* const kNames[] = {"rate",     "deny",   "ban",     "allow",       "malformed",
                                       "fragment", "non_ip", "default", "link_control"};
  static_assert(std::size(kNames) == FG_REASON_COUNT, "a name for every enum fg_reason");
  return reason < FG_REASON_COUNT ? kNames[reason] : "unknown";
}

std::vector<std::string> XdpLimiter::attachedInterfaces() { return pinnedInterfaces(); }

bool XdpLimiter::attachedTo(const std::string& interface) {
  return checkInterfaceName(interface).ok() && pinnedAsAttached(interface);
}

Result<XdpLimiter> XdpLimiter::open(const std::string& interface) {
  // before the name becomes part of any path: ".." or "a/b" must never reach the bpffs
  if (Status s = checkInterfaceName(interface); !s) return s.error();
  if (!pinnedAsAttached(interface)) {
    return Error::failure("floodgate is not attached to '" + interface +
                          "' (see 'floodgate status'; attach with 'floodgate attach " + interface +
                          " --rate PPS')");
  }
  return openMaps(interface);
}

Result<XdpLimiter> XdpLimiter::openMaps(const std::string& interface) {
  XdpLimiter limiter;
  limiter.interface_ = interface;
  limiter.writer_ = WriterLock(pinDirectory(interface));
  auto maps = XdpLimiterMaps::open(interface);
  if (!maps) return maps.error();
  limiter.maps_ = std::move(*maps);
  auto hz = kernelHz();
  if (!hz) return hz.error();
  limiter.tick_units_ = fg_tick_units(*hz);
  const XdpLimiterMaps& m = limiter.maps_;
  auto counters = mapInfo(m.counters.fd(), m.counters.name());
  if (!counters) return counters.error();
  limiter.counter_slots_ = counters->max_entries;
  if (auto generation = readWriteGeneration(interface); generation && *generation) {
    limiter.written_generation_ = **generation;
  }
  auto settings = MappedValue<fg_settings>::map(m.settings.fd(), m.settings.name());
  if (!settings) return settings.error();
  limiter.settings_value_ = std::move(*settings);
  auto active = MappedValue<fg_active>::map(m.active.fd(), m.active.name());
  if (!active) return active.error();
  limiter.active_value_ = std::move(*active);
  for (int list : {FG_LIST_ALLOW, FG_LIST_DENY}) {
    auto filter = MappedValue<uint64_t>::map(m.list_filters[list].fd(), m.list_filters[list].name(),
                                             FG_LIST_FILTER_WORDS);
    if (!filter) return filter.error();
    limiter.list_filters_[list] = std::move(*filter);
  }
  return limiter;
}

std::optional<bool> XdpLimiter::reloadedElsewhere() const {
  auto generation = readWriteGeneration(interface_);
  if (!generation) return std::nullopt;
  return *generation && **generation != written_generation_;
}

bool XdpLimiter::holdsPinned() const {
  // by the settings map, which every limiter has and no reload or replace makes again. False
  // only when seen to be so (no pin, or another map's): a look that fails for another reason
  // (out of descriptors or memory) says nothing of the pins.
  const std::string& name = maps_.settings.name();
  UniqueFd pinned(bpf_obj_get(mapPinPath(interface_, name).c_str()));
  if (!pinned.valid()) return errno != ENOENT;
  auto held = mapInfo(maps_.settings.fd(), name);
  auto running = mapInfo(pinned.get(), name);
  if (!held || !running) return true;
  return held->id == running->id;
}

Result<LoadedXdpLimiter> XdpLimiter::load(const AttachOptions& options) {
  if (Status s = validate(options); !s) return s.error();
  if (Status s = ensureBpffs(); !s) return s.error();
  if (Status s = createPinDirectory(options.interface); !s) return s.error();
  auto hz = options.test_clock_hz ? Result<uint32_t>(options.test_clock_hz) : kernelHz();
  if (!hz) return hz.error();
  LoadSettings load{options.interface,          options.table_slots,
                    options.list_max_entries,   fg_tick_units(*hz),
                    static_cast<uint32_t>(*hz), options.test_clock_hz != 0,
                    options.test_older_program};
  auto skeleton = loadProgram(load);
  if (!skeleton) return skeleton.error();
  auto limiter = XdpLimiter::openMaps(options.interface);
  if (!limiter) return limiter.error();
  // before the rules: a reload that brings a cookie rule loads this build's handover
  if (Status s = forgetSynCookieHandover(options.interface); !s) return s.error();
  limiter->tick_units_ = load.tick_units;  // the test clock's tick, if it has one
  if (Status s = limiter->rebuildListFilters(); !s) return s.error();
  if (Status s = limiter->reload(options); !s) return s.error();
  // A fresh table, or one a replace found of this layout (fitToRunning); only a program of
  // this build loaded over the table says so: a reload leaves the mark of the program that
  // runs, so a replace later still sees a table of another layout.
  auto marked = limiter->settings_value_.get();
  std::atomic_ref<uint32_t>(marked->table_layout).store(FG_TABLE_LAYOUT);
  return LoadedXdpLimiter{std::move(*skeleton), std::move(*limiter)};
}

int LoadedXdpLimiter::programFd() const { return loadedProgramFd(*skeleton); }

void LoadedXdpLimiter::setTestJiffies(uint64_t jiffies) {
  // .bss is mapped into this process: the store is what the program reads next
  __atomic_store_n(&skeleton->bss->test_jiffies, jiffies, __ATOMIC_RELEASE);
}

Status XdpLimiter::writePolicies(const AttachOptions& options) {
  auto budget = compileLinkControl(options.link_control, tick_units_);
  if (!budget) return budget.error();
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  // field by field with atomics: the program updates other fields (ban counts) meanwhile
  fg_settings& settings = *settings_value_.get();
  std::atomic_ref<uint32_t>(settings.malformed_policy)
      .store(static_cast<uint32_t>(options.malformed));
  std::atomic_ref<uint32_t>(settings.fragment_policy)
      .store(static_cast<uint32_t>(options.fragments));
  std::atomic_ref<uint32_t>(settings.unknown_ext_policy)
      .store(static_cast<uint32_t>(options.unknown_ext));
  std::atomic_ref<uint32_t>(settings.monitor).store(options.monitor ? 1 : 0);
  // the bucket's time stays: a new budget starts from what the old one had spent
  std::atomic_ref<__u64>(settings.link_control.capacity).store(budget->capacity);
  std::atomic_ref<__u64>(settings.link_control.interval).store(budget->interval);
  __u64 expected = 0;
  if (std::atomic_ref<__u64>(settings.hash_seed).load() == 0) {
    auto seed = randomSeed();
    if (!seed) return seed.error();
    std::atomic_ref<__u64>(settings.hash_seed).compare_exchange_strong(expected, *seed);
  }
  return okStatus();
}

Result<std::vector<fg_rule>> XdpLimiter::activeRules() const {
  auto current = maps_.active.lookup(0);
  if (!current) return current.error();
  std::vector<fg_rule> out;
  for (uint32_t i = 0; i < current->rule_count && i < FG_MAX_RULES; ++i) {
    auto rule = maps_.rules.lookup((current->set & 1) * FG_MAX_RULES + i);
    if (!rule) return rule.error();
    out.push_back(*rule);
  }
  return out;
}

Result<std::vector<CounterRow>> XdpLimiter::counters() const {
  // A program of another version may count another number of reasons, and its (verdict,
  // reason) pairs sit at other indices: read as this build's, they would be misnamed.
  constexpr uint32_t kSlots = static_cast<uint32_t>(FG_VERDICT_COUNT) * FG_REASON_COUNT;
  if (counter_slots_ != kSlots) {
    return Error::failure("the limiter on '" + interface_ + "' counts " +
                          std::to_string(counter_slots_) +
                          " verdict and reason pairs, this floodgate " + std::to_string(kSlots) +
                          " (attached by another version): run 'floodgate detach " + interface_ +
                          "', then attach again");
  }
  std::vector<CounterRow> rows;
  for (uint32_t verdict = 0; verdict < FG_VERDICT_COUNT; ++verdict) {
    for (uint32_t reason = 0; reason < FG_REASON_COUNT; ++reason) {
      auto values = maps_.counters.lookup(FG_COUNTER_INDEX(verdict, reason));
      if (!values) return values.error();
      CounterRow row{verdict, reason, 0, 0};
      for (const fg_counter& c : *values) {
        row.packets += c.packets;
        row.bytes += c.bytes;
      }
      rows.push_back(row);
    }
  }
  return rows;
}

Result<std::vector<RuleCounters>> XdpLimiter::ruleCounters() const {
  auto rules = activeRules();
  if (!rules) return rules.error();
  std::vector<RuleCounters> out;
  for (const fg_rule& rule : *rules) {
    RuleCounters entry;
    entry.id = rule.id;
    entry.name = rule.name;
    entry.syn_cookies = rule.syn_cookies != FG_SYN_COOKIES_OFF;
    for (uint32_t verdict = 0; verdict < FG_VERDICT_COUNT; ++verdict) {
      auto values = maps_.rule_counters.lookup(FG_RULE_COUNTER_INDEX(rule.id, verdict));
      if (!values) return values.error();
      CounterRow& row = entry.by_verdict[verdict];
      row.verdict = verdict;
      for (const fg_counter& c : *values) {
        row.packets += c.packets;
        row.bytes += c.bytes;
      }
    }
    for (uint32_t stat = 0; stat < FG_TABLE_STAT_COUNT; ++stat) {
      auto values = maps_.table_stats.lookup(FG_TABLE_STAT_INDEX(rule.id, stat));
      if (!values) return values.error();
      for (uint64_t v : *values) entry.table[stat] += v;
    }
    out.push_back(entry);
  }
  return out;
}

Result<XdpLimiterStatus> XdpLimiter::status() const {
  auto out = summary();
  if (!out) return out;
  countTracked(*out);
  out->merged_packets = mergedPackets();
  return out;
}

std::optional<std::string> XdpLimiter::mergedPackets() const {
  // read each time, not kept from the attach: features change after it (a container
  // turning its veth's TSO back on, a port added to a bond)
  const HookLink hook = hookLink(interface_);
  if (hook == HookLink::kNone) {
    auto slot = progArraySlot();  // in the array, not emptied or replaced there
    if (!slot || !slot->second.slot) return std::nullopt;
  } else if (hook != HookLink::kLive) {
    return std::nullopt;
  }
  auto ifindex = interfaceIndex(interface_);
  if (!ifindex || queryXdp(*ifindex).mode != "generic") return std::nullopt;
  return mergedPacketWarning(interface_);
}

Result<XdpLimiterStatus> XdpLimiter::summary() const {
  XdpLimiterStatus out;
  out.interface = interface_;
  auto settings = maps_.settings.lookup(0);
  if (!settings) return settings.error();
  out.settings = *settings;
  out.monitor = settings->monitor != 0;
  auto rules = activeRules();
  if (!rules) return rules.error();
  out.rules = *rules;

  if (auto info = pinnedLinkInfo(); info) {
    out.program_id = info->prog_id;
    auto ifindex = interfaceIndex(interface_);
    const HookLink hook = hookLink(interface_);
    char renamed[IF_NAMESIZE] = {};
    if (hook == HookLink::kSevered) {
      out.mode = "severed";
    } else if (hook == HookLink::kMoved && if_indextoname(info->xdp.ifindex, renamed)) {
      out.mode = "moved";
      out.moved_to = renamed;
    } else {
      out.mode =
          ifindex ? queryXdp(*ifindex).mode : "unknown (interface in another network namespace)";
    }
  } else if (auto slot = progArraySlot(); slot) {
    out.program_id = slot->first;
    out.prog_array = slot->second;
    out.mode = "prog_array";
  }
  // floodgate_xdp or floodgate_older (bpf/floodgate.bpf.c): which walk this kernel took
  if (out.program_id != 0) {
    if (auto program = programInfoOfId(out.program_id)) out.program_name = program->name;
    out.foreign_program = programUsesMaps(out.program_id) == false;
  }
  if (auto next = nextProgram(interface_); next) {
    out.next_program = *next;
  } else {
    out.has_next_slot = false;
  }
  if (auto slot_count = tableSlots(); slot_count) out.table_slots = *slot_count;
  if (auto lists = listMaxEntries(); lists) out.list_max_entries = *lists;
  return out;
}

void XdpLimiter::countTracked(XdpLimiterStatus& out) const {
  // Tracked = owns a slot and is not idle. Status may walk the table; a scrape never does.
  if (auto now_units = nowUnits(); now_units) {
    uint64_t now = *now_units;
    const uint32_t batch = 4096;
    std::vector<uint32_t> keys(batch);
    std::vector<fg_slot> values(batch);
    uint32_t in_batch = 0, out_batch = 0;
    bool first = true;
    while (true) {
      uint32_t count = batch;
      LIBBPF_OPTS(bpf_map_batch_opts, opts);
      int err = bpf_map_lookup_batch(maps_.buckets.fd(), first ? nullptr : &in_batch, &out_batch,
                                     keys.data(), values.data(), &count, &opts);
      first = false;
      for (uint32_t i = 0; i < count; ++i) {
        const fg_slot& slot = values[i];
        if (!slot.fingerprint || slotIdle(slot, now)) continue;
        (slot.family == FG_FAMILY_V4 ? out.tracked_v4 : out.tracked_v6)++;
      }
      if (err != 0) break;  // ENOENT: walked the whole table
      in_batch = out_batch;
    }
  }
}

Result<fg_settings> XdpLimiter::settings() const { return maps_.settings.lookup(0); }

Result<TrackedSample> XdpLimiter::sampleTrackedSources(uint32_t first_slot,
                                                       uint32_t max_slots) const {
  TrackedSample out;
  auto slot_count = tableSlots();
  if (!slot_count) return slot_count.error();
  out.table_slots = *slot_count;
  if (out.table_slots == 0 || max_slots == 0) return out;
  out.first_slot = first_slot % out.table_slots;
  uint32_t count = std::min(max_slots, out.table_slots - out.first_slot);
  // the tick was read once when the maps were opened: a scrape reads only the jiffies
  auto now_units = nowUnits();
  if (!now_units) return now_units.error();
  uint64_t now = *now_units;
  std::vector<uint32_t> keys(count);
  std::vector<fg_slot> values(count);
  // An array's batch token is the key before the first one returned.
  uint32_t in_batch = out.first_slot - 1, out_batch = 0;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  int err = bpf_map_lookup_batch(maps_.buckets.fd(), out.first_slot == 0 ? nullptr : &in_batch,
                                 &out_batch, keys.data(), values.data(), &count, &opts);
  if (err != 0 && errno != ENOENT) {
    return Error::failure(std::string("cannot read the source table: ") + std::strerror(errno));
  }
  uint64_t v4 = 0, v6 = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const fg_slot& slot = values[i];
    if (!slot.fingerprint || slotIdle(slot, now)) continue;
    (slot.family == FG_FAMILY_V4 ? v4 : v6)++;
  }
  out.sampled = count;
  if (count > 0) {
    double scale = static_cast<double>(out.table_slots) / count;
    out.estimate_v4 = static_cast<double>(v4) * scale;
    out.estimate_v6 = static_cast<double>(v6) * scale;
  }
  return out;
}

void XdpLimiter::updateListCounts(ListKind kind, const int64_t (&delta)[2]) {
  fg_settings& settings = *settings_value_.get();
  uint32_t* counts = kind == ListKind::kAllow ? settings.allow_entries : settings.deny_entries;
  for (int family = 0; family < 2; ++family) {
    std::atomic_ref<uint32_t>(counts[family]).fetch_add(static_cast<uint32_t>(delta[family]));
  }
}

Result<size_t> XdpLimiter::listAdd(ListKind kind, const std::vector<Cidr>& cidrs) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  std::vector<Cidr> added;
  for (const Cidr& cidr : cidrs) {
    if (cidr.family == Family::kV4) {
      // the filter first: the program never meets a prefix whose /24s it does not mark
      uint64_t* filter = list_filters_[listIndex(kind)].get();
      forEachListFilterWord(cidr, [&](uint32_t word, uint64_t mask) {
        std::atomic_ref<uint64_t>(filter[word]).fetch_or(mask);
      });
    }
    // counted before it goes in and uncounted if it does not: the program skips the lookup
    // while its family's count is 0, so a count below the trie's entries, for an instant or
    // after an error, would leave a denied prefix unenforced; one above costs a lookup
    int64_t one[2] = {0, 0};
    one[static_cast<int>(cidr.family)] = 1;
    updateListCounts(kind, one);
    Result<bool> inserted = maps_.lists[listIndex(kind)].insertNew(cidr, 1);
    if (!inserted || !*inserted) {
      one[static_cast<int>(cidr.family)] = -1;
      updateListCounts(kind, one);
    }
    if (!inserted) {
      // all or none: a deny of half the prefixes asked for is not what was asked
      const bool undone = eraseListEntries(kind, added).ok();
      const std::string what =
          undone ? "; none of the " + std::to_string(cidrs.size()) + " given was added"
                 : "; " + std::to_string(added.size()) +
                       " of them were added and could not be taken out";
      if (inserted.error().message.find("No space") != std::string::npos ||
          inserted.error().message.find("Argument list too long") != std::string::npos) {
        return Error::failure(std::string("the ") + listKindName(kind) +
                              " list is full: raise the list size at attach" + what);
      }
      return Error::failure(inserted.error().message + what);
    }
    if (*inserted) added.push_back(cidr);
  }
  return added.size();
}

Result<size_t> XdpLimiter::listRemove(ListKind kind, const std::vector<Cidr>& cidrs) {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  return eraseListEntries(kind, cidrs);
}

Result<size_t> XdpLimiter::eraseListEntries(ListKind kind, const std::vector<Cidr>& cidrs) {
  size_t removed = 0;
  int64_t delta[2] = {0, 0};
  for (const Cidr& cidr : cidrs) {
    Result<bool> erased = maps_.lists[listIndex(kind)].erase(cidr);
    if (!erased) {
      updateListCounts(kind, delta);  // counts that drift from the tries reach 0 too soon
      return erased.error();
    }
    if (*erased) {
      ++removed;
      --delta[static_cast<int>(cidr.family)];
    }
  }
  updateListCounts(kind, delta);
  return removed;
}

Status XdpLimiter::rebuildListFilter(ListKind kind) {
  auto entries = listEntries(kind);
  if (!entries) return entries.error();
  std::vector<uint64_t> exact(FG_LIST_FILTER_WORDS, 0);
  for (const Cidr& cidr : *entries) {
    if (cidr.family != Family::kV4) continue;
    forEachListFilterWord(cidr, [&](uint32_t word, uint64_t mask) { exact[word] |= mask; });
  }
  // Word by word: a bit of a prefix still in the trie is set in both the old word and the
  // new, so the program never sees it clear; only bits of removed prefixes go.
  uint64_t* filter = list_filters_[listIndex(kind)].get();
  for (uint32_t word = 0; word < FG_LIST_FILTER_WORDS; ++word) {
    std::atomic_ref<uint64_t> live(filter[word]);
    if (live.load(std::memory_order_relaxed) != exact[word]) live.store(exact[word]);
  }
  std::atomic_ref<uint32_t>(settings_value_.get()->list_filters).fetch_or(1U << listIndex(kind));
  return okStatus();
}

Status XdpLimiter::rebuildListFilters() {
  auto writing = writer_.acquire(interface_);
  if (!writing) return writing.error();
  for (ListKind kind : {ListKind::kAllow, ListKind::kDeny}) {
    if (Status s = rebuildListFilter(kind); !s) return s;
  }
  return okStatus();
}

Result<std::vector<Cidr>> XdpLimiter::listEntries(ListKind kind) const {
  return maps_.lists[listIndex(kind)].keys();
}

bool XdpLimiter::allowListed(const Cidr& address) const {
  const auto& allow = maps_.lists[listIndex(ListKind::kAllow)];
  // a trie lookup of a prefix finds the longest entry that contains it
  if (allow.find(address)) return true;
  if (address.prefix == (address.family == Family::kV4 ? 32 : 128)) return false;
  // A prefix wider than an address (an IPv6 /64 a report names) may hold a narrower entry,
  // whose source a ban of the prefix would drop: found by reading the list, which only
  // such a lookup pays for, and only of the prefix's family (an IPv6 report does not read
  // a long IPv4 list). A list that cannot be read is taken to hold it: a ban may wait, a
  // trusted source must not be dropped.
  auto entries = allow.keys(address.family);
  if (!entries) return true;
  return std::any_of(entries->begin(), entries->end(),
                     [&](const Cidr& entry) { return covers(address, entry); });
}

}  // namespace floodgate
