/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* GCRA bucket arithmetic in plain C: the XDP program and the native unit tests run this
 * same code, the tests with a virtual clock. Times are bucket time units (ns << FG_TIME_SHIFT). */
#ifndef FLOODGATE_GCRA_H
#define FLOODGATE_GCRA_H

#include "floodgate_shared.h"

#ifndef FG_INLINE
#define FG_INLINE static inline __attribute__((always_inline))
#endif

#define FG_STALE_MAX_UNITS (FG_STALE_MAX_NS << FG_TIME_SHIFT)
#define FG_MAX_CAPACITY_UNITS (FG_MAX_CAPACITY_NS << FG_TIME_SHIFT)

/* How far a bucket time runs ahead of now: 0 for an idle (full) bucket. A bucket time can
 * run ahead by at most `capacity` when it is written, so one further ahead than that plus
 * FG_STALE_MAX_UNITS is an old time that wrapped around (the 64-bit unit clock wraps
 * every 2^48 ns, ~3.26 days): that bucket is idle too. A reading up to FG_STALE_MAX_NS
 * late (another CPU already moved on) is taken as it is, so it never over-admits. */
FG_INLINE __u64 fg_gcra_ahead(__u64 tat, __u64 now, __u64 capacity)
{
	__u64 ahead = tat - now;

	if ((__s64)ahead <= 0 || ahead > capacity + FG_STALE_MAX_UNITS)
		return 0;
	return ahead;
}

/* How far a rule's bucket time runs ahead of now, for a charge. A limit lowered (or its
 * burst shrunk) under a bucket in debt leaves the bucket further ahead than its capacity
 * now is: read with fg_gcra_ahead's bound, that debt would pass for a wrapped, idle time,
 * and the source would get a full bucket. So a bucket is read up to the largest capacity
 * any limit may have, plus a late reading, plus its own capacity (a bound the verifier
 * cannot know, which keeps it from tracking `ahead`'s range into many more states).
 * What this costs: a bucket idle for the last hour or two (its capacity, the largest one
 * and a second) of a wrap period, or of any multiple of it, reads as a debt. A source's
 * slot then starts full again, as its silence outlasted any debt (fg_note_slot); a rule's
 * global or untracked bucket, or the link-control budget, refuses that packet and is
 * clamped to empty.
 * A bucket time of 0, never written, is the one such time that is common: a slot is taken
 * with a time of now instead, and a charge refused on 0 takes it for idle
 * (fg_bucket_refused). The new-source caps keep the narrow bound: a cap idle for a wrap
 * period would otherwise refuse every new source. */
FG_INLINE __u64 fg_bucket_ahead(__u64 tat, __u64 now, __u64 capacity)
{
	__u64 ahead = tat - now;

	if ((__s64)ahead <= 0 || ahead > capacity + FG_MAX_CAPACITY_UNITS + FG_STALE_MAX_UNITS)
		return 0;
	return ahead;
}

/* Whether `increment` conforms to a bucket `ahead` of now (see fg_gcra_admit). */
FG_INLINE int fg_gcra_admit_ahead(__u64 ahead, __u64 now, __u64 increment, __u64 capacity,
				  __u64 *next)
{
	if (ahead > capacity || increment > capacity - ahead)
		return 0;
	*next = now + ahead + increment;
	return 1;
}

/* Decides whether `increment` (cost × interval) conforms at `now`. On admit, writes the
 * new bucket time to *next and returns 1; on reject leaves *next alone and returns 0. */
FG_INLINE int fg_gcra_admit(__u64 tat, __u64 now, __u64 increment, __u64 capacity, __u64 *next)
{
	return fg_gcra_admit_ahead(fg_gcra_ahead(tat, now, capacity), now, increment, capacity,
				   next);
}

/* fg_gcra_admit for a rule's bucket, whose debt may come from a larger limit. */
FG_INLINE int fg_bucket_admit(__u64 tat, __u64 now, __u64 increment, __u64 capacity, __u64 *next)
{
	return fg_gcra_admit_ahead(fg_bucket_ahead(tat, now, capacity), now, increment, capacity,
				   next);
}

/* A bucket time more than `slack` past the capacity can only come from a limit that was
 * lowered (or its burst shrunk) while the bucket was in debt: the debt of the old limit
 * would hold the source back longer than the new limit allows. Returns 1 and the time that
 * makes the bucket exactly empty under the new limit. `slack` (one clock tick) keeps a
 * merely late reading of another CPU's update from ever counting as such a debt. */
FG_INLINE int fg_gcra_clamp(__u64 tat, __u64 now, __u64 capacity, __u64 slack, __u64 *next)
{
	__u64 ahead = fg_bucket_ahead(tat, now, capacity);

	if (ahead <= capacity + slack)
		return 0;
	*next = now + capacity;
	return 1;
}

/* Whole units of cost the bucket could admit at `now` (for display). */
FG_INLINE __u64 fg_gcra_remaining(__u64 tat, __u64 now, __u64 interval, __u64 capacity)
{
	__u64 ahead = fg_gcra_ahead(tat, now, capacity);

	if (interval == 0 || ahead >= capacity)
		return 0;
	return (capacity - ahead) / interval;
}

/* Bucket time units the clock advances per tick of a `hz` clock. */
FG_INLINE __u64 fg_tick_units(__u64 hz) { return (1000000000ULL / hz) << FG_TIME_SHIFT; }

/* Keyed 64-bit mix of a (rule, family, masked address) key: index and fingerprint of a
 * slot. Keyed with a random seed so flooders cannot aim sources at one set of slots. The
 * address is hashed first and the rule last, so a packet that several rules key by the
 * same prefix hashes its address once (an IPv4 address has no low half to mix). */
FG_INLINE __u64 fg_mix64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

FG_INLINE __u64 fg_addr_hash(__u64 seed, __u32 family, __u64 addr_hi, __u64 addr_lo)
{
	__u64 h = fg_mix64(seed ^ addr_hi);

	return family == FG_FAMILY_V4 ? h : fg_mix64(h ^ addr_lo);
}

/* The address hash is keyed and mixed already: the rule only has to move it somewhere else
 * for every (rule, epoch, family), and an odd multiplier, a bijection, gives each of them a
 * distinct constant spread over all 64 bits. One multiply instead of a second mix. */
FG_INLINE __u64 fg_key_fingerprint(__u64 addr_hash, __u32 rule_id, __u32 rule_epoch, __u32 family)
{
	__u64 h = addr_hash ^ ((((__u64)rule_epoch << 40) | ((__u64)rule_id << 8) | family) *
			       0x9e3779b97f4a7c15ULL);

	return h ? h : 1; /* 0 marks a slot never used */
}

/* The bits of a fingerprint below those that pick its set (and its element of `sets`): 16
 * for the tag's independence from the set, and 2 for the ways of a set. */
#define FG_SET_SHIFT 18

/* The element of `sets` (of `mask` + 1, a power of two) whose memory entries may hold the
 * source of fingerprint `fp`: its set's own, for a table of at least as many sets. */
FG_INLINE __u32 fg_memory_element_of(__u64 fp, __u32 mask)
{
	return (__u32)(fp >> FG_SET_SHIFT) & mask;
}

/* The tag of `fp` in a memory entry: its low 16 bits and 15 of its top 16, none of which
 * pick the element (bits 18 to 41 at most do); the top 16 are also its slot tag, which is no
 * matter there. 31 bits: an entry's top bit says its source proved a return path. */
FG_INLINE __u64 fg_memory_tag(__u64 fp) { return ((fp >> 32) & 0x7fff0000ULL) | (fp & 0xffffULL); }

/* A memory entry's top bit: written by a rule that remembers only sources with a connection
 * (`remember: connected`, bpf/connected.bpf.h), which alone count for such a rule. */
#define FG_MEMORY_PROVEN (1ULL << 63)

/* The tag a memory entry holds (fg_memory_tag of its source's fingerprint). */
FG_INLINE __u64 fg_memory_entry_tag(__u64 entry) { return (entry >> 32) & 0x7fffffffULL; }

#endif /* FLOODGATE_GCRA_H */
