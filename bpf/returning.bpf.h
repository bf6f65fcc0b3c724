/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The memory of sources that come back: sources that held a slot and stayed within their
 * limits are remembered for a while, so that during a flood of spoofed sources, which keeps
 * the new-source cap refusing, they get a slot again from a reserve of their own.
 *
 * The memory is direct-mapped, an 8-byte entry per slot of the bucket table and at least
 * FG_RETURNING_MIN_ENTRIES (sources remembered may be many more than a small table holds
 * at once): the entry at
 * the low bits of a source's fingerprint (rule, epoch and masked address, keyed with the
 * table's secret seed) holds the fingerprint's high 32 bits as a tag and the jiffies it was
 * last seen good. Two sources whose index collides share the entry, the later one wins. A
 * source never seen is taken for a remembered one only when its index holds an entry and
 * the 32-bit tags match: at most 2^-32 per lookup, and the seed keeps a flooder from aiming
 * at either. */
#ifndef FLOODGATE_RETURNING_BPF_H
#define FLOODGATE_RETURNING_BPF_H

#include "maps.bpf.h"

#define FG_TAG_MASK 0xffffffff00000000ULL

/* Entries in `returning` - 1 (a power of two), set at load by the controller. */
const volatile __u32 returning_mask = 0;

static __always_inline __u32 fg_memory_index(__u64 fp) { return (__u32)fp & returning_mask; }

/* Remembers the source of fingerprint `fp` as good at `jiffies` (good = 1), or forgets it
 * (good = 0: it started being limited). Once a tick at most per source, so a global
 * function: its key stays off the frames of the rule loop, which are at the stack's cap. */
__attribute__((noinline)) int fg_remember_source(__u64 fp, __u64 jiffies, int good)
{
	__u32 index = fg_memory_index(fp);
	__u64 *entry = bpf_map_lookup_elem(&returning, &index);
	__u64 seen;

	if (!entry)
		return 0;
	seen = *entry;
	if (good) {
		/* the stamp is never 0, which marks an empty entry */
		*entry = (fp & FG_TAG_MASK) | ((__u32)jiffies | 1);
	} else if ((seen & FG_TAG_MASK) == (fp & FG_TAG_MASK)) {
		*entry = 0;
	}
	return 0;
}

/* Whether the source of fingerprint `fp` was seen good within `remember_ticks` of
 * `jiffies`. `index` is where to put the lookup's key: memory the caller owns outside the
 * stack (a per-CPU query), since fg_find_slot's chain is at the stack's cap. */
static __always_inline int fg_source_returns(__u64 fp, __u64 jiffies, __u32 remember_ticks,
					     __u32 *index)
{
	__u64 *entry, seen;

	*index = fg_memory_index(fp);
	entry = bpf_map_lookup_elem(&returning, index);
	if (!entry)
		return 0;
	seen = *entry;
	return seen && (seen & FG_TAG_MASK) == (fp & FG_TAG_MASK) &&
	       (__u32)jiffies - (__u32)seen < remember_ticks;
}

#endif /* FLOODGATE_RETURNING_BPF_H */
