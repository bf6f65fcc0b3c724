/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Events: changes of state (a source starts being limited, a ban starts or ends) reported
 * to the daemon through a ring buffer. A flood of new sources could make every packet a
 * change of state, so each CPU emits at most `event_budget` a second and counts the rest. */
#ifndef FLOODGATE_EVENTS_BPF_H
#define FLOODGATE_EVENTS_BPF_H

#include "maps.bpf.h"

/* The halves fg_emit takes, from 16 address bytes. */
static __always_inline void fg_addr_halves(const __u8 *addr, __u64 *hi, __u64 *lo)
{
	__builtin_memcpy(hi, addr, 8);
	__builtin_memcpy(lo, addr + 8, 8);
}

/* Set at load by the controller. */
const volatile __u32 ticks_per_second = 250; /* the kernel's HZ */
const volatile __u32 event_budget = 200;     /* events per CPU per second */

/* Whether this CPU may emit one more event now; counts a refusal. A ban's start or end is
 * always let through (counted in the budget all the same): the daemon shares a rule's bans
 * with the fleet from their ban_start events, and a flood of limited sources spending the
 * budget first would keep those bans from it. Their number needs no budget: each starts with
 * an entry added to the ban trie (at most its size) or ends with one run out. */
static __always_inline int fg_event_allowed(struct fg_event_stats *stats, __u64 jiffies, int ban)
{
	__u64 window = jiffies / (ticks_per_second ? ticks_per_second : 1);

	/* per-CPU: no other CPU writes these */
	if (stats->window != window) {
		stats->window = window;
		stats->used = 0;
	}
	if (stats->used >= event_budget && !ban) {
		stats->suppressed++;
		return 0;
	}
	stats->used++;
	return 1;
}

/* Reports one change of state; `what` packs the type, rule id, family and prefix (see
 * fg_emit). A global function: verified once, and its locals stay out of the frames of the
 * rule loop, which are near the stack limit. */
__attribute__((noinline)) int fg_emit_event(__u64 what, __u64 addr_hi, __u64 addr_lo, __u64 jiffies)
{
	struct fg_event_stats *stats;
	struct fg_event *event;
	__u32 zero = 0;

	stats = bpf_map_lookup_elem(&event_stats, &zero);
	if (!stats || !fg_event_allowed(stats, jiffies,
					(what & 0xff) == FG_EVENT_BAN_START ||
					    (what & 0xff) == FG_EVENT_BAN_END))
		return 0;
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		stats->lost++;
		return 0;
	}
	event->jiffies = jiffies;
	event->type = what & 0xff;
	event->rule_id = (__u32)(what >> 8);
	event->family = (what >> 40) & 0xff;
	event->prefix = (what >> 48) & 0xff;
	__builtin_memset(event->pad, 0, sizeof(event->pad));
	__builtin_memcpy(event->addr, &addr_hi, 8);
	__builtin_memcpy(event->addr + 8, &addr_lo, 8);
	bpf_ringbuf_submit(event, 0);
	stats->emitted++;
	return 1;
}

/* The address is two halves of 8 bytes in network order (IPv4 in the first 4), zero for
 * the per-rule events. */
static __always_inline void fg_emit(__u32 type, __u32 rule_id, __u8 family, __u8 prefix,
				    __u64 addr_hi, __u64 addr_lo, __u64 jiffies)
{
	fg_emit_event((__u64)type | (__u64)rule_id << 8 | (__u64)family << 40 | (__u64)prefix << 48,
		      addr_hi, addr_lo, jiffies);
}

/* Notes a refusal at `jiffies` against the time of the previous one (`*last`, 0 none):
 * returns 1 when it starts a new episode of being limited (none in the past second). */
static __always_inline int fg_refusal_starts(__u32 *last, __u64 jiffies)
{
	__u32 now = (__u32)jiffies | 1; /* never 0, which means "never refused" */
	__u32 before = *last;

	if (before == now)
		return 0;
	*last = now; /* a plain store: a race at worst emits a second event */
	return !before || now - before > ticks_per_second;
}

/* Whether `last` (an fg_refusal_starts time, 0 never) is within the past second. */
static __always_inline int fg_refused_lately(__u32 last, __u64 jiffies)
{
	/* the same `| 1` as the stored time, which may be a tick ahead of jiffies */
	return last && ((__u32)jiffies | 1) - last <= ticks_per_second;
}

#endif /* FLOODGATE_EVENTS_BPF_H */
