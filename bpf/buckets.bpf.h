/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The bucket table: finding or taking a source's slot, and charging a packet to a bucket
 * pair (pps, bps) with compare-and-swap so a limit holds exactly across CPUs. */
#ifndef FLOODGATE_BUCKETS_BPF_H
#define FLOODGATE_BUCKETS_BPF_H

#include "clock.bpf.h"
#include "fg_gcra.h"
#include "fg_window.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "returning.bpf.h"

/* CAS attempts before a packet is refused: losing this many races in a row means other
 * CPUs are admitting packets of this key right now, so refusing cannot over-admit. */
#define FG_CAS_RETRIES 8

/* Set at load by the controller. */
const volatile __u64 tick_units = 0; /* bucket time units per jiffy */

/* The clock: jiffies, the cheapest one (DESIGN.md), read once per packet; buckets count
 * in units of jiffies × tick_units. Its error is at most one tick of tokens: between two
 * readings the true time differs from the clock's by under a tick. */
static __always_inline __u64 fg_units(__u64 jiffies) { return jiffies * tick_units; }

/* A source key: a rule and a masked address as two host-order halves. */
struct fg_key {
	__u64 hi;
	__u64 lo;
	__u32 rule_id;
	__u32 rule_epoch;
	__u8 family;
	__u8 prefix;
};

static __always_inline __u64 fg_prefix_mask(__u32 bits)
{
	if (bits == 0)
		return 0;
	if (bits >= 64)
		return ~0ULL;
	return ~0ULL << (64 - bits);
}

/* The prefix `pkt`'s source is keyed (and banned) by under a rule of prefixes `v4_prefix`
 * and `v6_prefix`: the one of its family, but for the ranges fg_packet.has_source marks. */
static __always_inline __u8 fg_source_prefix(const struct fg_packet *pkt, __u8 v4_prefix,
					     __u8 v6_prefix)
{
	if (pkt->family == FG_FAMILY_V4)
		return pkt->has_source & FG_SOURCE_WHOLE ? 32 : v4_prefix;
	return pkt->has_source & FG_SOURCE_WHOLE ? 128 : v6_prefix;
}

/* `pkt`'s source masked to the prefix of its family (fg_source_prefix), into key (the rule
 * fields untouched). */
static __always_inline void fg_mask_source(const struct fg_packet *pkt, __u8 v4_prefix,
					   __u8 v6_prefix, struct fg_key *key)
{
	__u8 prefix = fg_source_prefix(pkt, v4_prefix, v6_prefix);

	key->family = pkt->family;
	key->prefix = prefix;
	if (pkt->family == FG_FAMILY_V4) {
		__u32 v4;

		__builtin_memcpy(&v4, pkt->addr, 4);
		key->hi = ((__u64)bpf_ntohl(v4) << 32) & fg_prefix_mask(prefix);
		key->lo = 0;
	} else {
		__u64 hi, lo;

		__builtin_memcpy(&hi, pkt->addr, 8);
		__builtin_memcpy(&lo, pkt->addr + 8, 8);
		key->hi = bpf_be64_to_cpu(hi) & fg_prefix_mask(prefix);
		key->lo = prefix > 64 ? bpf_be64_to_cpu(lo) & fg_prefix_mask(prefix - 64) : 0;
	}
}

static __always_inline void fg_make_key(const struct fg_packet *pkt, const struct fg_rule *rule,
					struct fg_key *key)
{
	key->rule_id = rule->id;
	key->rule_epoch = rule->epoch;
	fg_mask_source(pkt, rule->ipv4_prefix, rule->ipv6_prefix, key);
}

/* Whether one state word of a slot is idle, by the owner's algorithm. */
static __always_inline int fg_word_idle(__u64 word, __u8 algorithm, __u32 window_ms, __u64 now)
{
	if (algorithm == FG_ALG_TOKEN_BUCKET)
		return fg_bucket_ahead(word, now, 0) == 0;
	if (!window_ms)
		return 1;
	return fg_window_idle(word, algorithm, now >> FG_TIME_SHIFT, window_ms * 1000000ULL);
}

/* A slot is idle when none of its state still limits anyone: it is full, so a new source
 * may take it over. */
static __always_inline int fg_slot_idle(const struct fg_slot *slot, __u64 now)
{
	__u8 algorithm = FG_READ_ONCE(slot->algorithm);
	__u32 window_ms = FG_READ_ONCE(slot->window_ms);

	return fg_word_idle(FG_READ_ONCE(slot->state[FG_LIMIT_PPS]), algorithm, window_ms, now) &&
	       fg_word_idle(FG_READ_ONCE(slot->state[FG_LIMIT_BPS]), algorithm, window_ms, now);
}

/* Charges one unit to a plain GCRA word (the new-source cap) with compare-and-swap. */
static __always_inline int fg_gcra_take(__u64 *word, __u64 now, const struct fg_limit *limit)
{
	int i;

	for (i = 0; i < FG_CAS_RETRIES; i++) {
		__u64 old = FG_READ_ONCE(*word), next;

		if (!fg_gcra_admit(old, now, limit->interval, limit->capacity, &next))
			return 0;
		if (__sync_val_compare_and_swap(word, old, next) == old)
			return 1;
	}
	return 0;
}

/* Why a source was left without a slot: the fg_table_stat it is counted under. */
#define FG_SLOT_FOUND FG_TABLE_STAT_COUNT

/* Makes the idle slot `slot` (whose owner was `owner`) the slot of `key`; 0 if another
 * CPU took it first. */
static __always_inline int fg_take_slot(struct fg_slot *slot, __u64 owner, __u64 fp,
					const struct fg_key *key, const struct fg_rule *rule,
					__u64 jiffies)
{
	__u64 hi = bpf_cpu_to_be64(key->hi), lo = bpf_cpu_to_be64(key->lo), fresh;

	/* Race: the old owner may charge this slot between the idle check and the CAS; that
	 * one charge is lost along with the old owner's claim, nothing else. */
	if (__sync_val_compare_and_swap(&slot->fingerprint, owner, fp) != owner)
		return 0;
	slot->rule_id = (__u8)key->rule_id;
	slot->family = key->family;
	slot->prefix = key->prefix;
	slot->algorithm = rule->algorithm;
	slot->window_ms = rule->window_ms;
	/* the slot was idle, so clearing it loses nothing: a bucket time of now is a full
	 * bucket at any clock (0 reads as a debt in the hours before the unit clock wraps),
	 * and 0 an empty window */
	fresh = rule->algorithm == FG_ALG_TOKEN_BUCKET ? fg_units(jiffies) : 0;
	slot->state[FG_LIMIT_PPS] = fresh;
	slot->state[FG_LIMIT_BPS] = fresh;
	slot->packets = 0;
	slot->drops = 0;
	slot->last_seen = (__u32)jiffies;
	slot->last_drop = 0;
	__builtin_memcpy(slot->addr, &hi, 8);
	__builtin_memcpy(slot->addr + 8, &lo, 8);
	return 1;
}

/* A slot lookup for fg_find_slot: the key, the clock and what the caller knows of the
 * source in, the slot index or the reason for having none out. */
struct fg_slot_query {
	struct fg_key key;
	__u64 fp; /* the key's fingerprint (fg_key_fingerprint of its fg_addr_hash) */
	__u64 seed;
	__u64 now;
	__u64 jiffies;
	__u32 index;	 /* out: the source's slot */
	__u32 why;	 /* out: FG_SLOT_FOUND, else the fg_table_stat that kept it out */
	__u32 verified;	 /* 1: the source answered a SYN cookie, so the verified-source cap
			  * applies instead of the new-source cap */
	__u32 returning; /* 1: a source under the new-source cap remembered as good
			  * (fg_cap_refuses), which takes the rule's reserve for those first */
	/* fg_find_slot's own, kept here rather than on its frame: the owner of the way it
	 * looks at, read before that way's idle check, and of the way it takes */
	__u64 owner;
	__u64 victim_owner;
};

/* The first slot of the set of ways a fingerprint's key may be in: bits 18 and up of the
 * fingerprint (FG_SET_SHIFT), as many as the table has sets, pick the set. */
static __always_inline __u32 fg_set_base(__u64 fp)
{
	return (__u32)(fp >> (FG_SET_SHIFT - 2)) & table_slot_mask & ~(FG_TABLE_WAYS - 1);
}

/* The tag of fingerprint `fp` in its set's tag word: its top 16 bits, which the set index
 * (bits 18 and up, as many as the table has sets) leaves alone. */
static __always_inline __u16 fg_slot_tag(__u64 fp) { return (__u16)(fp >> 48); }

/* Where way `way`'s tag sits in its set's word, which is written as four 2-byte tags: the
 * word's bytes are in the host's order. */
static __always_inline __u32 fg_tag_shift(__u32 way)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return 16 * way;
#else
	return 16 * (FG_TABLE_WAYS - 1 - way);
#endif
}

/* The slot `fp` owns in its set, and its index, if it owns one: the path of every packet of
 * a source seen before, kept inline (fg_find_slot is the path of a new one). The tags
 * first, and only a way whose tag matches is read. A way's tag is written just after its
 * slot changes owner, so for a moment a source that just took a slot may not be found here:
 * fg_find_slot then looks at the slots themselves before it takes one. *index is written
 * whether or not a slot is found, and means something only when one is. */
static __always_inline struct fg_slot *fg_owned_slot(__u64 fp, __u32 *index)
{
	__u32 i, base = fg_set_base(fp), set = base / FG_TABLE_WAYS;
	struct fg_set *index_of_set = bpf_map_lookup_elem(&sets, &set);
	__u16 tag = fg_slot_tag(fp);
	struct fg_slot *slot;
	__u64 word;

	if (!index_of_set)
		return NULL;
	word = FG_READ_ONCE(index_of_set->tags);
	for (i = 0; i < FG_TABLE_WAYS; i++) {
		if ((__u16)(word >> fg_tag_shift(i)) != tag)
			continue;
		/* the index is the lookup's key too: no key of its own on the caller's frame */
		*index = base + i;
		slot = bpf_map_lookup_elem(&buckets, index);
		if (slot && FG_READ_ONCE(slot->fingerprint) == fp)
			return slot;
	}
	return NULL;
}

/* Writes the tag of `fp` for the slot at `index` unless it is there already. A 2-byte
 * store: the other ways' tags in the word are left as they are, whoever writes them. */
static __always_inline void fg_set_slot_tag(__u32 index, __u64 fp)
{
	__u32 set = index / FG_TABLE_WAYS;
	struct fg_set *index_of_set = bpf_map_lookup_elem(&sets, &set);
	__u16 *tag;

	if (!index_of_set)
		return;
	tag = (__u16 *)&index_of_set->tags + (index & (FG_TABLE_WAYS - 1));
	if (FG_READ_ONCE(*tag) != fg_slot_tag(fp))
		FG_WRITE_ONCE(*tag, fg_slot_tag(fp));
}

/* Whether the rule's new-source cap would admit one more source at `now`, without taking
 * it: a look at one word, which lets a spoofed source the cap refuses skip the idle scan of
 * its set (four slots, each a cache miss in a large table) before being refused. */
static __always_inline int fg_cap_has_room(const struct fg_rule_state *state,
					   const struct fg_limit *cap, __u64 now)
{
	__u64 next;

	return fg_gcra_admit(FG_READ_ONCE(state->new_source_state), now, cap->interval,
			     cap->capacity, &next);
}

/* Whether `rule`'s new-source cap (in `state`) refuses a slot to the new source of `fp` at
 * once: one not remembered as good, with no room under the cap. *returning is set for a
 * remembered one, which takes the rule's reserve for those first, so a spoofed flood that
 * keeps the cap refusing does not keep it out. Asked before fg_find_slot, whose call and
 * idle scan of the source's set (four slots, each a cache miss in a large table) the path
 * of every packet of a spoofed flood is spared: such a source is counted capped whether or
 * not its set had an idle way. */
static __always_inline int fg_cap_refuses(const struct fg_rule *rule,
					  const struct fg_rule_state *state, __u64 fp,
					  __u64 jiffies, __u32 *returning)
{
	*returning = 0;
	if (!state || !rule->new_sources.interval)
		return 0;
	*returning =
	    rule->remember_ticks &&
	    fg_source_returns(fp, jiffies, rule->remember_connected ? FG_MEMORY_PROVEN : 0);
	return !*returning && !fg_cap_has_room(state, &rule->new_sources, fg_units(jiffies));
}

/* Finds the slot of the query's key among the ways of its set, or takes an idle one: the
 * one seen longest ago, and only if the rule's reserve for remembered sources or else its
 * new-source cap (in `state`) admits one more. Returns 1 with q->index set, or 0. A global
 * function, so the verifier checks its loops once rather than in every path of the rule
 * loop. A caller for a source under the cap asks fg_cap_refuses first. */
__attribute__((noinline)) int fg_find_slot(struct fg_slot_query *q, const struct fg_rule *rule,
					   struct fg_rule_state *state)
{
	__u32 i, idx, base, victim = 0, oldest = 0, found = 0;
	int under_cap, returning;
	struct fg_slot *slot;
	__u64 fp;

	if (!q || !rule)
		return 0;
	fp = q->fp;
	base = fg_set_base(fp);
	/* the slots themselves, not their tags: a source that took a slot on another CPU an
	 * instant ago, before its tag was written, must find it rather than take a second */
	for (i = 0; i < FG_TABLE_WAYS; i++) {
		idx = base + i;
		slot = bpf_map_lookup_elem(&buckets, &idx);
		if (slot && FG_READ_ONCE(slot->fingerprint) == fp) {
			/* its tag may be another's, if two sources took this way one after the
			 * other and their tags landed in the other order: put it right */
			fg_set_slot_tag(idx, fp);
			q->index = idx;
			q->why = FG_SLOT_FOUND;
			return 1;
		}
	}
	q->why = FG_TABLE_FULL;
	for (i = 0; i < FG_TABLE_WAYS; i++) {
		__u32 age;

		idx = base + i;
		slot = bpf_map_lookup_elem(&buckets, &idx);
		if (!slot)
			continue;
		/* the owner before its idle check: a way another CPU takes after this read
		 * then fails the take below, rather than being taken again from its new owner
		 * (whose fresh bucket looks idle) */
		q->owner = FG_READ_ONCE(slot->fingerprint);
		/* a way nobody owns is free: its bucket times of 0 were never written, and
		 * read as a debt in the hours before the unit clock wraps */
		if (q->owner && !fg_slot_idle(slot, q->now))
			continue;
		age = (__u32)q->jiffies - FG_READ_ONCE(slot->last_seen);
		if (!q->owner)
			age = 0xffffffffU; /* never used: the best choice */
		if (!found || age > oldest) {
			victim = idx;
			q->victim_owner = q->owner;
			oldest = age;
			found = 1;
		}
	}
	if (!found)
		return 0;
	slot = bpf_map_lookup_elem(&buckets, &victim);
	if (!slot)
		return 0;
	/* a new source, not one a SYN cookie verified, of a rule with a new-source cap (worked
	 * out here rather than first: two values fewer live through the search) */
	under_cap = !q->verified && state && rule->new_sources.interval;
	returning = under_cap && rule->remember_ticks && q->returning;
	if (q->verified) {
		if (state && rule->verified_sources.interval &&
		    !fg_gcra_take(&state->verified_state, q->now, &rule->verified_sources)) {
			q->why = FG_TABLE_CAPPED;
			return 0;
		}
	} else if (under_cap) {
		if (returning &&
		    (!rule->returning_sources.interval ||
		     fg_gcra_take(&state->returning_state, q->now, &rule->returning_sources)))
			q->why = FG_TABLE_RETURNING_SLOT;
		else if (!fg_gcra_take(&state->new_source_state, q->now, &rule->new_sources)) {
			q->why = FG_TABLE_CAPPED;
			return 0;
		}
	}
	if (!fg_take_slot(slot, q->victim_owner, fp, &q->key, rule, q->jiffies)) {
		q->why = FG_TABLE_FULL; /* another CPU took the way first */
		return 0;
	}
	/* the tag of the way's owner as read now, which is this source unless a CPU took the
	 * way from it in the meantime (and may have written its tag before this one lands) */
	fg_set_slot_tag(victim, FG_READ_ONCE(slot->fingerprint));
	q->index = victim;
	if (q->why != FG_TABLE_RETURNING_SLOT)
		q->why = FG_TABLE_NEW_SOURCE;
	return 1;
}

/* Decides one state word by `algorithm` (the rule's, or a constant where the caller knows
 * it, which leaves the verifier one path); `now` is in bucket time units. */
static __always_inline int fg_admit_word(const struct fg_rule *rule, __u8 algorithm, __u64 word,
					 __u64 now, __u64 increment, __u64 capacity, __u64 *next)
{
	__u64 window_ns;

	if (algorithm == FG_ALG_TOKEN_BUCKET)
		return fg_bucket_admit(word, now, increment, capacity, next);
	window_ns = rule->window_ms * 1000000ULL;
	if (algorithm == FG_ALG_FIXED_WINDOW && window_ns)
		return fg_fixed_admit(word, now >> FG_TIME_SHIFT, window_ns, increment, capacity,
				      next);
	if (algorithm == FG_ALG_SLIDING_WINDOW && window_ns)
		return fg_sliding_admit(word, now >> FG_TIME_SHIFT, window_ns, increment, capacity,
					next);
	return fg_bucket_admit(word, now, increment, capacity, next);
}

/* A token bucket's refusal of `increment` at `now`, given the time `old` it read: what it
 * leaves behind, and whether it admits after all. A global function, so the verifier
 * checks it once rather than at every charge. */
__attribute__((noinline)) int fg_bucket_refused(__u64 *word, __u64 old, __u64 now, __u64 increment,
						__u64 capacity)
{
	__u64 next;

	if (!word)
		return 0;
	/* 0 is a time never written (a slot just taken, a rule's state reset): idle, though
	 * in the hours before the unit clock wraps it reads as a debt (see fg_bucket_ahead) */
	if (!old)
		return increment <= capacity &&
		       __sync_val_compare_and_swap(word, 0, now + increment) == 0;
	/* a limit changed under a bucket in debt: forgive what the new one would not have let
	 * it owe, so `floodgate set` takes effect at once */
	if (fg_gcra_clamp(old, now, capacity, tick_units, &next))
		__sync_val_compare_and_swap(word, old, next);
	return 0;
}

/* Charges `increment` to one state word with compare-and-swap. `rule` is read only for the
 * window algorithms: a token bucket of no rule (the link-control budget) passes NULL. */
static __always_inline int fg_charge_one(const struct fg_rule *rule, __u8 algorithm, __u64 *word,
					 __u64 now, __u64 increment, __u64 capacity)
{
	int i;

	for (i = 0; i < FG_CAS_RETRIES; i++) {
		__u64 old = FG_READ_ONCE(*word), next;

		if (!fg_admit_word(rule, algorithm, old, now, increment, capacity, &next)) {
			/* the call only for the rare cases: a bucket time never written, or a
			 * debt beyond the capacity; a flood's refusals are neither */
			if (algorithm == FG_ALG_TOKEN_BUCKET &&
			    (!old || fg_bucket_ahead(old, now, capacity) > capacity + tick_units))
				return fg_bucket_refused(word, old, now, increment, capacity);
			return 0;
		}
		if (__sync_val_compare_and_swap(word, old, next) == old)
			return 1;
	}
	return 0;
}

/* Hands back `increment` charged to one state word at `now`. A GCRA time moves back by it; a
 * window count shrinks by it unless the window has moved on. `rule` is read only for the
 * window algorithms, as in fg_charge_one. */
static __always_inline void fg_refund_one(const struct fg_rule *rule, __u8 algorithm, __u64 *word,
					  __u64 now, __u64 increment)
{
	__u64 mask = algorithm == FG_ALG_FIXED_WINDOW ? FG_FIXED_COUNT_MASK : FG_SLIDING_COUNT_MAX;
	__u64 window_ns, charged;
	int i;

	if (algorithm == FG_ALG_TOKEN_BUCKET) {
		__sync_fetch_and_add(word, -increment);
		return;
	}
	window_ns = rule->window_ms * 1000000ULL;
	if (!window_ns) { /* charged as a token bucket (fg_admit_word) */
		__sync_fetch_and_add(word, -increment);
		return;
	}
	charged = fg_window_id(now >> FG_TIME_SHIFT, window_ns);
	for (i = 0; i < FG_CAS_RETRIES; i++) {
		__u64 old = FG_READ_ONCE(*word), next;

		if (!fg_window_refund(old, charged, increment, mask, &next))
			return;
		if (__sync_val_compare_and_swap(word, old, next) == old)
			return;
	}
}

static __always_inline __u64 fg_increment(const struct fg_limit *limits, __u32 kind, __u32 len)
{
	return limits[kind].interval * (kind == FG_LIMIT_BPS ? len : 1);
}

/* Charges a packet of `len` bytes to a state pair under `limits` (the rule's own, or its
 * untracked ones) by `algorithm` (see fg_admit_word); admits only if every limit that is
 * set admits. A pps charge is handed back when the bps limit then refuses. */
static __always_inline int fg_charge(__u64 *state, const struct fg_rule *rule, __u8 algorithm,
				     const struct fg_limit *limits, __u64 now, __u32 len)
{
	int pps = limits[FG_LIMIT_PPS].interval != 0;
	int bps = limits[FG_LIMIT_BPS].interval != 0;

	if (pps &&
	    !fg_charge_one(rule, algorithm, &state[FG_LIMIT_PPS], now,
			   fg_increment(limits, FG_LIMIT_PPS, len), limits[FG_LIMIT_PPS].capacity))
		return 0;
	if (bps && !fg_charge_one(rule, algorithm, &state[FG_LIMIT_BPS], now,
				  fg_increment(limits, FG_LIMIT_BPS, len),
				  limits[FG_LIMIT_BPS].capacity)) {
		if (pps)
			fg_refund_one(rule, algorithm, &state[FG_LIMIT_PPS], now,
				      fg_increment(limits, FG_LIMIT_PPS, len));
		return 0;
	}
	return 1;
}

/* Whether fg_charge would admit a packet of `len` at `now`, read without a write: a global
 * rule's look before the rules after it have decided (fg_defers_charge). A bucket deep in
 * debt (or never written, in the hours before the unit clock wraps) reads as refusing; the
 * charge then decides, as fg_charge_one does. */
static __always_inline int fg_would_admit(const __u64 *state, const struct fg_rule *rule,
					  const struct fg_limit *limits, __u64 now, __u32 len)
{
	__u64 next;

	if (limits[FG_LIMIT_PPS].interval &&
	    !fg_admit_word(rule, rule->algorithm, FG_READ_ONCE(state[FG_LIMIT_PPS]), now,
			   fg_increment(limits, FG_LIMIT_PPS, len), limits[FG_LIMIT_PPS].capacity,
			   &next))
		return 0;
	return !limits[FG_LIMIT_BPS].interval ||
	       fg_admit_word(rule, rule->algorithm, FG_READ_ONCE(state[FG_LIMIT_BPS]), now,
			     fg_increment(limits, FG_LIMIT_BPS, len), limits[FG_LIMIT_BPS].capacity,
			     &next);
}

/* Hands back what fg_charge took at `now`, when a later rule drops the packet. */
static __always_inline void fg_refund(__u64 *state, const struct fg_rule *rule,
				      const struct fg_limit *limits, __u64 now, __u32 len)
{
	if (limits[FG_LIMIT_PPS].interval)
		fg_refund_one(rule, rule->algorithm, &state[FG_LIMIT_PPS], now,
			      fg_increment(limits, FG_LIMIT_PPS, len));
	if (limits[FG_LIMIT_BPS].interval)
		fg_refund_one(rule, rule->algorithm, &state[FG_LIMIT_BPS], now,
			      fg_increment(limits, FG_LIMIT_BPS, len));
}

#endif /* FLOODGATE_BUCKETS_BPF_H */
