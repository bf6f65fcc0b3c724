/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The memory of sources that come back: sources that held a slot and stayed within their
 * limits are remembered for a while, so that during a flood of spoofed sources, which keeps
 * the new-source cap refusing, they get a slot again from a reserve of their own.
 *
 * The memory is direct-mapped, an 8-byte entry per slot of the bucket table and at least
 * FG_RETURNING_MIN_ENTRIES (sources remembered may be many more than a small table holds at
 * once). The entry at the low bits of a source's fingerprint (rule, epoch and masked
 * address, keyed with the table's secret seed) holds the fingerprint's high 32 bits as a
 * tag and the tick it was last refreshed. A source never seen is taken for a remembered
 * one only when its entry holds another source's tag equal to its own: at most 2^-32 per
 * lookup, and the seed keeps a flooder from aiming at either.
 *
 * What a flood cannot do with it: an entry still fresh is never given to another source,
 * so sources remembered first keep their place; and while the rule's new-source cap is
 * refusing (a flood), no source is newly remembered, so the flood's sources that got a slot
 * by the cap cannot fill the memory, only sources remembered before it refresh theirs. */
#ifndef FLOODGATE_RETURNING_BPF_H
#define FLOODGATE_RETURNING_BPF_H

#include "events.bpf.h"
#include "maps.bpf.h"

#define FG_TAG_MASK 0xffffffff00000000ULL

/* Entries in `returning` - 1 (a power of two), set at load by the controller. */
const volatile __u32 returning_mask = 0;

static __always_inline __u32 fg_memory_index(__u64 fp) { return (__u32)fp & returning_mask; }

/* An entry's stamp is the tick | 1, never 0 (which marks an empty entry); ages compare
 * stamps alike, so an entry stamped this tick is 0 ticks old. */
static __always_inline __u32 fg_stamp(__u64 jiffies) { return (__u32)jiffies | 1; }

static __always_inline __u32 fg_entry_age(__u64 entry, __u64 jiffies)
{
	return fg_stamp(jiffies) - (__u32)entry;
}

/* Remembers the source of fingerprint `fp` under rule `rule_id` as good at `jiffies`.
 * Called once a tick at most per source, so a global function: its keys stay off the
 * frames of the rule loop, which are at the stack's cap. */
__attribute__((noinline)) int fg_remember_source(__u64 fp, __u64 jiffies, __u32 rule_id,
						 __u32 remember_ticks)
{
	__u32 index = fg_memory_index(fp);
	__u64 *entry = bpf_map_lookup_elem(&returning, &index);
	struct fg_rule_state *state;
	__u64 seen;

	if (!entry)
		return 0;
	seen = FG_READ_ONCE(*entry);
	if ((seen & FG_TAG_MASK) == (fp & FG_TAG_MASK) && seen) {
		/* its own entry: refreshed once a second is enough, and spares the line a store
		 * from every CPU on every tick */
		if (fg_entry_age(seen, jiffies) >= ticks_per_second)
			*entry = (fp & FG_TAG_MASK) | fg_stamp(jiffies);
		return 0;
	}
	/* another source's entry, still fresh: the one remembered first keeps its place */
	if (seen && fg_entry_age(seen, jiffies) < remember_ticks)
		return 0;
	/* no new memories while the cap refuses: those would be the flood's */
	state = bpf_map_lookup_elem(&rule_state, &rule_id);
	if (!state || fg_refused_lately(FG_READ_ONCE(state->last_capped), jiffies))
		return 0;
	*entry = (fp & FG_TAG_MASK) | fg_stamp(jiffies);
	return 0;
}

/* Whether the source of fingerprint `fp` was seen good within `remember_ticks` of
 * `jiffies`. The key is on the caller's frame: a pointer into a global function's argument
 * is no map key for kernels before 6.1. */
static __always_inline int fg_source_returns(__u64 fp, __u64 jiffies, __u32 remember_ticks)
{
	__u32 index = fg_memory_index(fp);
	__u64 *entry = bpf_map_lookup_elem(&returning, &index), seen;

	if (!entry)
		return 0;
	seen = FG_READ_ONCE(*entry);
	return seen && (seen & FG_TAG_MASK) == (fp & FG_TAG_MASK) &&
	       fg_entry_age(seen, jiffies) < remember_ticks;
}

#endif /* FLOODGATE_RETURNING_BPF_H */
