/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The bucket table: finding or taking a source's slot, and charging a packet to a bucket
 * pair (pps, bps) with compare-and-swap so a limit holds exactly across CPUs. */
#ifndef FLOODGATE_BUCKETS_BPF_H
#define FLOODGATE_BUCKETS_BPF_H

#include "fg_gcra.h"
#include "maps.bpf.h"
#include "parse.bpf.h"

#define FG_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* CAS attempts before a packet is refused: losing this many races in a row means other
 * CPUs are admitting packets of this key right now, so refusing cannot over-admit. */
#define FG_CAS_RETRIES 8

/* Set at load by the controller. */
const volatile __u64 tick_units = 0;      /* bucket time units per jiffy */
const volatile __u32 table_slot_mask = 0; /* slots in `buckets` - 1 (a power of two) */

/* The clock: jiffies, the cheapest one (DESIGN.md). Its error is at most one tick of
 * tokens: between two readings the true time differs from the clock's by under a tick. */
static __always_inline __u64 fg_now(void)
{
	return bpf_jiffies64() * tick_units;
}

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

static __always_inline void fg_make_key(const struct fg_packet *pkt, const struct fg_rule *rule,
					struct fg_key *key)
{
	__u8 v4_prefix = rule->ipv4_prefix, v6_prefix = rule->ipv6_prefix;

	key->rule_id = rule->id;
	key->rule_epoch = rule->epoch;
	key->family = pkt->family;
	if (pkt->family == FG_FAMILY_V4) {
		__u32 v4;

		__builtin_memcpy(&v4, pkt->addr, 4);
		key->prefix = v4_prefix;
		key->hi = ((__u64)bpf_ntohl(v4) << 32) & fg_prefix_mask(v4_prefix);
		key->lo = 0;
	} else {
		__u64 hi, lo;

		__builtin_memcpy(&hi, pkt->addr, 8);
		__builtin_memcpy(&lo, pkt->addr + 8, 8);
		key->prefix = v6_prefix;
		key->hi = bpf_be64_to_cpu(hi) & fg_prefix_mask(v6_prefix);
		key->lo = v6_prefix > 64 ? bpf_be64_to_cpu(lo) & fg_prefix_mask(v6_prefix - 64) : 0;
	}
}

/* A slot is idle when none of its buckets runs ahead of now: it is full, so a new source
 * may take it over. The owner's capacity is unknown here; the largest one is safe. */
static __always_inline int fg_slot_idle(const struct fg_slot *slot, __u64 now)
{
	return fg_gcra_ahead(FG_READ_ONCE(slot->tat[FG_LIMIT_PPS]), now, FG_MAX_CAPACITY_UNITS) == 0 &&
	       fg_gcra_ahead(FG_READ_ONCE(slot->tat[FG_LIMIT_BPS]), now, FG_MAX_CAPACITY_UNITS) == 0;
}

/* Finds the slot of `key` among the ways of its set, or takes an idle one. NULL when every
 * way belongs to a source that is still limited: the caller charges the shared bucket. */
static __always_inline struct fg_slot *fg_find_slot(const struct fg_key *key, __u64 seed, __u64 now,
						    __u32 *index)
{
	__u64 fp = fg_key_fingerprint(seed, key->rule_id, key->rule_epoch, key->family, key->hi, key->lo);
	__u32 base = (__u32)(fp >> 16) & table_slot_mask & ~(FG_TABLE_WAYS - 1);
	struct fg_slot *slot;
	__u32 i, idx;

	for (i = 0; i < FG_TABLE_WAYS; i++) {
		idx = base + i;
		slot = bpf_map_lookup_elem(&buckets, &idx);
		if (slot && FG_READ_ONCE(slot->fingerprint) == fp) {
			*index = idx;
			return slot;
		}
	}
	for (i = 0; i < FG_TABLE_WAYS; i++) {
		__u64 owner;

		idx = base + i;
		slot = bpf_map_lookup_elem(&buckets, &idx);
		if (!slot)
			continue;
		owner = FG_READ_ONCE(slot->fingerprint);
		if (!fg_slot_idle(slot, now))
			continue;
		/* Race: the old owner may charge this slot between the idle check and the CAS;
		 * the new owner then starts slightly drained, never over-full. */
		if (__sync_val_compare_and_swap(&slot->fingerprint, owner, fp) != owner)
			continue;
		slot->rule_id = key->rule_id;
		slot->family = key->family;
		slot->prefix = key->prefix;
		{
			__u64 hi = bpf_cpu_to_be64(key->hi), lo = bpf_cpu_to_be64(key->lo);

			__builtin_memcpy(slot->addr, &hi, 8);
			__builtin_memcpy(slot->addr + 8, &lo, 8);
		}
		*index = idx;
		return slot;
	}
	return NULL;
}

/* Charges `increment` to one bucket time word. */
static __always_inline int fg_charge_one(__u64 *tat, __u64 now, __u64 increment, __u64 capacity)
{
	int i;

	for (i = 0; i < FG_CAS_RETRIES; i++) {
		__u64 old = FG_READ_ONCE(*tat), next;

		if (!fg_gcra_admit(old, now, increment, capacity, &next))
			return 0;
		if (__sync_val_compare_and_swap(tat, old, next) == old)
			return 1;
	}
	return 0;
}

/* Charges a packet of `len` bytes to a bucket pair; admits only if every limit that is set
 * admits. A pps charge is handed back when the bps limit then refuses. */
static __always_inline int fg_charge(__u64 *tat, const struct fg_limit *limits, __u64 now, __u32 len)
{
	__u64 pps_interval = limits[FG_LIMIT_PPS].interval;
	__u64 bps_interval = limits[FG_LIMIT_BPS].interval;

	if (pps_interval &&
	    !fg_charge_one(&tat[FG_LIMIT_PPS], now, pps_interval, limits[FG_LIMIT_PPS].capacity))
		return 0;
	if (bps_interval &&
	    !fg_charge_one(&tat[FG_LIMIT_BPS], now, bps_interval * len, limits[FG_LIMIT_BPS].capacity)) {
		if (pps_interval)
			__sync_fetch_and_add(&tat[FG_LIMIT_PPS], -pps_interval);
		return 0;
	}
	return 1;
}

/* Hands back what fg_charge took, when a later rule drops the packet. */
static __always_inline void fg_refund(__u64 *tat, const struct fg_limit *limits, __u32 len)
{
	if (limits[FG_LIMIT_PPS].interval)
		__sync_fetch_and_add(&tat[FG_LIMIT_PPS], -limits[FG_LIMIT_PPS].interval);
	if (limits[FG_LIMIT_BPS].interval)
		__sync_fetch_and_add(&tat[FG_LIMIT_BPS], -(limits[FG_LIMIT_BPS].interval * len));
}

#endif /* FLOODGATE_BUCKETS_BPF_H */
