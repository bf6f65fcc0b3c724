/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Rule evaluation: a packet is charged to every rule it matches and passes only if all of
 * them admit it; what earlier rules took is handed back when a later one drops it. */
#ifndef FLOODGATE_RULES_BPF_H
#define FLOODGATE_RULES_BPF_H

#include "bans.bpf.h"
#include "buckets.bpf.h"
#include "counters.bpf.h"

/* Where a rule charged a packet: the kind in the top bits, a slot or rule id below. */
#define FG_REF_SLOT (0U << 30)
#define FG_REF_GLOBAL (1U << 30)
#define FG_REF_OVERFLOW (2U << 30)
#define FG_REF_KIND_MASK (3U << 30)

/* The buckets this packet was charged to so far; per CPU, so one packet's own scratch. */
struct fg_charges {
	__u32 ref[FG_MAX_RULES];
	__u32 rule_index[FG_MAX_RULES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_charges);
} charges SEC(".maps");

static __always_inline int fg_rule_matches(const struct fg_rule *rule, const struct fg_packet *pkt,
					   __u64 source_sets)
{
	__u32 i;

	if (rule->has_sources && !(source_sets & (1ULL << (rule->id & 63))))
		return 0;
	if (rule->protocol == IPPROTO_ICMP) {
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

/* The bucket pair `rule` charges for `pkt`, and a ref to find it again. */
static __always_inline __u64 *fg_rule_bucket(const struct fg_rule *rule, const struct fg_packet *pkt,
					     __u64 seed, __u64 now, __u32 *ref)
{
	__u32 id = rule->id;
	struct fg_rule_state *state;

	if (rule->key_kind == FG_KEY_SOURCE) {
		struct fg_key key;
		struct fg_slot *slot;
		__u32 index = 0;

		fg_make_key(pkt, rule, &key);
		slot = fg_find_slot(&key, rule, seed, now, &index);
		if (slot) {
			*ref = FG_REF_SLOT | index;
			return slot->state;
		}
	}
	state = bpf_map_lookup_elem(&rule_state, &id);
	if (!state)
		return NULL;
	if (rule->key_kind == FG_KEY_GLOBAL) {
		*ref = FG_REF_GLOBAL | id;
		return state->global_state;
	}
	/* every way of this source's set holds a source still limited: charge the shared
	 * bucket, so a table full of spoofed sources cannot hand out fresh buckets */
	*ref = FG_REF_OVERFLOW | id;
	return state->overflow_state;
}

static __always_inline __u64 *fg_ref_bucket(__u32 ref)
{
	__u32 index = ref & ~FG_REF_KIND_MASK;
	struct fg_rule_state *state;
	struct fg_slot *slot;

	if ((ref & FG_REF_KIND_MASK) == FG_REF_SLOT) {
		slot = bpf_map_lookup_elem(&buckets, &index);
		return slot ? slot->state : NULL;
	}
	state = bpf_map_lookup_elem(&rule_state, &index);
	if (!state)
		return NULL;
	return (ref & FG_REF_KIND_MASK) == FG_REF_GLOBAL ? state->global_state : state->overflow_state;
}

/* One rule's decision for one packet, as scalars in and out of fg_rule_admits. */
struct fg_eval {
	__u64 now;
	__u64 seed;
	__u32 len;
	__u32 ref; /* out: where the packet was charged */
};

/* Charges `pkt` to `rule`'s bucket: 1 admitted, 0 refused. A global function, so the
 * verifier checks it once rather than once per rule position of the loop that calls it. */
__attribute__((noinline)) int fg_rule_admits(const struct fg_rule *rule,
					     const struct fg_packet *pkt, struct fg_eval *eval)
{
	__u64 *state;

	if (!rule || !pkt || !eval)
		return 0;
	state = fg_rule_bucket(rule, pkt, eval->seed, eval->now, &eval->ref);
	/* no bucket at all can only mean a broken table: do not limit on it */
	if (!state)
		return 1;
	return fg_charge(state, rule, eval->now, eval->len);
}

/* Hands back every charge recorded in `done` (a global function for the same reason). */
__attribute__((noinline)) int fg_refund_charges(struct fg_charges *done, __u32 count, __u32 len)
{
	__u32 i;

	if (!done)
		return 0;
	for (i = 0; i < FG_MAX_RULES; i++) {
		struct fg_rule *rule;
		__u64 *state;
		__u32 pos;

		if (i >= count)
			break;
		pos = done->rule_index[i];
		rule = bpf_map_lookup_elem(&rules, &pos);
		state = fg_ref_bucket(done->ref[i]);
		if (rule && state)
			fg_refund(state, rule, len);
	}
	return 0;
}

/* State carried across the rule loop, kept in memory rather than registers so the
 * verifier checks one rule step instead of every combination of earlier outcomes. */
struct fg_walk {
	struct fg_packet pkt;
	struct fg_eval eval;
	struct fg_settings *settings;
	__u64 source_sets; /* bit per rule id whose source set holds this source */
	__u32 set;
	__u32 count;
	__u32 charged;
	__u32 verdict;
	__u32 reason;
};

static int fg_rule_step(__u32 i, struct fg_walk *walk)
{
	__u32 pos, zero = 0, charged;
	struct fg_charges *done;
	struct fg_rule *rule;

	if (i >= walk->count)
		return 1;
	pos = walk->set * FG_MAX_RULES + (i & (FG_MAX_RULES - 1));
	rule = bpf_map_lookup_elem(&rules, &pos);
	if (!rule || !fg_rule_matches(rule, &walk->pkt, walk->source_sets))
		return 0;
	if (!walk->eval.now)
		walk->eval.now = fg_now();
	if (fg_rule_admits(rule, &walk->pkt, &walk->eval)) {
		fg_count_rule(rule->id, FG_VERDICT_PASS, walk->eval.len);
		done = bpf_map_lookup_elem(&charges, &zero);
		charged = walk->charged;
		if (done && charged < FG_MAX_RULES) {
			done->ref[charged] = walk->eval.ref;
			done->rule_index[charged] = pos;
			walk->charged = charged + 1;
		}
		return 0;
	}
	walk->reason = FG_REASON_RATE;
	if (rule->action == FG_ACTION_MONITOR) {
		fg_count_rule(rule->id, FG_VERDICT_MONITOR, walk->eval.len);
		walk->verdict = FG_VERDICT_MONITOR;
		return 0;
	}
	fg_count_rule(rule->id, FG_VERDICT_DROP, walk->eval.len);
	if (rule->action == FG_ACTION_BAN && walk->settings)
		fg_start_ban(walk->settings, rule, &walk->pkt, walk->eval.now);
	done = bpf_map_lookup_elem(&charges, &zero);
	fg_refund_charges(done, walk->charged, walk->eval.len);
	walk->verdict = FG_VERDICT_DROP;
	return 1;
}

/* Bit `rule id` for every rule of `set` whose source set holds `pkt`'s source. */
static __always_inline __u64 fg_source_sets(__u32 set, const struct fg_packet *pkt)
{
	struct fg_lpm_v4 v4;
	struct fg_lpm_v6 v6;
	__u64 *bits;

	fg_ban_keys(pkt, 32, 128, &v4, &v6);
	if (pkt->family == FG_FAMILY_V4)
		bits = bpf_map_lookup_elem(set ? (void *)&sources_v4_1 : (void *)&sources_v4_0, &v4);
	else
		bits = bpf_map_lookup_elem(set ? (void *)&sources_v6_1 : (void *)&sources_v6_0, &v6);
	return bits ? *bits : 0;
}

/* Runs the active rule set over `pkt`; returns the verdict and sets *reason. `*now` is the
 * clock reading if one was taken already (0 if not) and gets the reading rules took. */
static __always_inline __u32 fg_apply_rules(struct fg_settings *settings, const struct fg_packet *pkt,
					    __u32 len, __u64 now, __u32 *reason)
{
	struct fg_walk walk = {.pkt = *pkt, .eval = {.seed = settings->hash_seed, .len = len, .now = now},
			       .settings = settings, .verdict = FG_VERDICT_PASS, .reason = *reason};
	struct fg_active *act;
	__u32 zero = 0;

	act = bpf_map_lookup_elem(&active_map, &zero);
	if (!act)
		return FG_VERDICT_PASS;
	/* one 8-byte read: the set and its rule count are always seen together */
	{
		struct fg_active snapshot;

		*(__u64 *)&snapshot = FG_READ_ONCE(*(__u64 *)act);
		walk.set = snapshot.set & 1;
		walk.count = snapshot.rule_count;
		if (snapshot.has_sources)
			walk.source_sets = fg_source_sets(walk.set, pkt);
	}
	if (!walk.count)
		return FG_VERDICT_PASS;
	bpf_loop(FG_MAX_RULES, fg_rule_step, &walk, 0);
	*reason = walk.reason;
	return walk.verdict;
}

#endif /* FLOODGATE_RULES_BPF_H */
