/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Bans: looking a source up in the ban tries, retiring expired bans without any controller,
 * and starting a ban when a rule with on_exceed ban refuses a packet. */
#ifndef FLOODGATE_BANS_BPF_H
#define FLOODGATE_BANS_BPF_H

#include "buckets.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"

/* Builds the trie key of `pkt`'s source masked to `prefixlen`, into whichever of v4/v6 fits. */
static __always_inline void fg_ban_keys(const struct fg_packet *pkt, __u32 v4_prefix,
					__u32 v6_prefix, struct fg_lpm_v4 *v4, struct fg_lpm_v6 *v6)
{
	struct fg_key key;
	struct fg_rule shape = {.ipv4_prefix = v4_prefix, .ipv6_prefix = v6_prefix};
	__u64 hi, lo;

	fg_make_key(pkt, &shape, &key);
	hi = bpf_cpu_to_be64(key.hi);
	lo = bpf_cpu_to_be64(key.lo);
	v4->prefixlen = v4_prefix;
	__builtin_memcpy(v4->addr, &hi, 4);
	v6->prefixlen = v6_prefix;
	__builtin_memcpy(v6->addr, &hi, 8);
	__builtin_memcpy(v6->addr + 8, &lo, 8);
}

/* Whether `pkt`'s source is banned at `now`. An expired ban found on the way is deleted. */
static __always_inline int fg_banned(struct fg_settings *settings, const struct fg_packet *pkt,
				     __u64 now)
{
	struct fg_lpm_v4 v4;
	struct fg_lpm_v6 v6;
	struct fg_ban *ban;
	void *map;
	void *key;

	if (!settings->ban_entries[pkt->family & 1])
		return 0;
	fg_ban_keys(pkt, 32, 128, &v4, &v6);
	if (pkt->family == FG_FAMILY_V4) {
		map = &bans_v4;
		key = &v4;
	} else {
		map = &bans_v6;
		key = &v6;
	}
	ban = bpf_map_lookup_elem(map, key);
	if (!ban)
		return 0;
	if (!ban->expires || (__s64)(ban->expires - now) > 0)
		return 1;
	/* over: remove the exact entry that matched, and count it out once */
	fg_ban_keys(pkt, ban->prefixlen, ban->prefixlen, &v4, &v6);
	if (bpf_map_delete_elem(map, key) == 0)
		__sync_fetch_and_add(&settings->ban_entries[pkt->family & 1], -1);
	return 0;
}

/* Bans `pkt`'s source (masked to the rule's prefix) for the rule's ban time. */
static __always_inline void fg_start_ban(struct fg_settings *settings, const struct fg_rule *rule,
					 const struct fg_packet *pkt, __u64 now)
{
	struct fg_ban ban = {.expires = now + rule->ban_units, .rule_id = rule->id};
	struct fg_lpm_v4 v4;
	struct fg_lpm_v6 v6;
	int err;

	if (!ban.expires)
		ban.expires = 1; /* 0 would mean forever */
	fg_ban_keys(pkt, rule->ipv4_prefix, rule->ipv6_prefix, &v4, &v6);
	if (pkt->family == FG_FAMILY_V4) {
		ban.prefixlen = v4.prefixlen;
		err = bpf_map_update_elem(&bans_v4, &v4, &ban, BPF_NOEXIST);
	} else {
		ban.prefixlen = v6.prefixlen;
		err = bpf_map_update_elem(&bans_v6, &v6, &ban, BPF_NOEXIST);
	}
	if (!err)
		__sync_fetch_and_add(&settings->ban_entries[pkt->family & 1], 1);
}

#endif /* FLOODGATE_BANS_BPF_H */
