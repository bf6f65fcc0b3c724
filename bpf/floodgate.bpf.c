/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* floodgate's XDP program: the path of one packet, from parse to verdict. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

#include "bans.bpf.h"
#include "chain.bpf.h"
#include "clock.bpf.h"
#include "counters.bpf.h"
#include "events.bpf.h"
#include "floodgate_shared.h"
#include "lists.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "rules.bpf.h"
#include "syncookie.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Counts the verdict and turns it into an XDP action; monitor mode passes what it drops.
 * A pass is counted here, before the next program (if any) decides what becomes of it. */
static __always_inline int fg_finish(struct xdp_md *ctx, const struct fg_settings *settings,
				     __u32 verdict, __u32 reason, __u32 len)
{
	if (verdict == FG_VERDICT_DROP && settings->monitor)
		verdict = FG_VERDICT_MONITOR;
	fg_count(verdict, reason, len);
	if (verdict == FG_VERDICT_DROP)
		return XDP_DROP;
	return fg_pass_on(ctx);
}

static __always_inline int fg_by_policy(struct xdp_md *ctx, const struct fg_settings *settings,
					__u32 policy, __u32 reason, __u32 len)
{
	return fg_finish(ctx, settings,
			 policy == FG_POLICY_DROP ? FG_VERDICT_DROP : FG_VERDICT_PASS, reason, len);
}

/* The path of one packet; `kind` is the one thing the two programs below differ in. */
static __always_inline int fg_xdp(struct xdp_md *ctx, enum fg_walk_kind kind)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 len = data_end - data, zero = 0, verdict, reason = FG_REASON_DEFAULT, filters, family;
	__u32 allowed = 0;
	int parsed;
	struct fg_settings *settings;
	/* the rule walk's state, whose packet the parser fills in place */
	struct fg_walk walk = {};
	struct fg_packet *pkt = &walk.pkt;
	__u64 jiffies = 0;

	settings = bpf_map_lookup_elem(&settings_map, &zero);
	if (!settings)
		return XDP_PASS;

	parsed = fg_parse(ctx, pkt);
	if (!pkt->has_source) {
		if (parsed == FG_PARSE_NON_IP)
			return fg_finish(ctx, settings, FG_VERDICT_PASS, FG_REASON_NON_IP, len);
		return fg_by_policy(ctx, settings, settings->malformed_policy, FG_REASON_MALFORMED,
				    len);
	}

	/* Source first: deny and bans judge the source before anything else about the frame,
	 * so no crafted chain, length or fragment walks a denied source around them. An
	 * allowed source is spared the bans and the rules, not the frame's policies below: its
	 * address is as easily forged as any, and a flood of fragments or junk sent from it
	 * must not walk around `fragments: drop` or `malformed: drop`. The usual case, no list
	 * entry and no ban of the source's family, is one test. */
	family = pkt->family & 1;
	if (settings->deny_entries[family] | settings->allow_entries[family] |
	    settings->ban_entries[family]) {
		filters = FG_READ_ONCE(settings->list_filters);
		if (fg_listed(&deny_v4, &deny_v6, &deny_filter_v4, filters & (1U << FG_LIST_DENY),
			      settings->deny_entries, pkt))
			return fg_finish(ctx, settings, FG_VERDICT_DROP, FG_REASON_DENY, len);
		allowed = fg_listed(&allow_v4, &allow_v6, &allow_filter_v4,
				    filters & (1U << FG_LIST_ALLOW), settings->allow_entries, pkt);
		if (!allowed && settings->ban_entries[family]) {
			jiffies = fg_jiffies();
			if (fg_banned(settings, pkt, jiffies))
				return fg_finish(ctx, settings, FG_VERDICT_DROP, FG_REASON_BAN,
						 len);
		}
	}

	/* Neighbour Discovery and MLD that only this link can send meet no rule while the link's
	 * budget for them lasts: a `protocol: icmp` cap an echo flood drained must not take IPv6
	 * neighbour resolution down too. Past the budget they are ICMPv6 as any other, so a
	 * neighbour that changes its source with every frame cannot send them without bound. */
	if (parsed == FG_PARSE_LINK_CONTROL) {
		/* an allowed neighbour's pass by no rule, and spend nothing of the budget */
		if (allowed)
			return fg_finish(ctx, settings, FG_VERDICT_PASS, FG_REASON_ALLOW, len);
		if (!jiffies)
			jiffies = fg_jiffies();
		/* charged as a rule's token bucket is: a budget lowered while spent is
		 * clamped to empty, not read as an old, idle time and refilled */
		if (!settings->link_control.interval ||
		    fg_charge_one(NULL, FG_ALG_TOKEN_BUCKET, &settings->link_control_state,
				  fg_units(jiffies), settings->link_control.interval,
				  settings->link_control.capacity))
			return fg_finish(ctx, settings, FG_VERDICT_PASS, FG_REASON_LINK_CONTROL,
					 len);
		fg_count_into(&link_ctl_over, 0, len);
		parsed = FG_PARSE_OK;
	}

	/* What is odd about the frame has its policy; passed, it still meets every rule that
	 * needs no field the parser could not read (no ports, no flags). */
	if (parsed != FG_PARSE_OK) {
		__u32 policy = parsed == FG_PARSE_UNKNOWN_EXT ? settings->unknown_ext_policy
							      : settings->malformed_policy;

		/* a chain the parser gave up on may hide a Fragment header, which the stack
		 * reassembles: it follows the stricter of its policy and the fragments one */
		if (parsed == FG_PARSE_UNKNOWN_EXT && settings->fragment_policy == FG_POLICY_DROP)
			policy = FG_POLICY_DROP;

		if (policy == FG_POLICY_DROP)
			return fg_finish(ctx, settings, FG_VERDICT_DROP, FG_REASON_MALFORMED, len);
		reason = FG_REASON_MALFORMED;
		/* a chain the parser gave up on hides its protocol, which the stack behind reads:
		 * it is any protocol, so every protocol's rule counts it (a TCP flood behind 17
		 * headers must not pass a `protocol: tcp` rule by meeting only protocol-any ones)
		 */
		if (parsed == FG_PARSE_UNKNOWN_EXT)
			pkt->fragment = FG_LATER_FRAGMENT_ANY_PROTOCOL;
	} else if (pkt->fragment) {
		if (settings->fragment_policy == FG_POLICY_DROP)
			return fg_finish(ctx, settings, FG_VERDICT_DROP, FG_REASON_FRAGMENT, len);
		reason = FG_REASON_FRAGMENT;
	}
	if (allowed)
		return fg_finish(ctx, settings, FG_VERDICT_PASS, FG_REASON_ALLOW, len);

	/* a SYN or bare ACK may be a SYN cookie's; nothing to do unless a rule gives them */
	if (parsed == FG_PARSE_OK && fg_cookie_candidate(pkt) && !settings->monitor) {
		walk.cookie = fg_cookie_path(ctx, pkt, settings->hash_seed, len);
		switch (FG_COOKIE_OUTCOME(walk.cookie)) {
		case FG_COOKIE_DROP:
			return fg_finish(ctx, settings, FG_VERDICT_DROP, FG_REASON_RATE, len);
		case FG_COOKIE_AS_SYN:
			pkt->tcp_flags = FG_TCP_SYN;
			break;
		}
	}

	/* a segment of a connection may prove its source to rules that remember only those (a
	 * SYN is of none yet); the frame of a SYN-ACK the cookie step made is ours */
	if (parsed == FG_PARSE_OK && pkt->l4_proto == IPPROTO_TCP && !pkt->fragment &&
	    (pkt->tcp_flags & (FG_TCP_ACK | FG_TCP_SYN)) == FG_TCP_ACK &&
	    FG_COOKIE_OUTCOME(walk.cookie) != FG_COOKIE_TX)
		walk.eval.asks = FG_ASK_PROVABLE;
	/* the walk leaves out the cookie rule that let a SYN-ACK or cookie ACK through */
	verdict = fg_apply_rules(settings, &walk, len, jiffies, &reason,
				 FG_COOKIE_SKIP(walk.cookie), kind);
	/* a frame dropped here never reaches the stack, whose own lookup bounds these */
	if ((walk.eval.asks & FG_ASK_COUNT_MASK) &&
	    (verdict != FG_VERDICT_DROP || settings->monitor))
		fg_remember_connected(ctx, walk.eval.asks & FG_ASK_COUNT_MASK, walk.eval.jiffies);
	if (FG_COOKIE_OUTCOME(walk.cookie) == FG_COOKIE_TX) {
		/* the frame is the SYN-ACK now: out, or nowhere (monitor mode, if it came on
		 * since the cookie step, drops nothing, and so sends it) */
		if (verdict != FG_VERDICT_DROP || settings->monitor) {
			fg_count_table(FG_COOKIE_RULE_ID(walk.cookie), FG_TABLE_COOKIE_SENT);
			return XDP_TX;
		}
		fg_count(FG_VERDICT_DROP, reason, len);
		return XDP_DROP;
	}
	return fg_finish(ctx, settings, verdict, reason, len);
}

/* The controller loads one of the two (userspace/kernel/xdp_program.cpp), by whether the
 * kernel has may_goto: this one where it does (Linux 6.9 and later), */
SEC("xdp")
int floodgate_xdp(struct xdp_md *ctx) { return fg_xdp(ctx, FG_WALK_MAY_GOTO); }

/* and this one, whose rule walk is a bpf_loop, where it does not. */
SEC("xdp")
int floodgate_older(struct xdp_md *ctx) { return fg_xdp(ctx, FG_WALK_BPF_LOOP); }
