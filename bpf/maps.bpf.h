/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The program's maps. Sizes marked "set at load" are overridden by the controller. */
#ifndef FLOODGATE_MAPS_BPF_H
#define FLOODGATE_MAPS_BPF_H

#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

#include "floodgate_shared.h"

/* One read of a map value another CPU may write meanwhile. */
#define FG_READ_ONCE(x) (*(volatile typeof(x) *)&(x))
/* One write of a map value that others read meanwhile. */
#define FG_WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE); /* the controller changes fields with atomics */
	__type(key, __u32);
	__type(value, struct fg_settings);
} settings_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fg_active);
} active_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_RULE_POSITIONS);
	__type(key, __u32);
	__type(value, struct fg_rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_RULE_SETS);
	__type(key, __u32);
	__type(value, struct fg_rule_index);
} rule_index SEC(".maps");

/* Slots in `buckets` - 1 (a power of two), set at load by the controller. */
const volatile __u32 table_slot_mask = 0;
/* Elements in `sets` - 1 (a power of two, at least the table's sets - 1), set at load. */
const volatile __u32 sets_mask = 0;

/* Per-source bucket table; max_entries set at load (a power of two, multiple of the ways).
 * Mmapable: `top` reads the per-slot counters without a syscall per slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_DEFAULT_TABLE_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fg_slot);
} buckets SEC(".maps");

/* The sets' index (struct fg_set; `buckets` / 4 elements and at least FG_MIN_SET_ELEMENTS,
 * set at load): a set's four 16-bit tags, by which a lookup reads a slot only where the tag
 * matches, and entries of the memory of returning sources (returning.bpf.h). A source never
 * seen (every packet of a spoofed flood) then costs one line of a table 1/8 the size of
 * `buckets`, for its tags and its memory both, instead of four misses in the large one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_DEFAULT_TABLE_SLOTS / FG_TABLE_WAYS);
	/* mmapable for the alignment, not for a reader: a plain array's elements start where
	 * the kernel's struct bpf_array ends (312 bytes in on 6.x), which puts half of the 32-byte
	 * elements across two cache lines; an mmapable one's start on a page */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fg_set);
} sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_MAX_RULE_IDS);
	__type(key, __u32);
	__type(value, struct fg_rule_state);
} rule_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FG_COUNTER_SLOTS);
	__type(key, __u32);
	__type(value, struct fg_counter);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FG_RULE_COUNTER_SLOTS);
	__type(key, __u32);
	__type(value, struct fg_counter);
} rule_counters SEC(".maps");

/* Link-control frames (NDP, MLD) that came past the link's budget and met the rules, one
 * counter per CPU: the sign that a neighbour spends the budget. A map of its own, so a
 * limiter attached without it keeps its other maps and a replace adds it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_counter);
} link_ctl_over SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FG_TABLE_STAT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} table_stats SEC(".maps");

/* State changes for the daemon (struct fg_event records). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_event_stats);
} event_stats SEC(".maps");

/* The program that gets what floodgate passes (slot FG_NEXT_PROGRAM_SLOT), set by the
 * controller; pinned like the other maps, so it survives --replace and the CLI's exit. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, FG_NEXT_PROGRAM_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} next_program SEC(".maps");

/* Allow and deny lists; max_entries set at load. The value is unused (1). */
#define FG_LPM_MAP(name, key_type)                                                                 \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, FG_LIST_MAX_ENTRIES);                                          \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, key_type);                                                             \
		__type(value, __u8);                                                               \
	} name SEC(".maps")

/* Bans: prefixes dropped until their time is up (value struct fg_ban). */
#define FG_BAN_MAP(name, key_type)                                                                 \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, FG_BAN_MAX_ENTRIES);                                           \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, key_type);                                                             \
		__type(value, struct fg_ban);                                                      \
	} name SEC(".maps")

FG_BAN_MAP(bans_v4, struct fg_lpm_v4);
FG_BAN_MAP(bans_v6, struct fg_lpm_v6);

/* Source sets of the rules (match.src), one pair per rule set so a reload swaps them with
 * the rules. The value has bit `rule id` set for every rule whose set holds the prefix. */
#define FG_SOURCE_SET_MAP(name, key_type)                                                          \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, FG_LIST_MAX_ENTRIES);                                          \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, key_type);                                                             \
		__type(value, __u64);                                                              \
	} name SEC(".maps")

FG_SOURCE_SET_MAP(sources_v4_0, struct fg_lpm_v4);
FG_SOURCE_SET_MAP(sources_v6_0, struct fg_lpm_v6);
FG_SOURCE_SET_MAP(sources_v4_1, struct fg_lpm_v4);
FG_SOURCE_SET_MAP(sources_v6_1, struct fg_lpm_v6);

/* The IPv4 lists' filters (see FG_LIST_FILTER_SHIFT). */
#define FG_LIST_FILTER_MAP(name)                                                                   \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__uint(max_entries, FG_LIST_FILTER_WORDS);                                         \
		__uint(map_flags, BPF_F_MMAPABLE);                                                 \
		__type(key, __u32);                                                                \
		__type(value, __u64);                                                              \
	} name SEC(".maps")

FG_LIST_FILTER_MAP(allow_filter_v4);
FG_LIST_FILTER_MAP(deny_filter_v4);

FG_LPM_MAP(allow_v4, struct fg_lpm_v4);
FG_LPM_MAP(allow_v6, struct fg_lpm_v6);
FG_LPM_MAP(deny_v4, struct fg_lpm_v4);
FG_LPM_MAP(deny_v6, struct fg_lpm_v6);

#endif /* FLOODGATE_MAPS_BPF_H */
