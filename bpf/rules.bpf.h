/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Rule evaluation: a packet is charged to every rule it matches and passes only if all of
 * them admit it; what the others took is handed back when one drops it. A global rule with
 * rules after it is charged once they have admitted it (fg_defers_charge). */
#ifndef FLOODGATE_RULES_BPF_H
#define FLOODGATE_RULES_BPF_H

#include "bans.bpf.h"
#include "buckets.bpf.h"
#include "connected.bpf.h"
#include "counters.bpf.h"
#include "events.bpf.h"
#include "loop.bpf.h"

/* Where a rule charged a packet: the kind in the top bits, a slot or rule id below. */
#define FG_REF_SLOT (0U << 30)
#define FG_REF_GLOBAL (1U << 30)
#define FG_REF_OVERFLOW (2U << 30)
#define FG_REF_KIND_MASK (3U << 30)

/* fg_find_slot's query: per CPU, so one packet's own scratch, kept off the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_slot_query);
} slot_query SEC(".maps");

static __always_inline int fg_rule_matches(const struct fg_rule *rule, const struct fg_packet *pkt,
					   __u64 source_sets)
{
	__u32 i;

	if (rule->has_sources && !(source_sets & (1ULL << (rule->id & 63))))
		return 0;
	/* a frame whose L4 header was not read meets only rules that need none of its fields */
	if (!pkt->l4_known && (rule->port_ranges || rule->tcp_flags_set || rule->tcp_flags_clear))
		return 0;
	if (pkt->fragment == FG_LATER_FRAGMENT_ANY_PROTOCOL) {
		/* its protocol is whatever it claims: every protocol's rule counts it */
	} else if (rule->protocol == IPPROTO_ICMP) {
		if (pkt->l4_proto != IPPROTO_ICMP && pkt->l4_proto != IPPROTO_ICMPV6)
			return 0;
	} else if (rule->protocol && pkt->l4_proto != rule->protocol) {
		return 0;
	}
	if (rule->protocol == IPPROTO_TCP &&
	    ((pkt->tcp_flags & rule->tcp_flags_set) != rule->tcp_flags_set ||
	     (pkt->tcp_flags & rule->tcp_flags_clear)))
		return 0;
	if (!rule->port_ranges)
		return 1;
	for (i = 0; i < FG_MAX_PORT_RANGES; i++) {
		if (i >= rule->port_ranges)
			break;
		if (pkt->dst_port >= rule->ports[i].first && pkt->dst_port <= rule->ports[i].last)
			return 1;
	}
	return 0;
}

/* One rule's decision for one packet, as scalars in and out of fg_rule_admits. */
struct fg_eval {
	__u64 jiffies; /* the clock, 0 until read (fg_units gives it in bucket time units) */
	__u64 seed;
	__u64 addr_hash;     /* fg_addr_hash of the source masked to hashed_prefix - 1 */
	__u32 hashed_prefix; /* 0: none yet */
	__u32 len;
	__u32 ref;  /* out: where the packet was charged */
	__u32 asks; /* FG_ASK_*: memories the walk asked for (bpf/connected.bpf.h) */
};

/* The fingerprint of `pkt`'s source under the per-source `rule`. Rules keyed by the prefix
 * of the previous one share its address hash, and skip masking the source as well. (The
 * rule's prefix, not fg_source_prefix's: a source keyed whole whatever the prefixes is hashed
 * again for a rule of another, to the same hash, and the walk's frame has no room for more.
 * So a source's key may depend on the rule's prefix of its family and nothing else.) */
static __always_inline __u64 fg_source_fingerprint(const struct fg_rule *rule,
						   const struct fg_packet *pkt,
						   struct fg_eval *eval)
{
	__u32 prefix = pkt->family == FG_FAMILY_V4 ? rule->ipv4_prefix : rule->ipv6_prefix;

	if (eval->hashed_prefix != prefix + 1U) {
		struct fg_key key;

		fg_mask_source(pkt, rule->ipv4_prefix, rule->ipv6_prefix, &key);
		eval->addr_hash = fg_addr_hash(eval->seed, key.family, key.hi, key.lo);
		eval->hashed_prefix = prefix + 1U;
	}
	return fg_key_fingerprint(eval->addr_hash, rule->id, rule->epoch, pkt->family);
}

/* A rule's bucket pair shared by sources, in `state`, with eval->ref set to find it again:
 * a global rule's one bucket, else the untracked bucket of the sources without a slot. */
static __always_inline __u64 *fg_shared_bucket(const struct fg_rule *rule,
					       struct fg_rule_state *state, struct fg_eval *eval)
{
	if (rule->key_kind == FG_KEY_GLOBAL) {
		eval->ref = FG_REF_GLOBAL | rule->id;
		return state->global_state;
	}
	eval->ref = FG_REF_OVERFLOW | rule->id;
	return state->overflow_state;
}

/* The bucket pair `rule` charges for `pkt`, a ref to find it again, and the source's slot
 * when it has one (NULL for the global and the untracked bucket). */
static __always_inline __u64 *fg_rule_bucket(const struct fg_rule *rule,
					     const struct fg_packet *pkt, struct fg_eval *eval,
					     struct fg_slot **slot_out,
					     struct fg_rule_state **state_out)
{
	__u32 id = rule->id;
	struct fg_rule_state *state;

	*state_out = NULL;
	if (rule->key_kind == FG_KEY_SOURCE) {
		struct fg_slot_query *q;
		struct fg_slot *slot = NULL;
		__u32 zero = 0, why = FG_TABLE_CAPPED, index, returning;
		__u64 fp;

		fp = fg_source_fingerprint(rule, pkt, eval);
		/* a token-bucket rule came here from fg_owned_admits, which looked already; the
		 * window algorithms did not. fg_find_slot probes the slots themselves before it
		 * takes one; while the new-source cap refuses it does not, so a source whose
		 * tag is not written yet (it took its slot on another CPU an instant ago) is
		 * charged to the untracked bucket until it is. */
		if (rule->algorithm != FG_ALG_TOKEN_BUCKET)
			slot = fg_owned_slot(fp, &index);
		if (slot) {
			*slot_out = slot;
			eval->ref = FG_REF_SLOT | index;
			return slot->state;
		}
		/* a new source: the rule's state holds its cap and the untracked bucket */
		state = bpf_map_lookup_elem(&rule_state, &id);
		*state_out = state;
		if (!fg_cap_refuses(rule, state, fp, eval->jiffies, &returning)) {
			q = bpf_map_lookup_elem(&slot_query, &zero);
			if (!q)
				return NULL;
			fg_make_key(pkt, rule, &q->key);
			q->fp = fp;
			q->seed = eval->seed;
			q->now = fg_units(eval->jiffies);
			q->jiffies = eval->jiffies;
			q->verified = 0;
			q->returning = returning;
			if (fg_find_slot(q, rule, state))
				slot = bpf_map_lookup_elem(&buckets, &q->index);
			why = q->why;
		}
		if (why != FG_SLOT_FOUND)
			fg_count_table(id, why);
		if (why == FG_TABLE_CAPPED && state &&
		    fg_refusal_starts(&state->last_capped, eval->jiffies))
			fg_emit(FG_EVENT_NEW_SOURCES_CAPPED, id, pkt->family, 0, 0, 0,
				eval->jiffies);
		if (slot) {
			*slot_out = slot;
			eval->ref = FG_REF_SLOT | q->index;
			return slot->state;
		}
	} else {
		state = bpf_map_lookup_elem(&rule_state, &id);
		*state_out = state;
	}
	if (!state)
		return NULL;
	/* no slot for this source (every way taken by a source still limited, or the cap on
	 * new sources reached): charge the shared bucket, so a flood of spoofed sources gets
	 * no fresh buckets, only the rule's untracked limit between them */
	return fg_shared_bucket(rule, state, eval);
}

/* The limits a charge at `ref` is made under: the rule's untracked ones, else its own. One
 * pointer at an offset computed without a branch, so the verifier sees one pointer whose
 * offset is one of the two and checks the charge once, rather than once for each; and a
 * pointer rather than a copy, whose bytes the frames down to fg_find_slot cannot spare. */
static __always_inline const struct fg_limit *fg_ref_limits(const struct fg_rule *rule, __u32 ref)
{
	__u64 overflow = ((ref >> 31) & ~(ref >> 30)) & 1; /* kind FG_REF_OVERFLOW (0b10) */

	_Static_assert(FG_REF_OVERFLOW == 2U << 30, "the kind test above reads bits 31 and 30");
	return (const void *)rule + __builtin_offsetof(struct fg_rule, limits) +
	       overflow * (__builtin_offsetof(struct fg_rule, untracked) -
			   __builtin_offsetof(struct fg_rule, limits));
}

/* Under `remember: connected`: asks for a memory of the good source of fingerprint `fp`
 * under `rule`, which the program's end writes, if one is due, when the packet proves its
 * source. A global function, as fg_remember_source, whose place in the chain of frames it
 * takes. */
__attribute__((noinline)) int fg_remember_ask(__u64 fp, const struct fg_rule *rule,
					      struct fg_eval *eval)
{
	if (!rule || !eval || !(eval->asks & FG_ASK_PROVABLE) ||
	    !fg_ask_memory(fp, rule->id, rule->remember_ticks, eval->asks & FG_ASK_COUNT_MASK))
		return 0;
	eval->asks++;
	return 1;
}

/* Keeps a slot's counters for `top`, and reports when its source starts being limited.
 * Plain increments, not atomics: a locked add on the slot's line costs more than the rest
 * of the charge, and stalls the loads behind it. The race costs only the count: two CPUs
 * charging the same source in the same instant may count one packet where there were two,
 * so `top` may show a source spread over several CPUs a little below its true rate (never
 * above). The bucket itself is exact: its charge is a compare-and-swap. A good source is
 * remembered by the fingerprint `pkt` was looked up by, worked out again from the walk's
 * address hash rather than read from the slot: another CPU may have given the slot to
 * another source since the charge, and this one's standing is not that source's. */
static __always_inline int fg_note_slot(struct fg_slot *slot, int admitted, __u64 jiffies,
					const struct fg_rule *rule, const struct fg_packet *pkt,
					struct fg_eval *eval)
{
	__u32 last = slot->last_seen, idle = (__u32)jiffies - last;

	slot->packets++;
	/* at most once a tick: the clock moves every few ms, packets every few ns */
	if (last != (__u32)jiffies) {
		slot->last_seen = (__u32)jiffies;
		/* a source that came back in a later tick than it took the slot and has not been
		 * limited for a second is remembered: a spoofed source sends once, and a source
		 * at its limit is not one to let in ahead of others (nor refreshed, so it lapses)
		 */
		if (rule->remember_ticks && admitted && slot->packets > 1 &&
		    !fg_refused_lately(slot->last_drop, jiffies)) {
			__u64 fp =
			    fg_key_fingerprint(eval->addr_hash, rule->id, rule->epoch, pkt->family);

			if (rule->remember_connected)
				fg_remember_ask(fp, rule, eval);
			else
				fg_remember_source(fp, jiffies, rule->id, rule->remember_ticks, 0);
		}
	}
	if (admitted)
		return 1;
	/* A source silent for longer than any bucket can stay in debt (the largest capacity and
	 * a late reading) owes nothing: its refusal is a bucket time that fg_bucket_ahead reads
	 * as a debt, as it does for a bucket idle until the hours before the unit clock wraps.
	 * Its bucket starts full, and this packet passes (uncharged, as a full bucket admits it)
	 * rather than being refused, or banned under `on_exceed: ban`. Signed: another CPU may
	 * have written the next tick there after this one read the clock, which is no silence. */
	if (rule->algorithm == FG_ALG_TOKEN_BUCKET && tick_units &&
	    (__s32)idle > (__s64)((FG_MAX_CAPACITY_UNITS + FG_STALE_MAX_UNITS) / tick_units)) {
		slot->state[0] = fg_units(jiffies);
		slot->state[1] = fg_units(jiffies);
		return 1;
	}
	slot->drops++;
	if (fg_refusal_starts(&slot->last_drop, jiffies)) {
		__u64 hi, lo;

		fg_addr_halves(slot->addr, &hi, &lo);
		fg_emit(FG_EVENT_LIMITED, slot->rule_id, slot->family, slot->prefix, hi, lo,
			jiffies);
	}
	return 0;
}

/* Charges `pkt` to `rule`'s bucket: 1 admitted, 0 refused. A global function, so the
 * verifier checks it once rather than once per rule position of the loop that calls it. */
__attribute__((noinline)) int fg_rule_admits(const struct fg_rule *rule,
					     const struct fg_packet *pkt, struct fg_eval *eval)
{
	struct fg_rule_state *state = NULL;
	struct fg_slot *slot = NULL;
	__u64 *bucket;
	int admitted;

	if (!rule || !pkt || !eval)
		return 0;
	bucket = fg_rule_bucket(rule, pkt, eval, &slot, &state);
	/* no bucket at all can only mean a broken table: do not limit on it */
	if (!bucket)
		return 1;
	admitted = fg_charge(bucket, rule, rule->algorithm, fg_ref_limits(rule, eval->ref),
			     fg_units(eval->jiffies), eval->len);
	if (slot) {
		admitted = fg_note_slot(slot, admitted, eval->jiffies, rule, pkt, eval);
	} else if ((eval->ref & FG_REF_KIND_MASK) == FG_REF_OVERFLOW) {
		fg_count_table(rule->id,
			       admitted ? FG_TABLE_UNTRACKED_PASS : FG_TABLE_UNTRACKED_DROP);
		if (!admitted && state &&
		    fg_refusal_starts(&state->last_untracked_drop, eval->jiffies))
			fg_emit(FG_EVENT_UNTRACKED_LIMITED, rule->id, pkt->family, 0, 0, 0,
				eval->jiffies);
	}
	return admitted;
}

/* The path of almost every packet a per-source token-bucket rule meets: a source seen
 * before, charged in the slot it owns. Inline in each visit of a rule, as a call costs as
 * much as the charge's compare-and-swap; every other case (a global rule, a new source, a
 * window algorithm) goes to fg_rule_admits, whose many branches the verifier checks once.
 * Returns 1 admitted, 0 refused, -1 when the packet is not its case. */
static __always_inline int fg_owned_admits(const struct fg_rule *rule, const struct fg_packet *pkt,
					   struct fg_eval *eval)
{
	struct fg_slot *slot;
	__u32 index;
	int admitted;

	if (rule->key_kind != FG_KEY_SOURCE || rule->algorithm != FG_ALG_TOKEN_BUCKET)
		return -1;
	slot = fg_owned_slot(fg_source_fingerprint(rule, pkt, eval), &index);
	if (!slot)
		return -1;
	eval->ref = FG_REF_SLOT | index;
	admitted = fg_charge(slot->state, rule, FG_ALG_TOKEN_BUCKET, rule->limits,
			     fg_units(eval->jiffies), eval->len);
	return fg_note_slot(slot, admitted, eval->jiffies, rule, pkt, eval);
}

/* The position of the lowest bit set in `x` (not 0): clang 14 cannot lower cttz for BPF. */
static __always_inline __u32 fg_lowest_bit(__u32 x)
{
	__u32 n = 0;

	x &= -x;
	n += (x & 0xffff0000U) ? 16 : 0;
	n += (x & 0xff00ff00U) ? 8 : 0;
	n += (x & 0xf0f0f0f0U) ? 4 : 0;
	n += (x & 0xccccccccU) ? 2 : 0;
	n += (x & 0xaaaaaaaaU) ? 1 : 0;
	return n;
}

/* The bucket pair a packet of `pkt` was charged to under `rule`, found again without taking
 * a slot (ref set as fg_rule_bucket sets it): the untracked bucket if the charge went there
 * (`untracked`), the global bucket of a global rule, else the source's slot, or NULL if the
 * source owns none now. So a slot that changed hands between the charge and the drop is
 * not handed what it never paid: the refund is missed instead, which admits less, never
 * more. */
static __always_inline __u64 *fg_charged_bucket(const struct fg_rule *rule,
						const struct fg_packet *pkt, struct fg_eval *eval,
						int untracked)
{
	struct fg_rule_state *state;
	struct fg_slot *slot;
	__u32 id = rule->id, index;

	if (rule->key_kind == FG_KEY_SOURCE && !untracked) {
		slot = fg_owned_slot(fg_source_fingerprint(rule, pkt, eval), &index);
		if (!slot)
			return NULL;
		eval->ref = FG_REF_SLOT | index;
		return slot->state;
	}
	state = bpf_map_lookup_elem(&rule_state, &id);
	if (!state)
		return NULL;
	return fg_shared_bucket(rule, state, eval);
}

/* State carried across the rule loop, kept in memory rather than registers so the
 * verifier checks one visit of a rule instead of every combination of earlier outcomes. */
struct fg_walk {
	struct fg_packet pkt;
	struct fg_eval eval;
	__u64 source_sets; /* bit per rule id whose source set holds this source */
	__u32 set;
	__u32 start;	 /* bit per rule position the walk set out to visit (fg_rule_index) */
	__u32 pending;	 /* those still to visit */
	__u32 uncharged; /* those visited that match but took nothing (refused it, or a global
			  * rule whose charge waits: fg_defers_charge) */
	__u32 untracked; /* those visited that charged their untracked bucket; a global rule,
			  * which has none, whose charge waits */
	__u16 verdict;
	__u16 next; /* the position fg_rule_walk looks at next (in memory: its frame is full) */
	__u32 reason;
	__u32 cookie; /* the SYN-cookie step's answer (syncookie.bpf.h), in what was padding */
};

/* Hands back what the earlier rules of this packet's walk took, when a later one drops it:
 * the rules at the positions set in the low half of `positions` (of rule set `set`), those
 * of the high half from their untracked bucket. Each rule is matched again and its bucket
 * found again (fg_charged_bucket) rather than recorded when charged: a record per rule a
 * packet passes costs more than finding the few again on a drop. A global function, as
 * fg_rule_admits. */
__attribute__((noinline)) int fg_refund_rules(const struct fg_packet *pkt, struct fg_eval *eval,
					      __u64 source_sets, __u32 set, __u64 positions)
{
	__u32 i, charged = (__u32)positions, untracked = (__u32)(positions >> 32);

	if (!pkt || !eval)
		return 0;
	for (i = 0; i < FG_MAX_RULES; i++) {
		struct fg_rule *rule;
		__u32 pos, bit;
		__u64 *state;

		if (!charged)
			break;
		bit = charged & -charged;
		charged &= charged - 1;
		pos = (set & 1) * FG_MAX_RULES + (fg_lowest_bit(bit) & (FG_MAX_RULES - 1));
		rule = bpf_map_lookup_elem(&rules, &pos);
		if (!rule || !fg_rule_matches(rule, pkt, source_sets))
			continue;
		state = fg_charged_bucket(rule, pkt, eval, (untracked & bit) != 0);
		if (!state)
			continue;
		fg_refund(state, rule, fg_ref_limits(rule, eval->ref), fg_units(eval->jiffies),
			  eval->len);
	}
	return 0;
}

/* The bit of the rule position the walk visited last: the highest it no longer has pending,
 * as it visits them from the lowest up. */
static __always_inline __u32 fg_last_visited(const struct fg_walk *walk)
{
	__u32 x = walk->start & ~walk->pending;

	x |= x >> 1;
	x |= x >> 2;
	x |= x >> 4;
	x |= x >> 8;
	x |= x >> 16;
	return x ^ (x >> 1);
}

/* The rule at position `index` of the walk's set if the packet matches it, else NULL; with
 * the clock read for its charge. */
static __always_inline struct fg_rule *fg_pending_rule(struct fg_walk *walk, __u32 index)
{
	__u32 pos = walk->set * FG_MAX_RULES + (index & (FG_MAX_RULES - 1));
	struct fg_rule *rule = bpf_map_lookup_elem(&rules, &pos);

	if (!rule || !fg_rule_matches(rule, &walk->pkt, walk->source_sets))
		return NULL;
	if (!walk->eval.jiffies)
		walk->eval.jiffies = fg_jiffies();
	return rule;
}

/* What a rule's decision does to the walk, once the rule is no longer pending: counted, and
 * a refusal drops the packet (ending the walk: returns 1) unless the rule only monitors. */
static __always_inline int fg_rule_outcome(struct fg_walk *walk, struct fg_settings *settings,
					   const struct fg_rule *rule, int admitted)
{
	int monitoring;

	if (admitted) {
		fg_count_rule(rule->id, FG_VERDICT_PASS, walk->eval.len);
		return 0;
	}
	walk->reason = FG_REASON_RATE;
	if (rule->action == FG_ACTION_MONITOR) {
		fg_count_rule(rule->id, FG_VERDICT_MONITOR, walk->eval.len);
		walk->verdict = FG_VERDICT_MONITOR;
		walk->uncharged |= fg_last_visited(walk);
		return 0;
	}
	/* In monitor mode (settings) fg_finish passes this packet and counts it monitor: the
	 * rule's counter says the same, while the walk goes on as it would without monitor. */
	monitoring = settings && FG_READ_ONCE(settings->monitor);
	fg_count_rule(rule->id, monitoring ? FG_VERDICT_MONITOR : FG_VERDICT_DROP, walk->eval.len);
	/* a ban only for a source over its own limit: one refused by the rule's untracked bucket
	 * (no slot for it while a spoofed flood keeps the new-source cap refusing) went over
	 * nothing of its own, and would be a real client banned on its first packet. Monitor
	 * mode bans nothing: a dry run's ban would outlast it, and the daemon hands every ban a
	 * rule starts to the fleet, whose hosts would drop what this one only counts. */
	if (rule->action == FG_ACTION_BAN && settings && !monitoring &&
	    (walk->eval.ref & FG_REF_KIND_MASK) == FG_REF_SLOT)
		fg_ban_source(settings, rule, &walk->pkt, walk->eval.jiffies, walk->eval.len);
	walk->verdict = FG_VERDICT_DROP;
	walk->uncharged |= fg_last_visited(walk); /* it took nothing: the others get theirs back */
	return 1;
}

/* Charges the packet to `rule`, no longer pending: 1 admitted, 0 refused. A source that owns
 * its slot under a token-bucket rule inline; any other case through fg_rule_admits. */
static __always_inline int fg_rule_charge(struct fg_walk *walk, const struct fg_rule *rule)
{
	int admitted = fg_owned_admits(rule, &walk->pkt, &walk->eval);

	if (admitted < 0) {
		admitted = fg_rule_admits(rule, &walk->pkt, &walk->eval);
		if (admitted && (walk->eval.ref & FG_REF_KIND_MASK) == FG_REF_OVERFLOW)
			walk->untracked |= fg_last_visited(walk);
	}
	return admitted;
}

/* Whether the global bucket of `rule` would admit the packet of `eval`, read without a
 * write (fg_would_admit). A global function, so a walk's visit of a rule keyed by source
 * carries no more than the test that leads here. */
__attribute__((noinline)) int fg_global_would_admit(const struct fg_rule *rule,
						    const struct fg_eval *eval)
{
	struct fg_rule_state *state;
	__u32 id;

	if (!rule || !eval)
		return 0;
	id = rule->id;
	state = bpf_map_lookup_elem(&rule_state, &id);
	return state && fg_would_admit(state->global_state, rule, rule->limits,
				       fg_units(eval->jiffies), eval->len);
}

/* Whether a global rule's charge waits for the rules after it: yes when some are still to
 * visit and its bucket would admit the packet. A flood that a later rule drops (sources over
 * their own limits behind a global cap) then never writes the global bucket, which every
 * CPU shares: charged and handed back, it took two locked writes a packet on one cache line
 * from every CPU, and the charges of real clients lost their compare-and-swap races to it
 * (refused after FG_CAS_RETRIES). fg_settle_deferred charges it once the others admitted. */
static __always_inline int fg_defers_charge(struct fg_walk *walk, const struct fg_rule *rule)
{
	return rule->key_kind == FG_KEY_GLOBAL && walk->pending &&
	       fg_global_would_admit(rule, &walk->eval);
}

/* Visits the rule at position `index`, the lowest pending (rules decide in their order in
 * the config); returns 1 when its refusal ends the walk. A global rule whose charge waits
 * (fg_defers_charge) took nothing yet (`uncharged`, so a later drop hands it nothing), is
 * marked in `untracked`, which no global rule uses otherwise, and is counted once its
 * outcome is known (fg_settle_deferred). */
static __always_inline int fg_rule_visit_at(struct fg_walk *walk, struct fg_settings *settings,
					    __u32 index)
{
	struct fg_rule *rule;

	walk->pending &= ~(1U << (index & (FG_MAX_RULES - 1)));
	rule = fg_pending_rule(walk, index);
	if (!rule)
		return 0;
	if (fg_defers_charge(walk, rule)) {
		walk->uncharged |= fg_last_visited(walk);
		walk->untracked |= fg_last_visited(walk);
		return 0;
	}
	return fg_rule_outcome(walk, settings, rule, fg_rule_charge(walk, rule));
}

/* Visits the next rule pending; returns 1 when the walk is over. */
static __always_inline int fg_rule_visit(struct fg_walk *walk, struct fg_settings *settings)
{
	__u32 pending = walk->pending;

	if (!pending)
		return 1;
	return fg_rule_visit_at(walk, settings, fg_lowest_bit(pending));
}

/* The settings, for a walk of several rules: looked up, not carried in the walk, as a global
 * function (fg_rule_walk) reads a pointer in its argument's memory as a number. Never NULL
 * (element 0 of an array); the verifier needs the check, and a walk ends there. */
static __always_inline struct fg_settings *fg_walk_settings(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&settings_map, &zero);
}

/* Settles the global rules whose charge waited for the rest of the walk (`deferred`,
 * positions of walk->set). A packet another rule dropped is counted passed by them (they
 * had room) and charged nothing. Else each is charged now, in order: a refusal (another CPU
 * took the room the look saw) decides as it would have in the walk; those charged before a
 * drop are no longer `uncharged`, so it hands them back with the walk's own. A global
 * function, as fg_rule_walk. */
__attribute__((noinline)) int fg_settle_deferred(struct fg_walk *walk, __u32 deferred)
{
	struct fg_settings *settings;
	__u32 i;

	if (!walk)
		return 0;
	settings = fg_walk_settings();
	if (!settings)
		return 0;
	for (i = 0; i < FG_MAX_RULES; i++) {
		struct fg_rule *rule;
		__u32 pos, bit, verdict;

		if (!deferred)
			break;
		bit = deferred & -deferred;
		deferred &= deferred - 1;
		pos = (walk->set & 1) * FG_MAX_RULES + (fg_lowest_bit(bit) & (FG_MAX_RULES - 1));
		rule = bpf_map_lookup_elem(&rules, &pos);
		if (!rule || rule->key_kind != FG_KEY_GLOBAL)
			continue;
		if (walk->verdict == FG_VERDICT_DROP ||
		    fg_rule_admits(rule, &walk->pkt, &walk->eval)) {
			if (walk->verdict != FG_VERDICT_DROP)
				walk->uncharged &= ~bit;
			fg_count_rule(rule->id, FG_VERDICT_PASS, walk->eval.len);
			continue;
		}
		walk->reason = FG_REASON_RATE;
		verdict = rule->action == FG_ACTION_MONITOR || FG_READ_ONCE(settings->monitor)
			      ? FG_VERDICT_MONITOR
			      : FG_VERDICT_DROP;
		fg_count_rule(rule->id, verdict, walk->eval.len);
		if (rule->action == FG_ACTION_MONITOR) {
			walk->verdict = FG_VERDICT_MONITOR;
			continue;
		}
		/* the rest, past the one that drops, had room: counted passed, charged nothing */
		walk->verdict = FG_VERDICT_DROP;
	}
	return 0;
}

/* The walk of a packet that meets several rules, where the kernel has may_goto (6.9): one
 * call for the whole walk, each rule a turn of the loop. A global function, checked once
 * for any walk; the loop ends when no rule is pending, at most FG_MAX_RULES turns, long
 * before the loop budget could (see fg_can_loop). */
__attribute__((noinline)) int fg_rule_walk(struct fg_walk *walk)
{
	struct fg_settings *settings;

	if (!walk)
		return 0;
	settings = fg_walk_settings();
	if (!settings)
		return 0;
	/* position by position rather than a search for the lowest pending bit each turn: with
	 * every rule matching, the search cost more than a skipped position does. No pending
	 * bit is below `next`: those were visited. */
	while (fg_can_loop) {
		__u32 index = walk->next & (FG_MAX_RULES - 1);
		__u32 pending = walk->pending >> index;

		if (!pending)
			break;
		walk->next = index + 1;
		if ((pending & 1) && fg_rule_visit_at(walk, settings, index))
			break;
	}
	return 0;
}

/* One rule of the walk on older kernels: a global function, checked once with the walk's
 * contents unknown, as fg_rule_walk is. A `bpf_loop` callback is checked with every value
 * the caller's stack holds for the walk, and the verifier of Linux 6.18.44 gave up on that
 * (a million instructions checked) even with one rule a step; as a call, floodgate_older
 * costs it about what floodgate_xdp does, for one more call per rule on those kernels. */
__attribute__((noinline)) int fg_rule_visit_one(struct fg_walk *walk)
{
	struct fg_settings *settings;

	if (!walk)
		return 1;
	settings = fg_walk_settings();
	if (!settings)
		return 1;
	return fg_rule_visit(walk, settings);
}

/* The `bpf_loop` callback, the walk on older kernels: a rule a step. It keeps nothing on
 * its frame, so the chain of frames down to fg_find_slot is that of fg_rule_walk. */
static int fg_rule_step(__u32 i, struct fg_walk *walk) { return fg_rule_visit_one(walk) ? 1 : 0; }

/* The walk of a packet that meets one rule (`pending`, one bit), the usual case: inline, as
 * a call costs as much as the charge where returns are made safe against speculation (SRSO
 * on AMD). */
static __always_inline void fg_single_rule(struct fg_walk *walk, struct fg_settings *settings,
					   __u32 pending)
{
	struct fg_rule *rule = fg_pending_rule(walk, fg_lowest_bit(pending));

	walk->pending = 0;
	if (rule)
		fg_rule_outcome(walk, settings, rule, fg_rule_charge(walk, rule));
}

/* Bit `rule id` for every rule of `set` whose source set holds `pkt`'s source. */
static __always_inline __u64 fg_source_sets(__u32 set, const struct fg_packet *pkt)
{
	union fg_lpm_key key;
	__u64 *bits;
	void *map;

	fg_lpm_key(pkt, pkt->family == FG_FAMILY_V4 ? 32 : 128, &key);
	if (pkt->family == FG_FAMILY_V4)
		map = set ? (void *)&sources_v4_1 : (void *)&sources_v4_0;
	else
		map = set ? (void *)&sources_v6_1 : (void *)&sources_v6_0;
	bits = bpf_map_lookup_elem(map, &key);
	return bits ? *bits : 0;
}

/* The fg_packet_class of `pkt`. */
static __always_inline __u32 fg_packet_class(const struct fg_packet *pkt)
{
	if (pkt->fragment == FG_LATER_FRAGMENT_ANY_PROTOCOL)
		return FG_CLASS_ANY;
	switch (pkt->l4_proto) {
	case IPPROTO_TCP:
		return FG_CLASS_TCP;
	case IPPROTO_UDP:
		return FG_CLASS_UDP;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return FG_CLASS_ICMP;
	}
	return FG_CLASS_OTHER;
}

/* How a packet that meets several rules is walked: the program for kernels with may_goto
 * (6.9) and the one for older kernels differ only in this. */
enum fg_walk_kind {
	FG_WALK_MAY_GOTO,
	FG_WALK_BPF_LOOP,
};

/* A rule fg_apply_rules leaves out, one that decided the packet already (the SYN-cookie
 * rule): bit 6, then the rule set in bit 5 and the position in the set below it. 0 is none.
 * With FG_SKIP_UNVERIFIED the rules keyed by source are left out too (a SYN answered with a
 * cookie, whose source may be spoofed: no slot, no ban for it; global rules still count it).
 * The packet was decided against that set: if a reload made another one active since, it
 * is dropped (one packet, which its sender sends again). */
#define FG_SKIP_RULE(set, pos) (1U << 6 | ((set)&1) << 5 | ((pos) & (FG_MAX_RULES - 1)))
#define FG_SKIP_UNVERIFIED (1U << 7)

/* Runs the active rule set over `walk->pkt`, the frame the parser filled in place (a walk
 * of its own would copy it, and the bytes of that copy are what the verifier's 512-byte cap
 * on a chain of frames leaves the rule step and the charge); returns the verdict and sets
 * *reason. `jiffies` is the clock reading if one was taken already (0 if not); `skip` a rule
 * left out (FG_SKIP_RULE, 0 none); `kind`, a constant of the program, says how several
 * rules are walked. */
static __always_inline __u32 fg_apply_rules(struct fg_settings *settings, struct fg_walk *walk,
					    __u32 len, __u64 jiffies, __u32 *reason, __u32 skip,
					    enum fg_walk_kind kind)
{
	const struct fg_packet *pkt = &walk->pkt;
	struct fg_rule_index *index;
	struct fg_active *act;
	__u32 zero = 0, count, class, unverified = 0;

	walk->eval.seed = settings->hash_seed;
	walk->eval.len = len;
	walk->eval.jiffies = jiffies;
	walk->verdict = FG_VERDICT_PASS;
	walk->reason = *reason;
	act = bpf_map_lookup_elem(&active_map, &zero);
	if (!act)
		return FG_VERDICT_PASS;
	/* one 8-byte read: the set and its rule count are always seen together */
	{
		struct fg_active snapshot;

		*(__u64 *)&snapshot = FG_READ_ONCE(*(__u64 *)act);
		walk->set = snapshot.set & 1;
		count = snapshot.rule_count;
		if (skip) {
			if ((skip & ~FG_SKIP_UNVERIFIED) != FG_SKIP_RULE(walk->set, skip))
				return FG_VERDICT_DROP;
			unverified = skip & FG_SKIP_UNVERIFIED;
			skip = 1U << (skip & (FG_MAX_RULES - 1));
		}
		if (!count)
			return FG_VERDICT_PASS;
		/* one rule, the usual config: matched as it is, without the index (a filter by
		 * protocol, which fg_rule_matches applies too) or a search for its position; a
		 * drop by the only rule has nothing to refund */
		if (count == 1) {
			if (skip & 1)
				return FG_VERDICT_PASS;
			if (snapshot.has_sources)
				walk->source_sets = fg_source_sets(walk->set, pkt);
			walk->start = 1;
			fg_single_rule(walk, settings, 1);
			*reason = walk->reason;
			return walk->verdict;
		}
		index = bpf_map_lookup_elem(&rule_index, &walk->set);
		if (!index)
			return FG_VERDICT_PASS;
		class = fg_packet_class(pkt);
		if (class >= FG_PACKET_CLASSES)
			return FG_VERDICT_PASS;
		walk->pending = index->rules[class] & ~skip;
		if (unverified)
			walk->pending &= ~index->source_rules;
		if (count < FG_MAX_RULES)
			walk->pending &= (1U << count) - 1;
		if (!walk->pending)
			return FG_VERDICT_PASS;
		walk->start = walk->pending;
		if (snapshot.has_sources)
			walk->source_sets = fg_source_sets(walk->set, pkt);
	}
	/* most packets meet one rule: visited inline, they are spared the loop and its calls */
	if (!(walk->pending & (walk->pending - 1)))
		fg_single_rule(walk, settings, walk->pending);
	else if (kind == FG_WALK_MAY_GOTO)
		fg_rule_walk(walk);
	else
		bpf_loop(FG_MAX_RULES, fg_rule_step, walk, 0);
	/* the global rules whose charge waited for the others (fg_defers_charge): took nothing
	 * and marked untracked, which only a charge that was made marks otherwise */
	if (walk->untracked & walk->uncharged)
		fg_settle_deferred(walk, walk->untracked & walk->uncharged);
	if (walk->verdict == FG_VERDICT_DROP) {
		/* the rules visited (set out with, no longer pending) but those that took nothing,
		 * the one that drops among them */
		__u32 charged = walk->start & ~walk->pending & ~walk->uncharged;

		if (charged)
			fg_refund_rules(pkt, &walk->eval, walk->source_sets, walk->set,
					(__u64)walk->untracked << 32 | charged);
	}
	*reason = walk->reason;
	return walk->verdict;
}

#endif /* FLOODGATE_RULES_BPF_H */
