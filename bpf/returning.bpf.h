/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The memory of sources that come back: sources that held a slot and stayed within their
 * limits are remembered for a while, so that during a flood of spoofed sources, which keeps
 * the new-source cap refusing, they get a slot again from a reserve of their own.
 *
 * The memory is FG_MEMORY_WAYS 8-byte entries in each element of `sets`, beside the tags of
 * the set of the same index: a source whose set has no way for it (every packet of a
 * spoofed flood) reads its tags and its memory in one cache line. A source's element is
 * picked by the bits of its fingerprint (rule, epoch and masked address, keyed with the
 * table's secret seed) that pick its set, and an entry holds 31 other bits of it as a tag,
 * FG_MEMORY_PROVEN, and the tick until which it is fresh. A source never seen is taken for a
 * remembered one only when an entry of its element holds another source's tag equal to its
 * own: at most FG_MEMORY_WAYS × 2^-31 per lookup, and the seed keeps a flooder from aiming
 * at either.
 *
 * What a flood cannot do with it: an entry still fresh is never given to another source
 * (but for a proven source's over one that is not), so sources remembered first keep their
 * place; and while the rule's new-source cap is refusing (a flood), no source is newly
 * remembered, so the flood's sources that got a slot by the cap cannot fill the memory,
 * only sources remembered before it refresh theirs.
 * Spoofed addresses sent twice each before a flood can; under `remember: connected` a rule
 * remembers only sources whose packet proves a return path (bpf/connected.bpf.h). */
#ifndef FLOODGATE_RETURNING_BPF_H
#define FLOODGATE_RETURNING_BPF_H

#include "events.bpf.h"
#include "fg_gcra.h"
#include "maps.bpf.h"

/* The element of `sets` whose memory entries may hold the source of fingerprint `fp`: its
 * set's own, for a table of at least FG_MIN_SET_ELEMENTS sets. */
static __always_inline __u32 fg_memory_element(__u64 fp)
{
	return fg_memory_element_of(fp, sets_mask);
}

/* An entry's stamp is the tick until which it is fresh, | 1 so never 0 (which marks an empty
 * entry): the writer's remember_for goes into it, so a rule remembering for less cannot take
 * an entry that another rule's longer remember_for still holds. */
static __always_inline __u32 fg_stamp(__u64 jiffies) { return (__u32)jiffies | 1; }

/* Ticks left before `entry` lapses, 0 once it has. More than twice the longest remember_for
 * is an entry so old that its stamp wrapped around (twice: a remember_for in ticks is
 * rounded up from a tick length that need not divide a second, and the stamps' low bit adds
 * one). */
static __always_inline __u32 fg_entry_left(__u64 entry, __u64 jiffies)
{
	__s32 left = (__s32)((__u32)entry - fg_stamp(jiffies));

	if (left <= 0 || left > (__s32)(2 * FG_MAX_REMEMBER_SECONDS * ticks_per_second))
		return 0;
	return (__u32)left;
}

static __always_inline __u64 fg_memory_entry(__u64 tag, __u64 jiffies, __u32 remember_ticks,
					     __u64 proven)
{
	return (tag << 32) | proven | fg_stamp(jiffies + remember_ticks);
}

/* Remembers the source of fingerprint `fp` under rule `rule_id` as good at `jiffies` for
 * `remember_ticks`: its own entry refreshed, else an empty or a lapsed one taken, and for a
 * source that proved a return path (`proven`, FG_MEMORY_PROVEN) else one a source that did
 * not holds: rules share the entries, so one remembering every source seen (spoofed ones
 * too) must not keep the proven clients of another out. Returns 1 when it wrote an entry,
 * or with `write` 0 when it would have (and wrote nothing): a rule that remembers only
 * proven sources asks first, so a packet pays for its proof only when a memory is due. */
static __always_inline int fg_memory_write(__u64 fp, __u64 jiffies, __u32 rule_id,
					   __u32 remember_ticks, __u32 write, __u64 proven)
{
	__u32 element = fg_memory_element(fp), i, free = FG_MEMORY_WAYS, left;
	struct fg_set *set = bpf_map_lookup_elem(&sets, &element);
	__u64 tag = fg_memory_tag(fp), seen, replaced = 0;
	/* an own entry is refreshed once a second, which spares the line a store from every
	 * CPU on every tick, or twice within a shorter remember_for, so it never lapses while
	 * its source keeps coming: refreshed once it has no more ticks left than this */
	__u32 refresh_at =
	    remember_ticks -
	    (remember_ticks / 2 < ticks_per_second ? remember_ticks / 2 : ticks_per_second);
	struct fg_rule_state *state;

	if (!set)
		return 0;
	for (i = 0; i < FG_MEMORY_WAYS; i++) {
		seen = FG_READ_ONCE(set->memory[i]);
		left = seen ? fg_entry_left(seen, jiffies) : 0;
		if (seen && fg_memory_entry_tag(seen) == tag) {
			/* its own entry; lapsed, it is a new memory. Fresher than this rule's
			 * remember_for allows (a reload shortened it), it is written again now, as
			 * is one the rule wrote unproven before a reload made it need proof */
			if (left > refresh_at && left <= remember_ticks + 1 &&
			    (seen & FG_MEMORY_PROVEN) == proven)
				return 0;
			if (left) {
				/* as read: another CPU may take it the tick it lapses */
				if (write)
					__sync_val_compare_and_swap(
					    &set->memory[i], seen,
					    fg_memory_entry(tag, jiffies, remember_ticks, proven));
				return 1;
			}
			free = i;
			replaced = seen;
			break;
		}
		/* another source's entry is free once it lapsed by its writer's remember_for; an
		 * empty one is the best */
		if (!left && (free == FG_MEMORY_WAYS || (replaced && !seen))) {
			free = i;
			replaced = seen;
		}
	}
	/* every entry another source's, still fresh: the ones remembered first keep their place,
	 * but for a proven source over one that is not */
	for (i = 0; proven && free >= FG_MEMORY_WAYS && i < FG_MEMORY_WAYS; i++) {
		seen = FG_READ_ONCE(set->memory[i]);
		if (!(seen & FG_MEMORY_PROVEN)) {
			free = i;
			replaced = seen;
		}
	}
	if (free >= FG_MEMORY_WAYS)
		return 0;
	/* no new memories while the cap refuses: those would be the flood's */
	state = bpf_map_lookup_elem(&rule_state, &rule_id);
	if (!state || fg_refused_lately(FG_READ_ONCE(state->last_capped), jiffies))
		return 0;
	/* only the entry as it was read: one another CPU took for its source meanwhile is fresh */
	if (write)
		__sync_val_compare_and_swap(&set->memory[free], replaced,
					    fg_memory_entry(tag, jiffies, remember_ticks, proven));
	return 1;
}

/* fg_memory_write, writing. Called once a tick at most per source, so a global function:
 * its keys stay off the frames of the rule loop, which are at the stack's cap. */
__attribute__((noinline)) int fg_remember_source(__u64 fp, __u64 jiffies, __u32 rule_id,
						 __u32 remember_ticks, __u64 proven)
{
	return fg_memory_write(fp, jiffies, rule_id, remember_ticks, 1, proven);
}

/* Whether fg_remember_source would write the proven memory of the source of `fp` now. */
__attribute__((noinline)) int fg_memory_due(__u64 fp, __u64 jiffies, __u32 rule_id,
					    __u32 remember_ticks)
{
	return fg_memory_write(fp, jiffies, rule_id, remember_ticks, 0, FG_MEMORY_PROVEN);
}

/* Whether the source of fingerprint `fp` was seen good within its rule's remember_for of
 * `jiffies`: its entry is fresh (an entry keeps the remember_for it was written with until
 * its source is next seen within its limits) and has the bits of `need` (FG_MEMORY_PROVEN
 * for a rule that remembers only sources with a connection). The key is on the
 * caller's frame: a pointer into a global function's argument is no map key for kernels
 * before 6.1. */
static __always_inline int fg_source_returns(__u64 fp, __u64 jiffies, __u64 need)
{
	__u32 element = fg_memory_element(fp), i;
	struct fg_set *set = bpf_map_lookup_elem(&sets, &element);
	__u64 tag = fg_memory_tag(fp), seen;

	if (!set)
		return 0;
	for (i = 0; i < FG_MEMORY_WAYS; i++) {
		seen = FG_READ_ONCE(set->memory[i]);
		if (seen && fg_memory_entry_tag(seen) == tag && (seen & need) == need &&
		    fg_entry_left(seen, jiffies))
			return 1;
	}
	return 0;
}

#endif /* FLOODGATE_RETURNING_BPF_H */
