/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* SYN cookies at the NIC: a SYN from a source without a slot in a cookie rule is answered
 * with a SYN-ACK whose sequence number is the kernel's SYN cookie (nothing stored), and an
 * ACK that returns a valid cookie verifies its source, which then takes a slot under the
 * rule's verified-source cap and is handed to the listener by the TC program
 * (syncookie_tc.bpf.h). Cookies are the kernel's own (bpf_tcp_raw_*_syncookie_*), so they
 * carry the MSS only: connections made through one have no window scaling, SACK or
 * timestamps. */
#ifndef FLOODGATE_SYNCOOKIE_BPF_H
#define FLOODGATE_SYNCOOKIE_BPF_H

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>

#include "buckets.bpf.h"
#include "counters.bpf.h"
#include "events.bpf.h"
#include "parse.bpf.h"
#include "rules.bpf.h"

#define FG_TCP_FIN 0x01
#define FG_TCP_SYN 0x02
#define FG_TCP_RST 0x04
#define FG_TCP_ACK 0x10

/* What fg_cookie_path decided: go on to the rules, or a verdict of its own. */
enum fg_cookie_outcome {
	FG_COOKIE_CONTINUE = 0, /* not a cookie packet: the rules decide as without cookies */
	/* The cookie rule admits the packet; the other rules it meets decide next (for a SYN
	 * only the global ones: its source is not verified), and a drop by one stands: */
	FG_COOKIE_TX = 1,   /* the frame is now the SYN-ACK: send it back */
	FG_COOKIE_PASS = 2, /* a valid cookie ACK, marked: up to the listener */
	FG_COOKIE_DROP = 3, /* a bad cookie the untracked bucket refused */
	/* a valid cookie ACK of a source with a slot, marked for the listener: the rules
	 * decide it as the SYN it completes, which its source's bucket has not paid for */
	FG_COOKIE_AS_SYN = 4,
};

/* fg_cookie_path's answer: the outcome in the low byte; for FG_COOKIE_TX and FG_COOKIE_PASS
 * also the cookie rule, as the walk skips it (FG_SKIP_RULE, with FG_SKIP_UNVERIFIED for a
 * SYN: its source is not verified) and by its id, for its counters. */
#define FG_COOKIE_ANSWER(outcome, set, pos, id)                                                    \
	((outcome) | FG_SKIP_RULE(set, pos) << 8 | (id) << 16)
#define FG_COOKIE_OUTCOME(answer) ((answer)&0xff)
#define FG_COOKIE_SKIP(answer) (((answer) >> 8) & 0xff)
#define FG_COOKIE_RULE_ID(answer) (((answer) >> 16) & (FG_MAX_RULE_IDS - 1))

/* The largest TCP header (doff 15). */
#define FG_TCP_MAX_HEADER 60
/* The SYN-ACK's TCP header: 20 bytes and the MSS option. */
#define FG_SYNACK_TCP_LEN 24

/* A packet's headers copied out of the frame (per CPU, off the stack, which the rule loop
 * nearly fills), and the SYN-ACK built in their place. Copies rather than packet pointers:
 * the cookie helpers then read fixed-size memory, whatever the TCP header's length. */
struct fg_cookie_scratch {
	__u8 eth[ETH_HLEN];
	struct iphdr ip4;
	struct ipv6hdr ip6;
	__u8 tcp[FG_TCP_MAX_HEADER];
	__u8 syn[FG_SYNACK_TCP_LEN];	  /* a SYN rebuilt from an ACK, to find its MSS */
	__u8 out[40 + FG_SYNACK_TCP_LEN]; /* the SYN-ACK's IP and TCP headers */
	__u8 pseudo[40];		  /* the TCP checksum's pseudo-header */
	struct bpf_sock_tuple tuple;
	__u32 l3;      /* offset of the IP header in the frame */
	__u32 tcp_len; /* bytes of TCP header copied into tcp */
	__u8 family;   /* enum fg_family */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_cookie_scratch);
} cookie_scratch SEC(".maps");

/* The kernel's SYN-cookie MSS tables (net/ipv4/syncookies.c, net/ipv6/syncookies.c): a
 * cookie encodes an index into them, and these are the values it can come back as. */
static const __u16 fg_cookie_mss_v4[4] = {536, 1300, 1440, 1460};
static const __u16 fg_cookie_mss_v6[4] = {1280 - 60, 1480 - 60, 1500 - 60, 9000 - 60};

/* Folds a 32-bit ones' complement sum (bpf_csum_diff's) into a checksum field. */
static __always_inline __u16 fg_csum_fold(__s64 sum)
{
	__u64 csum = (__u64)sum & 0xffffffffULL;

	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	return (__u16)~csum;
}

/* fg_cookie_headers' answer for a frame whose IP datagram the cookie step could answer but
 * for the VLAN tags left in front of it (no VLAN offload): a VLAN ID, or two tags. */
#define FG_COOKIE_VLAN 1

/* Copies the headers of a TCP frame with no IPv4 options and no IPv6 extension headers into
 * `s`. 0 when they are there, whole, within the IP length, in an untagged frame or behind
 * one priority tag (VLAN ID 0); FG_COOKIE_VLAN when so but behind a VLAN ID or two tags; < 0
 * else: IPv4 options, IPv6 extension headers (AH too) and fragments, which any sender
 * chooses and few clients send, or a header cut short. */
static __always_inline int fg_cookie_headers(struct xdp_md *ctx, struct fg_cookie_scratch *s)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u64 frame_len = end - data;
	__u32 l3 = ETH_HLEN, tcp_len, tags = 0, vlan_ids = 0;
	__u16 proto, tag[2];
	__u8 doff;

	/* A priority tag's frame is the interface's own to the stack, as an untagged one is:
	 * the answer keeps the tag, and the stack takes it off the cookie ACK before the
	 * listener's handover. A VLAN ID is not answered: the program cannot tell whether a
	 * device of this namespace serves that VLAN (it may be nowhere here, in another
	 * namespace or in a VRF, whose listeners a cookie of this namespace's would bypass),
	 * and behind two tags the handover would meet a VLAN frame. */
	if (bpf_xdp_load_bytes(ctx, 0, s->eth, ETH_HLEN))
		return -1;
	__builtin_memcpy(&proto, s->eth + 12, 2);
	for (; tags < FG_MAX_VLAN_TAGS; tags++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		/* the tag's control word (priority and VLAN ID), then the next EtherType */
		if (bpf_xdp_load_bytes(ctx, l3, tag, sizeof(tag)))
			return -1;
		vlan_ids |= tag[0] & bpf_htons(0x0fff);
		proto = tag[1];
		l3 += 4;
	}
	s->l3 = l3;
	if (proto == bpf_htons(ETH_P_IP)) {
		if (bpf_xdp_load_bytes(ctx, l3, &s->ip4, sizeof(s->ip4)))
			return -1;
		if (s->ip4.ihl != 5 || s->ip4.protocol != IPPROTO_TCP ||
		    (s->ip4.frag_off & bpf_htons(0x3fff)))
			return -1;
		s->family = FG_FAMILY_V4;
		l3 += sizeof(struct iphdr);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (bpf_xdp_load_bytes(ctx, l3, &s->ip6, sizeof(s->ip6)))
			return -1;
		if (s->ip6.nexthdr != IPPROTO_TCP)
			return -1;
		s->family = FG_FAMILY_V6;
		l3 += sizeof(struct ipv6hdr);
	} else {
		return -1;
	}
	if (bpf_xdp_load_bytes(ctx, l3, s->tcp, sizeof(struct tcphdr)))
		return -1;
	doff = ((struct tcphdr *)s->tcp)->doff;
	tcp_len = (doff * 4) & 0x3c; /* a mask the verifier can bound: 20..60 below */
	if (tcp_len < sizeof(struct tcphdr))
		return -1;
	/* the options within the IP length, never from padding */
	if (s->family == FG_FAMILY_V4 ? bpf_ntohs(s->ip4.tot_len) < sizeof(struct iphdr) + tcp_len
				      : bpf_ntohs(s->ip6.payload_len) < tcp_len)
		return -1;
	if (l3 + tcp_len > frame_len || bpf_xdp_load_bytes(ctx, l3, s->tcp, tcp_len))
		return -1;
	s->tcp_len = tcp_len;
	return tags > 1 || vlan_ids ? FG_COOKIE_VLAN : 0;
}

/* Whether an IPv4 address (network order) may be one end of a connection: not this
 * network (0/8), loopback, multicast, reserved (240/4) or broadcast. */
static __always_inline int fg_cookie_unicast_v4(__u32 address)
{
	__u32 top = bpf_ntohl(address) >> 24;

	return top != 0 && top != 127 && top < 224;
}

/* The same of an IPv6 address: not multicast, ::, ::1 or IPv4-mapped (which no IPv6 frame
 * carries). */
static __always_inline int fg_cookie_unicast_v6(const struct in6_addr *address)
{
	const __u32 *a = (const __u32 *)address;
	__u32 first = bpf_ntohl(a[0]);

	if ((first >> 24) == 0xff)
		return 0;
	return first || a[1] || (a[2] != bpf_htonl(0xffff) && (a[2] || bpf_ntohl(a[3]) > 1));
}

/* Whether the SYN in `s` is between two addresses a connection can have, and between two
 * stations' MACs. A SYN-ACK takes the SYN's destination as its source and goes to the SYN's
 * source, IP and MAC: answering a SYN from a broadcast, multicast, loopback or the host's
 * own address (the destination), or from a group MAC, would send frames where no host
 * asked for them, at the SYN's sender's choice. The stack behind drops such SYNs itself. */
static __always_inline int fg_cookie_unicast_ends(const struct fg_cookie_scratch *s)
{
	/* the group bit of either MAC: a SYN-ACK would go out from a broadcast or multicast
	 * MAC (the SYN's destination), or to one; the stack drops TCP not sent to the host */
	if ((s->eth[0] | s->eth[6]) & 1)
		return 0;
	if (s->family == FG_FAMILY_V4)
		return fg_cookie_unicast_v4(s->ip4.daddr) && fg_cookie_unicast_v4(s->ip4.saddr) &&
		       s->ip4.saddr != s->ip4.daddr;
	{
		const __u64 *src = (const __u64 *)&s->ip6.saddr,
			    *dst = (const __u64 *)&s->ip6.daddr;

		return fg_cookie_unicast_v6(&s->ip6.daddr) && fg_cookie_unicast_v6(&s->ip6.saddr) &&
		       (src[0] != dst[0] || src[1] != dst[1]);
	}
}

/* The cookie for the SYN in `s` (low 32 bits) and the MSS it encodes (high), or < 0. */
static __always_inline __s64 fg_cookie_make(struct fg_cookie_scratch *s, __u8 *tcp, __u32 tcp_len)
{
	if (tcp_len < sizeof(struct tcphdr) || tcp_len > FG_TCP_MAX_HEADER)
		return -1;
	if (s->family == FG_FAMILY_V4)
		return bpf_tcp_raw_gen_syncookie_ipv4(&s->ip4, (struct tcphdr *)tcp, tcp_len);
	return bpf_tcp_raw_gen_syncookie_ipv6(&s->ip6, (struct tcphdr *)tcp, tcp_len);
}

/* Rewrites the SYN in `s` into its SYN-ACK in the frame, in place: the addresses and ports
 * swapped, the cookie as the sequence number, the SYN's sequence + 1 acknowledged, and the
 * MSS option alone; a priority tag left in the frame stays, with the priority the client
 * gave it. 0 when the frame is ready to send back. */
static __always_inline int fg_cookie_answer(struct xdp_md *ctx, struct fg_cookie_scratch *s,
					    __u32 cookie, __u16 mss)
{
	struct tcphdr *syn = (struct tcphdr *)s->tcp;
	__u32 ip_len = s->family == FG_FAMILY_V4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	struct tcphdr *out = (struct tcphdr *)(s->out + ip_len);
	__u8 mac[ETH_ALEN];
	void *data, *end;
	__s64 sum;
	int delta;

	__builtin_memset(s->out, 0, sizeof(s->out));
	out->source = syn->dest;
	out->dest = syn->source;
	out->seq = bpf_htonl(cookie);
	out->ack_seq = bpf_htonl(bpf_ntohl(syn->seq) + 1);
	out->doff = FG_SYNACK_TCP_LEN / 4;
	out->syn = 1;
	out->ack = 1;
	/* no window scaling: at most 64 KiB, and no more than the kernel's first window
	 * (ten segments) so the client never sends past what the listener will accept */
	out->window = bpf_htons(mss * 10 > 65535 ? 65535 : mss * 10);
	((__u8 *)(out + 1))[0] = 2; /* MSS, length 4 */
	((__u8 *)(out + 1))[1] = 4;
	((__u8 *)(out + 1))[2] = mss >> 8;
	((__u8 *)(out + 1))[3] = mss & 0xff;

	if (s->family == FG_FAMILY_V4) {
		struct iphdr *ip = (struct iphdr *)s->out;

		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = bpf_htons(sizeof(struct iphdr) + FG_SYNACK_TCP_LEN);
		ip->frag_off = bpf_htons(0x4000); /* don't fragment */
		ip->ttl = 64;
		ip->protocol = IPPROTO_TCP;
		ip->saddr = s->ip4.daddr;
		ip->daddr = s->ip4.saddr;
		sum = bpf_csum_diff(0, 0, (__be32 *)ip, sizeof(*ip), 0);
		if (sum < 0)
			return -1;
		ip->check = fg_csum_fold(sum);
		/* pseudo-header: addresses, zero, protocol, TCP length */
		__builtin_memset(s->pseudo, 0, sizeof(s->pseudo));
		__builtin_memcpy(s->pseudo, &ip->saddr, 4);
		__builtin_memcpy(s->pseudo + 4, &ip->daddr, 4);
		s->pseudo[9] = IPPROTO_TCP;
		s->pseudo[11] = FG_SYNACK_TCP_LEN;
		sum = bpf_csum_diff(0, 0, (__be32 *)s->pseudo, 12, 0);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)s->out;

		ip6->version = 6;
		ip6->payload_len = bpf_htons(FG_SYNACK_TCP_LEN);
		ip6->nexthdr = IPPROTO_TCP;
		ip6->hop_limit = 64;
		ip6->saddr = s->ip6.daddr;
		ip6->daddr = s->ip6.saddr;
		__builtin_memset(s->pseudo, 0, sizeof(s->pseudo));
		__builtin_memcpy(s->pseudo, &ip6->saddr, 16);
		__builtin_memcpy(s->pseudo + 16, &ip6->daddr, 16);
		s->pseudo[35] = FG_SYNACK_TCP_LEN;
		s->pseudo[39] = IPPROTO_TCP;
		sum = bpf_csum_diff(0, 0, (__be32 *)s->pseudo, 40, 0);
	}
	if (sum < 0)
		return -1;
	sum = bpf_csum_diff(0, 0, (__be32 *)out, FG_SYNACK_TCP_LEN, (__u32)sum);
	if (sum < 0)
		return -1;
	out->check = fg_csum_fold(sum);

	/* the frame becomes exactly L2 (its tag too) + the new headers: shorter than a SYN
	 * with options, 4 bytes longer than one without (the tail has room for that) */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	delta = (int)(s->l3 + ip_len + FG_SYNACK_TCP_LEN) - (int)(end - data);
	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	if (s->family == FG_FAMILY_V4) {
		if (bpf_xdp_store_bytes(ctx, s->l3, s->out,
					sizeof(struct iphdr) + FG_SYNACK_TCP_LEN))
			return -1;
	} else if (bpf_xdp_store_bytes(ctx, s->l3, s->out,
				       sizeof(struct ipv6hdr) + FG_SYNACK_TCP_LEN)) {
		return -1;
	}
	__builtin_memcpy(mac, s->eth, ETH_ALEN);
	__builtin_memcpy(s->eth, s->eth + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(s->eth + ETH_ALEN, mac, ETH_ALEN);
	return bpf_xdp_store_bytes(ctx, 0, s->eth, 2 * ETH_ALEN) ? -1 : 0;
}

/* Whether the segment in `s` is addressed to a listening socket with no connection of its
 * own (a connection or a request socket of the kernel's answers for itself). A SYN to a
 * port nobody here listens on (one the host forwards, or DNATs to a container) is not
 * the host's to answer: its backend would never see the handshake floodgate made. */
static __always_inline int fg_cookie_for_listener(struct xdp_md *ctx, struct fg_cookie_scratch *s)
{
	struct tcphdr *th = (struct tcphdr *)s->tcp;
	struct bpf_sock *sk;
	__u32 size, state;

	if (s->family == FG_FAMILY_V4) {
		s->tuple.ipv4.saddr = s->ip4.saddr;
		s->tuple.ipv4.daddr = s->ip4.daddr;
		s->tuple.ipv4.sport = th->source;
		s->tuple.ipv4.dport = th->dest;
		size = sizeof(s->tuple.ipv4);
	} else {
		__builtin_memcpy(s->tuple.ipv6.saddr, &s->ip6.saddr, 16);
		__builtin_memcpy(s->tuple.ipv6.daddr, &s->ip6.daddr, 16);
		s->tuple.ipv6.sport = th->source;
		s->tuple.ipv6.dport = th->dest;
		size = sizeof(s->tuple.ipv6);
	}
	sk = bpf_skc_lookup_tcp(ctx, &s->tuple, size, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	state = sk->state;
	bpf_sk_release(sk);
	return state == BPF_TCP_LISTEN;
}

/* Whether the ACK in `s` returns a valid cookie (this minute's or the last). */
static __always_inline int fg_cookie_valid(struct fg_cookie_scratch *s)
{
	if (s->family == FG_FAMILY_V4)
		return bpf_tcp_raw_check_syncookie_ipv4(&s->ip4, (struct tcphdr *)s->tcp) == 0;
	return bpf_tcp_raw_check_syncookie_ipv6(&s->ip6, (struct tcphdr *)s->tcp) == 0;
}

/* The MSS a valid cookie ACK's cookie encodes. The check helper says only "valid", so the
 * SYN is rebuilt from the ACK (sequence - 1) with each MSS of the table until one makes
 * the same cookie; a cookie of the previous minute matches none, and gets the smallest. */
static __always_inline __u16 fg_cookie_mss(struct fg_cookie_scratch *s)
{
	struct tcphdr *ack = (struct tcphdr *)s->tcp, *syn = (struct tcphdr *)s->syn;
	const __u16 *table = s->family == FG_FAMILY_V4 ? fg_cookie_mss_v4 : fg_cookie_mss_v6;
	__u32 cookie = bpf_ntohl(ack->ack_seq) - 1;
	int i;

	__builtin_memset(s->syn, 0, sizeof(s->syn));
	syn->source = ack->source;
	syn->dest = ack->dest;
	syn->seq = bpf_htonl(bpf_ntohl(ack->seq) - 1);
	syn->doff = FG_SYNACK_TCP_LEN / 4;
	syn->syn = 1;
	s->syn[20] = 2;
	s->syn[21] = 4;
	for (i = 3; i >= 0; i--) {
		__s64 made;

		s->syn[22] = table[i] >> 8;
		s->syn[23] = table[i] & 0xff;
		made = fg_cookie_make(s, s->syn, FG_SYNACK_TCP_LEN);
		if (made >= 0 && (__u32)made == cookie)
			return (__u16)(made >> 32);
	}
	return table[0];
}

/* Hands the valid cookie ACK's MSS to the TC program through the frame's metadata. */
static __always_inline void fg_cookie_mark(struct xdp_md *ctx, __u16 mss)
{
	struct fg_cookie_meta *meta;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta)))
		return;
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(meta + 1) > data)
		return;
	meta->magic = FG_COOKIE_META_MAGIC;
	meta->mss = mss;
	meta->pad = 0;
}

/* Whether a SYN of a new source meets a cookie under `rule` now. Always, or in auto mode
 * while the new-source cap or the untracked bucket has refused in the past second. */
static __always_inline int fg_cookie_wanted(const struct fg_rule *rule,
					    const struct fg_rule_state *state, __u64 jiffies)
{
	if (rule->syn_cookies == FG_SYN_COOKIES_ALWAYS)
		return 1;
	if (rule->syn_cookies != FG_SYN_COOKIES_AUTO || !state)
		return 0;
	return fg_refused_lately(FG_READ_ONCE(state->last_capped), jiffies) ||
	       fg_refused_lately(FG_READ_ONCE(state->last_untracked_drop), jiffies);
}

/* An auto-mode cookie is charged to the new-source cap, as the SYN would have been, so
 * auto stays on while new sources come faster than the cap. Only a SYN the cookie step
 * takes (one it answers, or one it sends to the untracked bucket unasked): one that goes
 * on to the rules is charged there, and must not pay twice. */
static __always_inline void fg_cookie_charge(const struct fg_rule *rule,
					     struct fg_rule_state *state, __u64 now, __u64 jiffies)
{
	if (rule->syn_cookies != FG_SYN_COOKIES_AUTO || !rule->new_sources.interval)
		return;
	if (!fg_gcra_take(&state->new_source_state, now, &rule->new_sources))
		state->last_capped = (__u32)jiffies | 1;
}

/* A search of the cookie rules for the first one a packet meets, one rule per bpf_loop
 * step (checked once by the verifier, where a plain loop is checked once per position). */
struct fg_cookie_search {
	struct fg_packet syn; /* the packet with the flags of a SYN */
	__u64 source_sets;
	__u32 set;
	__u32 bits;	 /* cookie rules still to look at */
	__u32 found;	 /* position + 1 of the rule, 0 none */
	__u32 looked_up; /* source_sets is read */
};

static long fg_cookie_search_step(__u32 i, void *data)
{
	struct fg_cookie_search *search = data;
	__u32 bits = search->bits, pos;
	struct fg_rule *rule;

	if (!bits)
		return 1;
	search->bits = bits & (bits - 1);
	pos = search->set * FG_MAX_RULES + (fg_lowest_bit(bits) & (FG_MAX_RULES - 1));
	rule = bpf_map_lookup_elem(&rules, &pos);
	if (!rule || rule->key_kind != FG_KEY_SOURCE)
		return 0;
	if (rule->has_sources && !search->looked_up) {
		search->source_sets = fg_source_sets(search->set, &search->syn);
		search->looked_up = 1;
	}
	if (!fg_rule_matches(rule, &search->syn, search->source_sets))
		return 0;
	search->found = pos + 1;
	return 1;
}

/* Charges a cookie ACK that leaves its source without a slot to an untracked bucket, as
 * fg_rule_admits charges any source without a slot: a bad cookie to the rule's, a good one
 * the table has no room for to the one of verified sources (`bucket`, either word of the
 * rule's state). 1 admitted, 0 refused (counted, and the start of refusals stamped for
 * `auto` and told as an event). */
static __always_inline int fg_cookie_untracked(const struct fg_rule *rule,
					       struct fg_rule_state *state, __u64 *bucket,
					       __u64 now, __u64 jiffies, __u32 family, __u32 len)
{
	if (fg_charge(bucket, rule, rule->algorithm, rule->untracked, now, len))
		return 1;
	fg_count_table(rule->id, FG_TABLE_UNTRACKED_DROP);
	if (fg_refusal_starts(&state->last_untracked_drop, jiffies))
		fg_emit(FG_EVENT_UNTRACKED_LIMITED, rule->id, family, 0, 0, 0, jiffies);
	return 0;
}

/* fg_cookie_path's answer for a packet from a source nobody vouches for, charged to the
 * rule's untracked bucket: dropped when it refuses; admitted (or refused by a rule that only
 * monitors), on to the other rules but not this one again, and with `unverified`
 * (FG_SKIP_UNVERIFIED) not to those keyed by source either. */
static __always_inline int fg_cookie_unvouched(const struct fg_rule *rule,
					       struct fg_rule_state *state, __u64 now,
					       __u64 jiffies, __u32 family, __u32 len, __u32 set,
					       __u32 pos, __u32 unverified)
{
	__u32 id = rule->id;

	if (fg_cookie_untracked(rule, state, state->overflow_state, now, jiffies, family, len)) {
		fg_count_table(id, FG_TABLE_UNTRACKED_PASS);
		fg_count_rule(id, FG_VERDICT_PASS, len);
		return FG_COOKIE_ANSWER(FG_COOKIE_CONTINUE, set, pos, id) | unverified << 8;
	}
	if (rule->action == FG_ACTION_MONITOR) {
		fg_count_rule(id, FG_VERDICT_MONITOR, len);
		return FG_COOKIE_ANSWER(FG_COOKIE_CONTINUE, set, pos, id) | unverified << 8;
	}
	fg_count_rule(id, FG_VERDICT_DROP, len);
	return FG_COOKIE_DROP;
}

/* The SYN-cookie step of a TCP SYN (a FIN or RST beside it too) or bare ACK (no SYN, RST or
 * FIN) from `pkt`'s source.
 * A global function: verified once, with a stack frame of its own. */
__attribute__((noinline)) int fg_cookie_path(struct xdp_md *ctx, const struct fg_packet *pkt,
					     __u64 seed, __u32 len)
{
	struct fg_cookie_scratch *s;
	struct fg_slot_query *q;
	struct fg_rule_state *state;
	struct fg_rule_index *index;
	struct fg_active *act;
	struct fg_cookie_search search = {};
	struct fg_rule *rule;
	__u32 zero = 0, set, count, bits, id, slot_index, pos;
	__u64 jiffies, now, fp;
	__s64 made;
	int is_syn, wrapped;

	if (!ctx || !pkt)
		return FG_COOKIE_CONTINUE;
	act = bpf_map_lookup_elem(&active_map, &zero);
	if (!act)
		return FG_COOKIE_CONTINUE;
	{
		struct fg_active snapshot;

		*(__u64 *)&snapshot = FG_READ_ONCE(*(__u64 *)act);
		set = snapshot.set & 1;
		count = snapshot.rule_count;
	}
	index = bpf_map_lookup_elem(&rule_index, &set);
	if (!index)
		return FG_COOKIE_CONTINUE;
	bits = index->syn_cookie_rules & index->rules[FG_CLASS_TCP];
	if (count < FG_MAX_RULES)
		bits &= (1U << count) - 1;
	if (!bits)
		return FG_COOKIE_CONTINUE;

	/* a SYN, and an ACK where the SYN it answers would have, meet a cookie rule as a plain
	 * SYN: a cookie rule clears no flag but ACK, FIN and RST (rule_compiler.cpp), so a SYN
	 * with a FIN or RST beside it, which no listener takes, stays the rule's to hold */
	is_syn = (pkt->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK)) == FG_TCP_SYN;
	search.syn = *pkt;
	search.syn.tcp_flags = FG_TCP_SYN;
	search.set = set;
	search.bits = bits;
	bpf_loop(FG_MAX_RULES, fg_cookie_search_step, &search, 0);
	if (!search.found)
		return FG_COOKIE_CONTINUE;
	pos = search.found - 1;
	rule = bpf_map_lookup_elem(&rules, &pos);
	if (!rule)
		return FG_COOKIE_CONTINUE;
	id = rule->id;

	/* a source with a slot is limited as without cookies; its key is made in the slot
	 * query's scratch, where fg_find_slot reads it, rather than on this frame */
	q = bpf_map_lookup_elem(&slot_query, &zero);
	if (!q)
		return FG_COOKIE_CONTINUE;
	fg_make_key(pkt, rule, &q->key);
	fp = fg_key_fingerprint(fg_addr_hash(seed, q->key.family, q->key.hi, q->key.lo),
				q->key.rule_id, q->key.rule_epoch, q->key.family);
	s = bpf_map_lookup_elem(&cookie_scratch, &zero);
	if (!s)
		return FG_COOKIE_CONTINUE;
	if (fg_owned_slot(fp, &slot_index)) {
		/* Its SYN goes to its bucket. Its ACK may still return a cookie sent before
		 * it had a slot: a second connection opened with the first, whose ACK came
		 * after the first's took the slot. The kernel, whose SYN queue never filled,
		 * would answer that ACK with a reset: it is marked for the TC handover, and
		 * the rules decide it as the SYN it completes (each such ACK opens a
		 * connection: uncharged, a source could open any number past its limit). */
		if (is_syn || fg_cookie_headers(ctx, s) || !fg_cookie_valid(s) ||
		    !fg_cookie_for_listener(ctx, s))
			return FG_COOKIE_CONTINUE;
		fg_count_table(id, FG_TABLE_COOKIE_VERIFIED);
		fg_cookie_mark(ctx, fg_cookie_mss(s));
		return FG_COOKIE_AS_SYN;
	}

	state = bpf_map_lookup_elem(&rule_state, &id);
	jiffies = fg_jiffies();
	now = fg_units(jiffies);
	if (!state)
		return FG_COOKIE_CONTINUE;

	if (is_syn) {
		if (!fg_cookie_wanted(rule, state, jiffies))
			return FG_COOKIE_CONTINUE;
		/* A SYN no cookie answers. Behind a VLAN ID or two tags left in the frame (no
		 * VLAN offload) it meets the rules as any SYN while the new-source cap has room
		 * for it: a client behind such frames takes its slot there. Refused by the
		 * cap, it is a spoofed flood's as likely as a cookie's SYN is: counted capped, as
		 * the walk would, and charged as a made-up cookie is, the global rules deciding
		 * what that admits, for in the rules keyed by source such SYNs would fill the
		 * tables and ban the addresses they forge. IPv4 options, IPv6 extension headers,
		 * AH, fragments and a FIN or RST beside the SYN (which a listener discards) are the
		 * sender's choice: such a SYN is charged so whatever the cap says, or a spoofed
		 * flood sent in them would take slots at the cap's pace, and have the addresses
		 * it forges banned by any rule beside this one. In `auto` mode it is charged to
		 * the cap as a SYN answered with a cookie is, so a flood of them keeps auto on. */
		wrapped =
		    pkt->tcp_flags & (FG_TCP_FIN | FG_TCP_RST) ? -1 : fg_cookie_headers(ctx, s);
		if (wrapped == FG_COOKIE_VLAN) {
			__u32 returning;

			if (!fg_cap_refuses(rule, state, fp, jiffies, &returning))
				return FG_COOKIE_CONTINUE;
			fg_count_table(id, FG_TABLE_CAPPED);
			if (fg_refusal_starts(&state->last_capped, jiffies))
				fg_emit(FG_EVENT_NEW_SOURCES_CAPPED, id, pkt->family, 0, 0, 0,
					jiffies);
		} else if (wrapped) {
			fg_cookie_charge(rule, state, now, jiffies);
		}
		if (wrapped)
			return fg_cookie_unvouched(rule, state, now, jiffies, pkt->family, len, set,
						   pos, FG_SKIP_UNVERIFIED);
		if (!fg_cookie_unicast_ends(s) || !fg_cookie_for_listener(ctx, s))
			return FG_COOKIE_CONTINUE;
		made = fg_cookie_make(s, s->tcp, s->tcp_len);
		if (made < 0 || fg_cookie_answer(ctx, s, (__u32)made, (__u16)(made >> 32)))
			return FG_COOKIE_CONTINUE;
		fg_cookie_charge(rule, state, now, jiffies);
		return FG_COOKIE_ANSWER(FG_COOKIE_TX, set, pos, id) | FG_SKIP_UNVERIFIED << 8;
	}

	if (fg_cookie_headers(ctx, s) || !fg_cookie_for_listener(ctx, s))
		return FG_COOKIE_CONTINUE;
	if (!fg_cookie_valid(s)) {
		/* every check costs a hash: a flood of made-up cookies pays into the bucket
		 * of sources nobody vouches for, and what it refuses never reaches the kernel */
		fg_count_table(id, FG_TABLE_COOKIE_FAILED);
		/* not this rule again (one without flags meets the ACK: it would charge it
		 * twice) */
		return fg_cookie_unvouched(rule, state, now, jiffies, pkt->family, len, set, pos,
					   0);
	}

	fg_count_table(id, FG_TABLE_COOKIE_VERIFIED);
	q->fp = fp;
	q->seed = seed;
	q->now = now;
	q->jiffies = jiffies;
	q->verified = 1;
	q->returning = 0;
	/* the rule's pass, drop or monitor count is the ACKs it decided here, which the walk
	 * then leaves it out of (a SYN answered with a cookie is counted `sent` only) */
	if (fg_find_slot(q, rule, state)) {
		if (q->why == FG_TABLE_NEW_SOURCE)
			fg_count_table(id, FG_TABLE_VERIFIED_SLOT);
		fg_count_rule(id, FG_VERDICT_PASS, len);
	} else {
		/* no slot (the verified cap, or every way of its set held by a limited source):
		 * its next SYN meets a cookie again, so each ACK would open one more connection
		 * past every limit. It is charged as a source without a slot, to a bucket that
		 * made-up cookies never reach. */
		fg_count_table(id, q->why);
		if (fg_cookie_untracked(rule, state, state->verified_overflow_state, now, jiffies,
					pkt->family, len)) {
			fg_count_table(id, FG_TABLE_UNTRACKED_PASS);
			fg_count_rule(id, FG_VERDICT_PASS, len);
		} else if (rule->action == FG_ACTION_MONITOR) {
			fg_count_rule(id, FG_VERDICT_MONITOR, len);
		} else {
			fg_count_rule(id, FG_VERDICT_DROP, len);
			return FG_COOKIE_DROP;
		}
	}
	fg_cookie_mark(ctx, fg_cookie_mss(s));
	return FG_COOKIE_ANSWER(FG_COOKIE_PASS, set, pos, id);
}

/* Whether `pkt` may be a cookie's SYN or its ACK: worth fg_cookie_path's look. A SYN with a
 * FIN or RST beside it is looked at too: no cookie answers it, but a rule over SYNs matches
 * it, so a spoofed flood of them must not take slots past the cookie rule. */
static __always_inline int fg_cookie_candidate(const struct fg_packet *pkt)
{
	__u8 flags = pkt->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK | FG_TCP_RST | FG_TCP_FIN);

	return pkt->l4_proto == IPPROTO_TCP && pkt->l4_known && !pkt->fragment &&
	       ((flags & (FG_TCP_SYN | FG_TCP_ACK)) == FG_TCP_SYN || flags == FG_TCP_ACK);
}

#endif /* FLOODGATE_SYNCOOKIE_BPF_H */
