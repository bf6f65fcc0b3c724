// SPDX-License-Identifier: MIT
// XdpLimiter: one interface's running XDP limiter, reached through its pins. Attaching,
// replacing, detaching, reading counters and changing lists and rules all go through it.
// Not thread-safe; separate processes may each hold one for the same interface.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/next_program.h"
#include "controller/rule_spec.h"
#include "controller/xdp_limiter_maps.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate_shared.h"
#include "kernel/mapped_value.h"
#include "kernel/writer_lock.h"
#include "kernel/xdp_program.h"

namespace floodgate {

enum class FramePolicy : uint32_t { kPass = FG_POLICY_PASS, kDrop = FG_POLICY_DROP };

struct AttachOptions {
  std::string interface;
  std::vector<RuleSpec> rules;  // ids must be unique
  XdpMode mode = XdpMode::kAuto;
  bool monitor = false;     // count would-be drops as monitor and pass them
  bool replace = false;     // swap the program of an attached limiter, keeping its state
  bool keep_rules = false;  // the running rules stay as they are (`rules` is not used)
  uint32_t table_slots = FG_DEFAULT_TABLE_SLOTS;
  uint32_t list_max_entries = FG_LIST_MAX_ENTRIES;
  // the kernel drops nearly all of them, and the rest (tiny first fragments) are attacks
  FramePolicy malformed = FramePolicy::kDrop;
  FramePolicy fragments = FramePolicy::kPass;
  // a chain the parser cannot follow hides the L4 header from every rule that needs it
  FramePolicy unknown_ext = FramePolicy::kDrop;
  // Neighbour Discovery and MLD from the link that pass by no rule (bpf/floodgate.bpf.c)
  LinkControlBudget link_control;
  // When set, the allow and deny lists become exactly these (a config file owns them);
  // when not, the lists are left as they are.
  std::optional<std::vector<Cidr>> allow;
  std::optional<std::vector<Cidr>> deny;
  // Tests only. Nonzero: the program's clock is not the kernel's jiffies but a clock of this
  // many ticks a second that moves only when the test sets it (LoadedXdpLimiter::setTestJiffies),
  // and rules are compiled for that tick. The controller's own readings of the time (bans
  // added by hand, ban lists, `top`) still read the kernel's jiffies.
  uint32_t test_clock_hz = 0;
  // Tests only: loads the program for kernels without may_goto (its rule walk a bpf_loop)
  // on this one too, so both programs are tested where the newer one loads.
  bool test_older_program = false;
  // Where the program runs. Empty: on the interface's XDP hook, by a link floodgate owns.
  // Else the path of an operator's pinned prog array: floodgate goes into its slot
  // `root_slot` (which must be empty), the operator's root program tail-calls it, and the
  // hook stays the operator's. A replace keeps where the running program is.
  std::string root_prog_array;
  uint32_t root_slot = 0;
  // The XDP program that gets what floodgate passes (a tail call). Unset: the one there
  // stays; set to none: the slot is emptied. An unchanged program (same name and
  // instructions) is not swapped, so its state survives a reload.
  std::optional<NextProgramSpec> next;
  // libxdp's multi-program dispatcher was asked for instead of chaining (--multiprog).
  bool multiprog = false;
};

// Whether `slots` can size the source table: a power of two from FG_TABLE_WAYS to
// FG_LARGEST_TABLE_SLOTS.
bool validTableSlots(uint64_t slots);
// That limit in words, for messages: "a power of two from 4 to 67108864".
std::string tableSlotsLimit();

// Checks `options` against every limit on them, before anything is loaded or changed: the
// table and list sizes, and (unless keep_rules) the number of rules, their names and each
// rule's own limits (compileRule). One usage error for the first limit broken.
Status validate(const AttachOptions& options);

// One ban, as `ban list` shows it.
struct BanEntry {
  Cidr cidr;
  uint64_t remaining_ns = 0;  // 0 with `forever`
  bool forever = false;
  std::string by;  // the rule that started it, "manual" or "escalation"
};

// What a new ban does to one already running for the same prefix.
enum class BanUpdate { kReplace, kExtend };

// Who starts a ban that no rule started: an operator, the daemon escalating an address
// the HTTP layer reported, or the daemon applying a ban the fleet shared. `ban list` and
// the event log show which.
enum class BanOrigin : uint32_t {
  kManual = FG_BAN_MANUAL,
  kEscalation = FG_BAN_ESCALATION,
  kFleet = FG_BAN_FLEET
};

// How `ban list` and the event log name whoever started a ban with `rule_id`: "manual",
// "escalation", the rule's name in `rules`, or "rule#N" for a rule no longer there (one
// word, for the event log).
std::string banStartedBy(uint32_t rule_id, const std::vector<fg_rule>& rules);

// A new threshold for one rule (`floodgate set`); unset fields keep their value.
struct LimitChange {
  std::optional<uint64_t> pps, burst, bits_per_s, burst_bytes;
};

struct AttachReport {
  XdpMode mode = XdpMode::kNative;
  bool replaced = false;
  // Set when floodgate runs in an operator's prog array: "slot 2 of prog array NAME (id 7)".
  std::string prog_array_slot;
  std::vector<std::string> warnings;
  // What the attach put in place (a relink alone loads no program: 0 for both): the
  // program's id, and the limiter's write count after the attach's write of its rules
  // (kernel/write_generation.h). A process that opens the limiter afterwards tells a
  // replace or reload by another in between from its own by them.
  uint32_t program_id = 0;
  uint64_t write_generation = 0;
};

// What detach did to floodgate's neighbours, one line each for the operator.
struct DetachReport {
  std::vector<std::string> notes;
};

// Where a running program sits when it does not own the XDP hook.
struct ProgArraySlot {
  uint32_t map_id = 0;
  std::string map_name;
  std::optional<uint32_t> slot;  // none: no longer in the array (emptied or replaced there)
};

enum class ListKind { kAllow, kDeny };
const char* listKindName(ListKind kind);

// One (verdict, reason) series of the interface counters, summed over CPUs.
struct CounterRow {
  uint32_t verdict = 0;
  uint32_t reason = 0;
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

// Per-rule counters by verdict, and what became of the sources the rule saw with no slot
// of their own (indexed by enum fg_table_stat).
struct RuleCounters {
  uint32_t id = 0;
  std::string name;
  CounterRow by_verdict[FG_VERDICT_COUNT];
  uint64_t table[FG_TABLE_STAT_COUNT] = {};
  bool syn_cookies = false;  // the rule answers SYNs with cookies (always or auto)
};

// What became of the program's state-change events, summed over CPUs.
struct EventStats {
  uint64_t emitted = 0;
  uint64_t suppressed = 0;  // over the per-CPU budget
  uint64_t lost = 0;        // the ring buffer was full
};

struct XdpLimiterStatus {
  std::string interface;
  uint32_t program_id = 0;
  std::string program_name;  // floodgate_xdp; floodgate_older without may_goto (or refused)
  // native | generic | unknown (interface in another netns) | prog_array | severed (the
  // interface was deleted since the attach) | moved (renamed: see XdpLimiter::hookLink)
  std::string mode;
  std::string moved_to;  // mode "moved": the name of the device the limiter runs on
  // The program on the pinned link does not use these maps (put there outside floodgate):
  // nothing is limited.
  bool foreign_program = false;
  std::optional<ProgArraySlot> prog_array;  // set when floodgate runs in an operator's array
  std::optional<ProgramInfo> next_program;  // what gets the packets floodgate passes
  bool has_next_slot = true;  // false: attached by a floodgate without a next-program slot
  bool monitor = false;
  uint32_t table_slots = 0;
  uint32_t list_max_entries = 0;  // entries each allow and deny list may hold
  fg_settings settings{};
  std::vector<fg_rule> rules;
  uint64_t tracked_v4 = 0;  // sources that own a slot and are not idle
  uint64_t tracked_v6 = 0;
  // generic mode: what merges a flow's segments before the program, read now
  // (mergedPackets()); status() only, summary() leaves it out
  std::optional<std::string> merged_packets;
};

// A bounded look at the source table (for metrics): `sampled` consecutive slots from
// `first_slot`, and the tracked sources among them scaled up to the whole table. An
// estimate, exact only when the sample covers the table.
struct TrackedSample {
  uint32_t first_slot = 0;
  uint32_t sampled = 0;
  uint32_t table_slots = 0;
  double estimate_v4 = 0;
  double estimate_v6 = 0;
};

const char* verdictName(uint32_t verdict);
const char* reasonName(uint32_t reason);

struct LoadedXdpLimiter;

// How setLimits' error for a rule the running set does not have begins: a caller that
// governs rules (adaptive) tells it from a write that failed.
inline const std::string kNoRuleNamed = "no rule named '";

class XdpLimiter {
 public:
  // Loads and configures the program (policies, rules) with maps pinned under
  // options.interface, without attaching it anywhere: for attach and for BPF test runs.
  static Result<LoadedXdpLimiter> load(const AttachOptions& options);

  // Loads, configures and attaches; pins everything under /sys/fs/bpf/floodgate/IFACE/.
  // On failure nothing new is left attached or pinned. With options.replace over a running
  // limiter, its table and list sizes are kept (a warning in the report if others were asked).
  static Result<AttachReport> attach(const AttachOptions& options);

  // Finds the limiter attached to `interface` through its pins.
  static Result<XdpLimiter> open(const std::string& interface);

  // Detaches the program and removes its pins, taking floodgate alone out of the path:
  // with `keep_next`, the program behind it (if any) takes its place (attached directly to
  // the hook in the same mode, or put in the operator's prog array slot); without, the hook
  // or slot is left empty. The report says which.
  static Result<DetachReport> detach(const std::string& interface, bool keep_next = true);

  // Whether a limiter is attached to `interface` (its link is pinned).
  static bool attachedTo(const std::string& interface);

  // What the pinned link of the limiter of `interface` is on. The kernel cuts a link loose
  // from a device it deletes, and the link lives on as long as its pin: so the limiter of an
  // interface deleted, or deleted and made again under its name, is pinned but runs nowhere
  // (kSevered). kMoved: on a device of another name in this namespace (the interface was
  // renamed), so not on the one of this name. kNone: no link pinned (not attached, or in an
  // operator's prog array).
  enum class HookLink { kNone, kLive, kSevered, kMoved };
  static HookLink hookLink(const std::string& interface);

  // Attaches the program of a limiter whose link was severed to the interface of that name
  // now, by a new link in `mode` that takes the old one's pin: its maps, and so its buckets,
  // bans and lists, are kept. Nothing to do (no error) when the link is live.
  static Result<AttachReport> relink(const std::string& interface, XdpMode mode);

  // Interfaces with a pinned limiter.
  static std::vector<std::string> attachedInterfaces();

  const std::string& interface() const { return interface_; }
  // Whether the maps pinned for this limiter's interface are the ones this object has open:
  // not once another command detached the interface (its pins are gone), or detached it and
  // attached it again (they are another limiter's). This object then reads and writes maps
  // that no program runs with. True when the pins cannot be looked at (out of descriptors or
  // memory): false only when seen to be so.
  bool holdsPinned() const;
  // The id of the program that runs with these maps (on the pinned link, or in the prog
  // array slot floodgate was put in); 0 if none is found. A replace (`attach --replace`)
  // puts another program over the same maps: the id tells it apart.
  uint32_t runningProgramId() const;
  // Whether the program with `program_id` uses this object's maps: false for one put on the
  // pinned link outside floodgate (`bpftool link update`), which limits nothing; none when
  // the kernel does not say (the program gone, or CAP_SYS_ADMIN missing).
  std::optional<bool> programUsesMaps(uint32_t program_id) const;
  // Whether another process (or another object of this one) reloaded the limiter's config
  // since this object last reloaded it or opened it: the write generation pinned beside the
  // maps (kernel/write_generation.h) moved past the one this object saw. False when no
  // generation is pinned (an older limiter not reloaded since, or one being detached); none
  // when it cannot be read (a pin of another layout, a failing read), which says neither.
  std::optional<bool> reloadedElsewhere() const;
  // Takes `generation`, the count an attach of this limiter wrote (AttachReport), as the one
  // this object saw, in place of the one read when it was opened after that attach: a reload
  // by another process in between then reads as theirs. 0 (no count written) changes nothing.
  void sawWriteGeneration(uint64_t generation) {
    if (generation != 0) written_generation_ = generation;
  }

  Result<std::vector<CounterRow>> counters() const;
  Result<std::vector<RuleCounters>> ruleCounters() const;
  Result<XdpLimiterStatus> status() const;  // walks the whole source table
  // status() but the tracked sources (left 0): no walk of the table, which takes seconds
  // for a large one.
  Result<XdpLimiterStatus> summary() const;
  // What merges a flow's segments before the program (mergedPacketWarning), read now, where
  // the interface runs XDP in generic mode: this limiter's link, or in prog-array mode the
  // operator's root program. nullopt in native mode, or with the limiter off its interface.
  std::optional<std::string> mergedPackets() const;

  // A copy of the whole source table, read through its memory mapping (for `top`).
  Result<std::vector<fg_slot>> slots() const;
  Result<EventStats> eventStats() const;
  // Link-control frames that came past the link's budget (and met the rules), summed over
  // the CPUs; none for a limiter whose program does not count them (attached by an older
  // floodgate: a replace adds the counter).
  Result<std::optional<fg_counter>> linkControlOverBudget() const;

  // The settings entry (list and ban counts, policies); one map read.
  Result<fg_settings> settings() const;
  // Reads at most `max_slots` slots from `first_slot` (wrapping at the table's end is the
  // caller's job: fewer are read there) in one batch syscall; never walks the table.
  Result<TrackedSample> sampleTrackedSources(uint32_t first_slot, uint32_t max_slots) const;

  Result<std::vector<fg_rule>> activeRules() const;

  // Applies a whole new configuration: rules keep their id by name, and their state unless
  // their key changed (source prefixes, key kind, algorithm, window); lists are synced when
  // given; policies are replaced; the next program is set when given. Everything is
  // validated (and a next program loaded) before anything changes. With options.keep_rules
  // the rules stay as they are. Refused, with nothing written, by an object whose maps are
  // no longer the pinned ones (holdsPinned).
  Status reload(const AttachOptions& options);

  // Takes this limiter's writer lock (waiting up to WriterLock::kWait for another writer)
  // and holds it until the guard goes: the writes of this object meanwhile share it, so a
  // caller that changes several limiters together takes every lock before the first change.
  // `wait`: how long another writer may keep it first (0: not at all).
  Result<WriterLock::Guard> holdWrites(std::chrono::milliseconds wait = WriterLock::kWait) {
    return writer_.acquire(interface_, wait);
  }
  // What reload checks before it changes anything, the next program loaded (and let go)
  // included: for a caller reloading several limiters, to refuse a config that one of them
  // could not take before any of them changes.
  Status checkReload(const AttachOptions& options) const;
  // What the last reload did to the next program (none when it was not given).
  const std::optional<NextProgramChange>& lastNextProgramChange() const { return next_change_; }

  // Changes the limits of one rule in place; its buckets keep their state.
  Status setLimits(const std::string& rule_name, const LimitChange& change);
  // The same, only while the rule still runs exactly the limits `running` (compiled as the
  // rule's own would be): false, with nothing changed, when another writer (`floodgate set`)
  // changed them since. Checked and applied under the writer lock, so no write falls between.
  Result<bool> setLimitsIfRunning(const std::string& rule_name, const LimitSpec& running,
                                  const LimitChange& change);
  // The same, only while the rule's limits still read as `described` (describeLimits of the
  // rule as it ran when the caller read it): for a caller that read them rather than set them.
  Result<bool> setLimitsIfDescribed(const std::string& rule_name, const LimitSpec& described,
                                    const LimitChange& change);

  Status writePolicies(const AttachOptions& options);

  // Bans `cidr` for `duration_ns` (0: until removed, at most kMaxBanNs). An existing ban of
  // it is replaced (kReplace, what an operator asks), or kept if it ends later (kExtend,
  // what an automatic ban does). The ban ends on the program's clock, rounded up to a tick.
  // `origin` is what `ban list` shows it was started by.
  Status banAdd(const Cidr& cidr, uint64_t duration_ns, BanUpdate update = BanUpdate::kReplace,
                BanOrigin origin = BanOrigin::kManual);
  // Whether a fleet ban of `cidr` may be made where fleet bans may hold `room` entries of
  // each family's trie (fleet.bans.max_entries): fewer are there, or a ban of exactly
  // `cidr` is there to extend. The fleet bans are counted once, then kept count of by
  // banAdd, and counted again by each sweepExpiredBans (which the daemon runs every 10 s):
  // between two, a ban that ended or that another process removed is still counted.
  bool fleetBanHasRoom(const Cidr& cidr, uint32_t room);
  Result<bool> banRemove(const Cidr& cidr);
  // Removes the ban of `cidr` if it is a fleet ban, or else only if it started (or was last
  // replaced) at least `age_ns` ago on the program's clock: a lift signed that long ago
  // leaves a ban this host started on its own after it. A ban over, or within a second of
  // it, is left to the program. Whether one was removed.
  Result<bool> banRemoveStartedBefore(const Cidr& cidr, uint64_t age_ns);
  // The bans still running (expired entries the program has not met again are left out).
  Result<std::vector<BanEntry>> bans() const;
  // Deletes the bans that are over; returns how many. The daemon calls it now and then, so
  // an expired ban of a source that never comes back does not hold a slot of the table.
  Result<size_t> sweepExpiredBans();

  // Adds CIDRs to a list; returns how many were new. All or none: when one cannot go in (the
  // list is full), those this call added are taken out again and the error says so.
  Result<size_t> listAdd(ListKind kind, const std::vector<Cidr>& cidrs);
  // Rebuilds both lists' IPv4 filters from their tries (after a load, whose new program
  // may find lists a program without filters kept).
  Status rebuildListFilters();
  // Removes CIDRs; returns how many were there.
  Result<size_t> listRemove(ListKind kind, const std::vector<Cidr>& cidrs);
  Result<std::vector<Cidr>> listEntries(ListKind kind) const;
  // Whether the allow list holds a prefix that overlaps `address` (one that contains it: a
  // trie lookup; for a prefix wider than an address, one inside it too: a read of the list).
  // The program lets such a source through before it looks at any ban.
  bool allowListed(const Cidr& address) const;

 private:
  // The fleet bans running in each family's trie, read from the tries.
  Result<std::array<uint32_t, 2>> countFleetBans() const;
  // Slots in the source table (the buckets map's size).
  Result<uint32_t> tableSlots() const;
  // Entries each allow and deny list may hold (their maps' size).
  Result<uint32_t> listMaxEntries() const;
  // Makes `options` fit this running limiter's maps, which a replacing program reuses: a
  // table or list size other than the running one is replaced by it, with a warning. Fails
  // for an XDP mode other than the running one, which a swap on the link cannot change, and
  // for a bucket table of another layout (FG_TABLE_LAYOUT), which the new program would misread.
  Status fitToRunning(AttachOptions& options, std::vector<std::string>& warnings) const;
  XdpLimiter() = default;
  // When floodgate runs in an operator's prog array: its program's id and where it sits.
  std::optional<std::pair<uint32_t, ProgArraySlot>> progArraySlot() const;
  // The pinned XDP link's info (none in prog-array mode, or with no link pinned).
  std::optional<bpf_link_info> pinnedLinkInfo() const;
  // Opens every pinned map of `interface` (whether or not a link is pinned yet).
  static Result<XdpLimiter> openMaps(const std::string& interface);
  // The tracked sources of status(), by a walk of the whole table.
  void countTracked(XdpLimiterStatus& out) const;
  // relink, with the attach lock already held
  static Status relinkLocked(const std::string& interface, XdpMode mode, AttachReport& report);
  // Adds `delta` (by family: [0] IPv4, [1] IPv6) to the program's entry counts of the list.
  void updateListCounts(ListKind kind, const int64_t (&delta)[2]);
  // listRemove's work, under a writer lock the caller holds.
  Result<size_t> eraseListEntries(ListKind kind, const std::vector<Cidr>& cidrs);
  // Makes `rules` the active set with `sources` (prefix → rule-id bits) as its source sets.
  Status publish(const std::vector<fg_rule>& rules,
                 const std::vector<std::pair<Cidr, uint64_t>>& sources);
  Result<std::vector<std::pair<Cidr, uint64_t>>> activeSources() const;
  Status syncList(ListKind kind, const std::vector<Cidr>& wanted);
  // Makes the IPv4 filter of a list exactly what its trie holds, and marks it built.
  Status rebuildListFilter(ListKind kind);
  // The part of reload after the rules: policies, then the lists given.
  Status applyPoliciesAndLists(const AttachOptions& options);
  // Whether the lists `options` gives and the rule set's source sets `sources` fit the running
  // limiter's maps: asked before reload changes anything, so a reload that could not finish
  // leaves the limiter as it was.
  Status checkReloadFits(const AttachOptions& options,
                         const std::vector<std::pair<Cidr, uint64_t>>* sources) const;
  Status resetRuleState(uint32_t rule_id);
  // reload's rules, policies and lists, once everything is validated; `writing` is set once
  // the checks that write nothing have passed.
  Status reloadRules(const AttachOptions& options, bool& writing);
  // How changeLimits checks the limits the rule runs before it changes them.
  enum class RunningCheck { kNone, kCompiled, kDescribed };
  Result<bool> changeLimits(const std::string& rule_name, RunningCheck check,
                            const LimitSpec* running, const LimitChange& change);
  Result<uint64_t> nowUnits() const;
  uint64_t tickNs() const { return tick_units_ >> FG_TIME_SHIFT; }

  std::string interface_;
  // Held by each method that writes, so commands and the daemon write one at a time.
  WriterLock writer_;
  uint64_t tick_units_ = 0;  // the program's clock step, for sizing buckets
  // The counters map's entries, read once at open: a program of another version may count
  // another number of (verdict, reason) pairs, which counters() then refuses to name.
  uint32_t counter_slots_ = 0;
  // The write generation after this object's last reload, or when it was opened.
  uint64_t written_generation_ = 0;
  std::optional<NextProgramChange> next_change_;
  XdpLimiterMaps maps_;
  MappedValue<fg_settings> settings_value_;
  // Fleet bans running in each family's trie, once counted (fleetBanHasRoom).
  std::array<uint32_t, 2> fleet_bans_{};
  bool fleet_bans_counted_ = false;
  MappedValue<fg_active> active_value_;
  // When publish last flipped the active set, so that the next waits before rewriting the
  // set the flip left (see publish).
  std::chrono::steady_clock::time_point last_flip_{};
  // The IPv4 lists' filters, by enum fg_list, mapped whole (FG_LIST_FILTER_WORDS each).
  MappedValue<uint64_t> list_filters_[2];
};

// A loaded, configured program that is not attached (yet).
struct LoadedXdpLimiter {
  Skeleton skeleton;
  XdpLimiter limiter;
  int programFd() const;
  // Sets the clock of a program loaded with AttachOptions::test_clock_hz: the packets run
  // from now on see `jiffies`. Not thread-safe against runs in flight.
  void setTestJiffies(uint64_t jiffies);
};

}  // namespace floodgate
