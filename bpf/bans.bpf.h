/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Bans: looking a source up in the ban tries, retiring expired bans without any controller,
 * and starting a ban when a rule with on_exceed ban refuses a packet. */
#ifndef FLOODGATE_BANS_BPF_H
#define FLOODGATE_BANS_BPF_H

#include "buckets.bpf.h"
#include "counters.bpf.h"
#include "events.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"

/* A key of either family's tries: an IPv4 key is the first 8 bytes of an IPv6 one. */
union fg_lpm_key {
	struct fg_lpm_v4 v4;
	struct fg_lpm_v6 v6;
};

/* The trie key of `pkt`'s source masked to `prefixlen` (at most 32 for IPv4). */
static __always_inline void fg_lpm_key(const struct fg_packet *pkt, __u32 prefixlen,
				       union fg_lpm_key *key)
{
	__u64 hi, lo;

	__builtin_memcpy(&hi, pkt->addr, 8);
	__builtin_memcpy(&lo, pkt->addr + 8, 8);
	hi = bpf_cpu_to_be64(bpf_be64_to_cpu(hi) & fg_prefix_mask(prefixlen));
	lo = prefixlen > 64 ? bpf_cpu_to_be64(bpf_be64_to_cpu(lo) & fg_prefix_mask(prefixlen - 64))
			    : 0;
	key->v6.prefixlen = prefixlen;
	__builtin_memcpy(key->v6.addr, &hi, 8);
	__builtin_memcpy(key->v6.addr + 8, &lo, 8);
}

/* The ban trie of `pkt`'s family. */
static __always_inline void *fg_ban_map(const struct fg_packet *pkt)
{
	return pkt->family == FG_FAMILY_V4 ? (void *)&bans_v4 : (void *)&bans_v6;
}

/* Reports a ban of `key` starting or ending. */
static __always_inline void fg_emit_ban(__u32 type, __u32 rule_id, __u8 family,
					const union fg_lpm_key *key, __u64 jiffies)
{
	__u64 hi, lo;

	fg_addr_halves(key->v6.addr, &hi, &lo);
	fg_emit(type, rule_id, family, (__u8)key->v6.prefixlen, hi, lo, jiffies);
}

/* Expired bans one lookup deletes on its way to a running one (a /32 and a /24 both over,
 * under a /16 still running): past them, the next packet of the source goes on. */
#define FG_BAN_LEVELS 4

/* Deletes the expired ban `ban` of `pkt`'s source, counted out only by whoever deleted it (the
 * controller's sweep may race us to it). A trie deletes by key: another CPU may have retired
 * the same ban and started a new one at its key since `ban` was read, and that one must
 * stay, so the entry at the key is read again and deleted only while it is the one judged
 * over (its start and end). The window left is the few instructions to the delete. Returns
 * 1 when the entry found instead (a ban started again at the key, or the longest one wider,
 * the key's own gone) is in force: it holds the source too, which is banned. */
static __always_inline int fg_retire_ban(struct fg_settings *settings, const struct fg_packet *pkt,
					 const struct fg_ban *ban, __u64 jiffies)
{
	union fg_lpm_key key;
	__u32 rule_id = ban->rule_id, prefixlen = ban->prefixlen;
	__u64 since = ban->since, expires = ban->expires;
	struct fg_ban *held;

	fg_lpm_key(pkt, prefixlen, &key);
	held = bpf_map_lookup_elem(fg_ban_map(pkt), &key);
	if (!held)
		return 0;
	if (held->prefixlen != prefixlen || held->since != since || held->expires != expires)
		return !held->expires || jiffies < held->expires;
	if (bpf_map_delete_elem(fg_ban_map(pkt), &key) == 0) {
		__sync_fetch_and_add(&settings->ban_entries[pkt->family & 1], -1);
		fg_emit_ban(FG_EVENT_BAN_END, rule_id, pkt->family, &key, jiffies);
	}
	return 0;
}

/* Whether `pkt`'s source is banned at `jiffies`, the longest ban that holds it found over at
 * `prefixlen`: that one is deleted, and the bans wider than it looked at in turn, since one
 * that ran out must not hide a wider one still running. A global function: the rare path,
 * kept off the main program's frame, which the 512-byte cap on a chain of frames cannot grow. */
__attribute__((noinline)) int fg_banned_past(struct fg_settings *settings,
					     const struct fg_packet *pkt, __u32 prefixlen,
					     __u64 jiffies)
{
	union fg_lpm_key key;
	struct fg_ban *ban;

	if (!settings || !pkt)
		return 0;
	/* FG_BAN_LEVELS retired, then one more look (the first finds the one fg_banned found) */
	for (int level = 0; level <= FG_BAN_LEVELS; level++) {
		fg_lpm_key(pkt, prefixlen, &key);
		ban = bpf_map_lookup_elem(fg_ban_map(pkt), &key);
		if (!ban)
			return 0;
		if (!ban->expires || jiffies < ban->expires)
			return 1;
		if (level == FG_BAN_LEVELS)
			return 0;
		prefixlen = ban->prefixlen;
		if (fg_retire_ban(settings, pkt, ban, jiffies))
			return 1; /* started again at its key by another CPU meanwhile */
		if (prefixlen == 0)
			return 0;
		prefixlen--; /* the longest ban wider than the one that ran out */
	}
	return 0;
}

/* Whether `pkt`'s source is banned at `jiffies`: the trie answers with the longest ban that
 * holds it, which is in force, or over (fg_banned_past). */
static __always_inline int fg_banned(struct fg_settings *settings, const struct fg_packet *pkt,
				     __u64 jiffies)
{
	__u32 prefixlen = pkt->family == FG_FAMILY_V4 ? 32 : 128;
	union fg_lpm_key key;
	struct fg_ban *ban;

	if (!settings->ban_entries[pkt->family & 1])
		return 0;
	fg_lpm_key(pkt, prefixlen, &key);
	ban = bpf_map_lookup_elem(fg_ban_map(pkt), &key);
	if (!ban)
		return 0;
	if (!ban->expires || jiffies < ban->expires)
		return 1;
	return fg_banned_past(settings, pkt, prefixlen, jiffies);
}

/* Bans `pkt`'s source (masked to the rule's prefix) for the rule's ban time, unless rule
 * bans have filled the table up to the room kept for manual bans and escalations. */
static __always_inline void fg_start_ban(struct fg_settings *settings, const struct fg_rule *rule,
					 const struct fg_packet *pkt, __u64 jiffies)
{
	struct fg_ban ban = {
	    .expires = jiffies + rule->ban_ticks, .since = jiffies, .rule_id = rule->id};
	union fg_lpm_key key;

	if (settings->ban_entries[pkt->family & 1] >= FG_BAN_MAX_ENTRIES - FG_BAN_RESERVE) {
		fg_count_table(rule->id, FG_TABLE_BAN_FAILED);
		return;
	}
	ban.prefixlen = fg_source_prefix(pkt, rule->ipv4_prefix, rule->ipv6_prefix);
	fg_lpm_key(pkt, ban.prefixlen, &key);
	if (bpf_map_update_elem(fg_ban_map(pkt), &key, &ban, BPF_NOEXIST) != 0) {
		/* a ban still running, or one over that the lookup did not reach (FG_BAN_LEVELS
		 * or more bans over narrower than it): that one is retired, and the ban starts
		 * in its place */
		struct fg_ban *held = bpf_map_lookup_elem(fg_ban_map(pkt), &key);

		if (!held || held->prefixlen != ban.prefixlen || !held->expires ||
		    jiffies < held->expires)
			return;
		(void)fg_retire_ban(settings, pkt, held, jiffies);
		if (bpf_map_update_elem(fg_ban_map(pkt), &key, &ban, BPF_NOEXIST) != 0)
			return;
	}
	__sync_fetch_and_add(&settings->ban_entries[pkt->family & 1], 1);
	fg_emit_ban(FG_EVENT_BAN_START, rule->id, pkt->family, &key, jiffies);
}

/* fg_start_ban for a rule's refusal of a packet of `len` bytes, as a global function: its
 * record and key would otherwise sit on the rule step's or the main program's frame, whose
 * bytes the 512-byte cap on a chain of frames cannot spare. A frame larger than the rule's
 * whole byte bucket (or window) is refused however quiet its source kept (a double-tagged
 * full-size frame is 1522 bytes, the smallest byte bucket 1518): that is the frame's size,
 * not the source over its limit, so it starts no ban. Such a frame never passes the rule
 * either way. */
__attribute__((noinline)) int fg_ban_source(struct fg_settings *settings,
					    const struct fg_rule *rule, const struct fg_packet *pkt,
					    __u64 jiffies, __u32 len)
{
	if (!settings || !rule || !pkt)
		return 0;
	if (rule->limits[FG_LIMIT_BPS].interval &&
	    rule->limits[FG_LIMIT_BPS].interval * len > rule->limits[FG_LIMIT_BPS].capacity)
		return 0;
	fg_start_ban(settings, rule, pkt, jiffies);
	return 0;
}

#endif /* FLOODGATE_BANS_BPF_H */
