/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The TC ingress half of SYN cookies: a frame the XDP program marked as a valid cookie ACK
 * (fg_cookie_meta) is handed to its listener with bpf_sk_assign_tcp_reqsk, which makes the
 * kernel create the connection from it. The kernel's own cookie check would ignore the ACK:
 * it looks at cookies only while the listener's SYN queue has recently overflowed, and
 * floodgate answered the SYNs so that it never does. */
#ifndef FLOODGATE_SYNCOOKIE_TC_BPF_H
#define FLOODGATE_SYNCOOKIE_TC_BPF_H

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>

#include "floodgate_shared.h"

/* The kfunc's listener. libbpf matches the kfunc's prototype against the kernel's kind by
 * kind, and a forward declaration is not a struct: an opaque body is (its size unused). */
struct sock {
	__u64 opaque;
};

/* The kernel's struct bpf_tcp_req_attrs (include/net/tcp.h), which the kfunc takes by size. */
struct bpf_tcp_req_attrs {
	__u32 rcv_tsval;
	__u32 rcv_tsecr;
	__u16 mss;
	__u8 rcv_wscale;
	__u8 snd_wscale;
	__u8 ecn_ok;
	__u8 wscale_ok;
	__u8 sack_ok;
	__u8 tstamp_ok;
	__u8 usec_ts_ok;
	__u8 reserved[3];
};

extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym;

/* Hands a marked cookie ACK to its listener; every frame goes on (TC_ACT_OK) either way: an
 * unmarked one is none of this program's business, and a marked one the kernel refuses
 * meets the listener as a stray ACK, which it answers with a reset. */
static __always_inline int fg_cookie_handover(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct fg_cookie_meta *meta = (void *)(long)skb->data_meta;
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple tuple = {};
	struct ethhdr *eth = data;
	struct bpf_sock *skc;
	struct tcphdr *tcp;
	struct tcp_sock *tp;
	__u32 size;

	if ((void *)(meta + 1) > data || meta->magic != FG_COOKIE_META_MAGIC)
		return TC_ACT_OK;
	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl != 5)
			return TC_ACT_OK;
		tcp = (void *)(ip + 1);
		if ((void *)(tcp + 1) > end)
			return TC_ACT_OK;
		tuple.ipv4.saddr = ip->saddr;
		tuple.ipv4.daddr = ip->daddr;
		tuple.ipv4.sport = tcp->source;
		tuple.ipv4.dport = tcp->dest;
		size = sizeof(tuple.ipv4);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return TC_ACT_OK;
		tcp = (void *)(ip6 + 1);
		if ((void *)(tcp + 1) > end)
			return TC_ACT_OK;
		__builtin_memcpy(tuple.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6->daddr, 16);
		tuple.ipv6.sport = tcp->source;
		tuple.ipv6.dport = tcp->dest;
		size = sizeof(tuple.ipv6);
	} else {
		return TC_ACT_OK;
	}

	skc = bpf_skc_lookup_tcp(skb, &tuple, size, BPF_F_CURRENT_NETNS, 0);
	if (!skc)
		return TC_ACT_OK;
	if (skc->state == BPF_TCP_LISTEN) {
		tp = bpf_skc_to_tcp_sock(skc);
		/* the MSS the cookie encodes; no window scaling, SACK or timestamps, which a
		 * kernel cookie without timestamps cannot carry */
		attrs.mss = meta->mss;
		if (tp)
			bpf_sk_assign_tcp_reqsk(skb, (struct sock *)tp, &attrs, sizeof(attrs));
	}
	bpf_sk_release(skc);
	return TC_ACT_OK;
}

#endif /* FLOODGATE_SYNCOOKIE_TC_BPF_H */
