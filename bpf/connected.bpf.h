/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Remembering only sources that proved a return path (`remember: connected`): a source is
 * remembered (bpf/returning.bpf.h) only from a packet of a TCP connection this host has
 * established with it, which a spoofed address cannot have, as it never sees the SYN-ACK.
 * Without it, addresses made up and sent twice each before a flood fill the memory, and the
 * honest clients it is for are not remembered.
 *
 * The proof is a socket lookup, which needs the frame (the rule walk has only the parsed
 * packet), so the walk asks and the program's end proves: a rule whose source it admits
 * leaves an ask here (once a tick at most, as a rule that remembers every source seen
 * writes), and after the walk fg_remember_connected, if a memory is due (fg_memory_due)
 * and no rule dropped the frame, looks its connection up once and writes the asks only if
 * it is there: never more often than the kernel's own stack looks the same connection up
 * for the frames it is given, and never for the packets of a flood the rule refuses.
 *
 * The entries such a rule writes carry FG_MEMORY_PROVEN: only those let its sources back
 * in (an entry the rule wrote before a reload made it need proof does not), and one may
 * take the place of a fresh entry without it, so a rule that remembers every source seen
 * cannot fill the shared entries against it. */
#ifndef FLOODGATE_CONNECTED_BPF_H
#define FLOODGATE_CONNECTED_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
/* after linux/bpf.h, whose types they use */
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "fg_tcp_state.h"
#include "parse.bpf.h"
#include "returning.bpf.h"

/* fg_eval.asks: the packet may prove its source (a TCP segment of a connection: ACK set,
 * SYN clear, not a fragment, not turned into a SYN-ACK), and below it how many asks the
 * walk left in `remember_asks` */
#define FG_ASK_PROVABLE (1U << 31)
#define FG_ASK_COUNT_MASK 0xffU

struct fg_remember_ask {
	__u64 fp;
	__u32 rule_id;
	__u32 remember_ticks;
};

/* A packet's asks, one per rule at most (a walk visits a rule once), per CPU: a packet
 * runs on one CPU from the walk to the program's end. */
struct fg_remember_asks {
	struct fg_remember_ask ask[FG_MAX_RULES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_remember_asks);
} remember_asks SEC(".maps");

/* Leaves the ask of the source of `fp` under rule `rule_id` at place `count`: 1 if kept. */
static __always_inline int fg_ask_memory(__u64 fp, __u32 rule_id, __u32 remember_ticks, __u32 count)
{
	struct fg_remember_asks *asks;
	__u32 zero = 0;

	if (count >= FG_MAX_RULES)
		return 0;
	asks = bpf_map_lookup_elem(&remember_asks, &zero);
	if (!asks)
		return 0;
	asks->ask[count].fp = fp;
	asks->ask[count].rule_id = rule_id;
	asks->ask[count].remember_ticks = remember_ticks;
	return 1;
}

/* The connection tuple of the TCP segment in `ctx`'s frame (Ethernet, up to two VLAN tags,
 * IPv4 with options or IPv6 without extension headers): its size, 0 for another frame. */
static __always_inline __u32 fg_tcp_tuple(struct xdp_md *ctx, struct bpf_sock_tuple *t)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *pos = data + sizeof(*eth);
	struct tcphdr *tcp;
	__u16 proto;
	int i;

	if (!FG_FITS(eth, sizeof(*eth), end))
		return 0;
	proto = eth->h_proto;
	for (i = 0; i < FG_MAX_VLAN_TAGS; i++) {
		__be16 *tag = pos;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if (!FG_FITS(tag, 4, end))
			return 0;
		proto = tag[1];
		pos += 4;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = pos;

		if (!FG_FITS(ip, sizeof(*ip), end) || ip->ihl < 5 || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return 0;
		tcp = pos + ((ip->ihl * 4) & 0x3c);
		if (!FG_FITS(tcp, sizeof(*tcp), end))
			return 0;
		t->ipv4.saddr = ip->saddr;
		t->ipv4.daddr = ip->daddr;
		t->ipv4.sport = tcp->source;
		t->ipv4.dport = tcp->dest;
		return sizeof(t->ipv4);
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = pos;

		if (!FG_FITS(ip6, sizeof(*ip6), end) || ip6->nexthdr != IPPROTO_TCP)
			return 0;
		tcp = pos + sizeof(*ip6);
		if (!FG_FITS(tcp, sizeof(*tcp), end))
			return 0;
		__builtin_memcpy(t->ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(t->ipv6.daddr, &ip6->daddr, 16);
		t->ipv6.sport = tcp->source;
		t->ipv6.dport = tcp->dest;
		return sizeof(t->ipv6);
	}
	return 0;
}

/* Whether the segment in `ctx`'s frame belongs to a connection this host established. */
static __always_inline int fg_tcp_connected(struct xdp_md *ctx)
{
	struct bpf_sock_tuple tuple = {};
	struct bpf_sock *sk;
	__u32 size = fg_tcp_tuple(ctx, &tuple), state;

	if (!size)
		return 0;
	sk = bpf_skc_lookup_tcp(ctx, &tuple, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	state = sk->state;
	bpf_sk_release(sk);
	return fg_tcp_state_proves(state);
}

/* After the walk: writes the `count` memories its rules asked for, if one is due and the
 * packet proves its source. A global function: the lookup's tuple stays off the main
 * program's frame. */
__attribute__((noinline)) int fg_remember_connected(struct xdp_md *ctx, __u32 count, __u64 jiffies)
{
	struct fg_remember_asks *asks;
	__u32 zero = 0, i, due = 0;

	if (!ctx || !count)
		return 0;
	asks = bpf_map_lookup_elem(&remember_asks, &zero);
	if (!asks)
		return 0;
	for (i = 0; i < FG_MAX_RULES && i < count && !due; i++)
		due = fg_memory_due(asks->ask[i].fp, jiffies, asks->ask[i].rule_id,
				    asks->ask[i].remember_ticks);
	if (!due || !fg_tcp_connected(ctx))
		return 0;
	for (i = 0; i < FG_MAX_RULES && i < count; i++)
		fg_remember_source(asks->ask[i].fp, jiffies, asks->ask[i].rule_id,
				   asks->ask[i].remember_ticks, FG_MEMORY_PROVEN);
	return 0;
}

#endif /* FLOODGATE_CONNECTED_BPF_H */
