/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Frame parser: Ethernet, up to two VLAN tags, IPv4 or IPv6 with extension headers, and the
 * TCP/UDP/ICMP header where present. Every frame ends in one fg_parse_result. */
#ifndef FLOODGATE_PARSE_BPF_H
#define FLOODGATE_PARSE_BPF_H

#include <bpf/bpf_endian.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "floodgate_shared.h"

#define FG_MAX_VLAN_TAGS 2
/* Linux delivers a chain of any length; 16 is more than any real traffic carries (RFC 9098
 * finds chains of more than a few headers dropped across the internet), and what lies
 * beyond is the unknown_ipv6_ext policy's, after deny and bans have had the source. */
#define FG_MAX_IPV6_EXT_HEADERS 16

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

enum fg_parse_result {
	FG_PARSE_OK = 0,
	FG_PARSE_NON_IP,      /* ARP, LLDP, ...: not ours to limit */
	FG_PARSE_MALFORMED,   /* truncated or inconsistent headers */
	FG_PARSE_UNKNOWN_EXT, /* an IPv6 extension chain longer or stranger than we parse */
	/* well formed, and an NDP or MLD message from this link (fg_ipv6_link_control) */
	FG_PARSE_LINK_CONTROL,
};

enum fg_fragment {
	FG_NOT_FRAGMENT = 0, /* a whole datagram, or its first fragment */
	FG_LATER_FRAGMENT =
	    1, /* non-first IPv4: its protocol is the datagram's (reassembly keys on it) */
	/* non-first IPv6: the protocol its fragment header names is only a claim, which Linux's
	 * reassembly ignores (the first fragment decides): a flood could label its bulk anything.
	 * Also set on an IPv6 chain the parser gave up on, passed by its policy: any protocol. */
	FG_LATER_FRAGMENT_ANY_PROTOCOL = 2,
};

/* The bit of fg_packet.has_source, beside its 1, of a source a rule's prefix must not lump
 * together with others, keyed and banned as its whole address whatever the rule's prefixes
 * (fg_source_prefix): IPv4 in 0.0.0.0/8; IPv6 in ::/64 (::, ::1, IPv4-mapped and
 * -compatible), link-local (fe80::/10) or the NAT64 prefix (64:ff9b::/96). Every neighbour's
 * link-local address is in one /64, as is every host's duplicate-address probe (from ::)
 * and every IPv4 client of a translator: at a rule's /64 one neighbour's flood, or spoofed
 * mapped sources, would empty the router's bucket (its neighbour and router advertisements)
 * or get every neighbour banned, and a translator's clients would be one source. Whole, not
 * at a prefix of their own: the walk hashes a source once for the rules of one prefix, so
 * its key must not depend on anything else of the rule. */
#define FG_SOURCE_WHOLE 2

/* What the limiter needs to know about a frame. A result other than FG_PARSE_OK may still
 * come with the source (has_source): deny and bans apply to it whatever else is wrong. */
struct fg_packet {
	__u8 addr[16];	 /* source address; IPv4 in the first 4 bytes, the rest zero */
	__u8 family;	 /* enum fg_family */
	__u8 has_source; /* 1 once the IP header up to its addresses was in the frame, with
			  * FG_SOURCE_WHOLE for a source of those ranges */
	__u8 l4_proto;	 /* IPPROTO_* of the payload, fragments too; 0 when the chain was lost */
	__u8 l4_known;	 /* 1 when ports and TCP flags were read (or the protocol has none) */
	__u8 tcp_flags;	 /* FIN..CWR in the order of the TCP header's flags byte */
	__u8 fragment;	 /* enum fg_fragment: a non-first fragment has no ports, no flags */
	__u16 dst_port;	 /* host order; 0 without TCP/UDP */
};

/* Bounds check a header of `size` bytes at `pos`; the verifier needs it written this way. */
#define FG_FITS(pos, size, end) ((void *)(pos) + (size) <= (end))

/* Reads the L4 header of `proto` at `pos`, of which the IP header says `room` bytes are
 * there: fields are read within the IP length, never from the frame's padding, so a first
 * fragment cut short before the TCP flags is malformed rather than a packet without flags.
 * In a `whole` datagram (no fragment to follow) a TCP header longer than `room` by its data
 * offset is malformed too, as the kernel drops it; a first fragment may end inside the
 * header's options. */
static __always_inline int fg_parse_l4(void *pos, void *end, __u32 room, __u8 proto, int whole,
				       struct fg_packet *pkt)
{
	__u32 need = 0;

	pkt->l4_proto = proto;
	if (proto == IPPROTO_TCP)
		need = sizeof(struct tcphdr);
	else if (proto == IPPROTO_UDP)
		need = sizeof(struct udphdr);
	else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)
		need = 4; /* type and code are all a rule may look at */
	if (need > room)
		return FG_PARSE_MALFORMED;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = pos;

		if (!FG_FITS(tcp, sizeof(*tcp), end) || tcp->doff < 5 ||
		    (whole && tcp->doff * 4 > room))
			return FG_PARSE_MALFORMED;
		pkt->dst_port = bpf_ntohs(tcp->dest);
		/* byte 13 of the TCP header holds CWR..FIN */
		pkt->tcp_flags = ((__u8 *)tcp)[13];
	} else if (proto == IPPROTO_UDP) {
		struct udphdr *udp = pos;

		if (!FG_FITS(udp, sizeof(*udp), end))
			return FG_PARSE_MALFORMED;
		pkt->dst_port = bpf_ntohs(udp->dest);
	} else if (need && !FG_FITS(pos, 4, end)) {
		return FG_PARSE_MALFORMED;
	}
	pkt->l4_known = 1;
	return FG_PARSE_OK;
}

static __always_inline int fg_parse_ipv4(void *pos, void *end, struct fg_packet *pkt)
{
	struct iphdr *ip = pos;
	__u32 header_len, total_len, ah_len;
	int whole;
	__u8 *ah;

	if (!FG_FITS(ip, sizeof(*ip), end))
		return FG_PARSE_MALFORMED;
	/* the source first: whatever the rest says, deny and bans see it */
	pkt->family = FG_FAMILY_V4;
	__builtin_memcpy(pkt->addr, &ip->saddr, 4);
	/* 0.0.0.0/8, "this network": 0.0.0.0 is a DHCP client's source */
	pkt->has_source = ip->saddr & bpf_htonl(0xff000000) ? 1 : 1 | FG_SOURCE_WHOLE;
	header_len = ip->ihl * 4;
	total_len = bpf_ntohs(ip->tot_len);
	if (ip->version != 4 || header_len < sizeof(*ip) || total_len < header_len ||
	    pos + total_len > end)
		return FG_PARSE_MALFORMED;
	pkt->l4_proto = ip->protocol;
	/* a non-first fragment carries no L4 header: it is limited by source and protocol */
	if (ip->frag_off & bpf_htons(0x1fff)) {
		pkt->fragment = FG_LATER_FRAGMENT;
		return FG_PARSE_OK;
	}
	whole = !(ip->frag_off & bpf_htons(0x2000)); /* no more fragments */
	if (ip->protocol != IPPROTO_AH)
		return fg_parse_l4(pos + header_len, end, total_len - header_len, ip->protocol,
				   whole, pkt);
	/* AH (RFC 4302) authenticates the datagram and carries its transport header unhidden:
	 * walked as the IPv6 chain walks it, so a peer's traffic under AH meets the port and
	 * flag rules, not only those without. Its length counts 4-byte words beyond the first
	 * two. One header: a second behind it ends the parse, as ESP does (what the kernel
	 * delivers from either takes a security association with the peer). */
	ah = pos + header_len;
	if (!FG_FITS(ah, 2, end) || total_len - header_len < 2)
		return FG_PARSE_MALFORMED;
	ah_len = (ah[1] + 2) * 4;
	if (ah_len > total_len - header_len)
		return FG_PARSE_MALFORMED;
	return fg_parse_l4(ah + ah_len, end, total_len - header_len - ah_len, ah[0], whole, pkt);
}

/* IPv6 extension header layout shared by hop-by-hop, routing and destination options. */
struct fg_ipv6_opt_hdr {
	__u8 nexthdr;
	__u8 hdrlen;
};

struct fg_ipv6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

static __always_inline int fg_ipv6_is_ext(__u8 next)
{
	return next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS ||
	       next == IPPROTO_AH || next == IPPROTO_FRAGMENT;
}

/* The most bytes of extension headers walked: a chain longer in bytes is an unknown one. A
 * mask (headers are whole multiples of 4 bytes), so the walk's offset has one range on every
 * path and the verifier's states merge instead of multiplying with each header. */
#define FG_IPV6_CHAIN_MASK 0xffc

/* A walk along an IPv6 extension chain, one header per bpf_loop step: the verifier checks a
 * step once, where a plain loop of 16 made it check every position a header could be at. */
struct fg_chain_walk {
	struct xdp_md *ctx;
	__u32 chain;   /* offset of the first extension header in the frame */
	__u32 off;     /* bytes of the chain walked */
	__u32 left;    /* payload bytes not yet walked */
	__u8 next;     /* the next header's type */
	__u8 fragment; /* 1: a non-first fragment was found (its protocol in `next`) */
	__u8 headers;  /* extension headers walked */
	__u8 first;    /* 1: a first fragment was found (more fragments follow) */
	int result;    /* enum fg_parse_result once the walk ran into trouble; -1 before */
};

static long fg_chain_step(__u32 index, void *data)
{
	struct fg_chain_walk *w = data;
	void *start = (void *)(long)w->ctx->data;
	void *end = (void *)(long)w->ctx->data_end;
	struct fg_ipv6_opt_hdr *opt;
	__u32 size;

	if (!fg_ipv6_is_ext(w->next))
		return 1; /* the chain ended */
	opt = start + (w->chain & 0x7f) + (w->off & FG_IPV6_CHAIN_MASK);
	if (w->next == IPPROTO_FRAGMENT) {
		struct fg_ipv6_frag_hdr *frag = (void *)opt;

		if (!FG_FITS(frag, sizeof(*frag), end) || sizeof(*frag) > w->left)
			goto malformed;
		w->next = frag->nexthdr;
		if (frag->frag_off & bpf_htons(0xfff8)) {
			w->fragment = 1;
			return 1;
		}
		if (frag->frag_off & bpf_htons(1)) /* M: more fragments follow */
			w->first = 1;
		size = sizeof(*frag);
	} else {
		if (!FG_FITS(opt, sizeof(*opt), end))
			goto malformed;
		size = w->next == IPPROTO_AH ? (opt->hdrlen + 2) * 4 : (opt->hdrlen + 1) * 8;
		w->next = opt->nexthdr;
	}
	/* a header that runs past the payload length is a lie about the chain */
	if (size > w->left)
		goto malformed;
	w->left -= size;
	w->off += size;
	w->headers++;
	if (w->off > FG_IPV6_CHAIN_MASK) {
		w->result = FG_PARSE_UNKNOWN_EXT;
		return 1;
	}
	return 0;
malformed:
	w->result = FG_PARSE_MALFORMED;
	return 1;
}

/* Whether the IPv6 source of words `w` (network order) is keyed whole (FG_SOURCE_WHOLE),
 * read where it is rather than from a copy, so that nothing more is kept on the frame. */
static __always_inline int fg_v6_source_whole(const __be32 *w)
{
	__u32 first = bpf_ntohl(w[0]);

	return (first == 0 && w[1] == 0) ||			/* ::/64 */
	       (first >> 22) == 0x3fa ||			/* fe80::/10 */
	       (first == 0x0064ff9b && w[1] == 0 && w[2] == 0); /* 64:ff9b::/96 */
}

/* Whether the ICMPv6 message at `icmp` (4 bytes of it in the frame and the IP length),
 * behind `headers` extension headers, is Neighbour Discovery or MLD that no sender off this
 * link can make: such messages meet no rule, so a flood that drains a rule cannot take
 * neighbour resolution down with it. Off the link is behind a router, and a router
 * decrements the hop limit and forwards nothing from a link-local source (RFC 4291 2.5.6):
 * - NDP (RS, RA, NS, NA, Redirect) arrives with hop limit 255 (RFC 4861), which only a
 *   sender on this link can deliver, and code 0 (the kernel drops any other of either);
 *   with no extension header, which no sender puts before it (RFC 6980 forbids fragments);
 * - MLD (query, reports, done) comes from a link-local source with hop limit 1 (RFC 2710,
 *   3810), behind at most the hop-by-hop header that carries its Router Alert.
 * ICMPv6 errors and echo are not here: any sender anywhere can make them. */
static __always_inline int fg_ipv6_link_control(const struct ipv6hdr *ip6, const __u8 *icmp,
						void *end, __u8 headers)
{
	const __u8 *src = ip6->saddr.s6_addr;
	__u8 type;

	if (!FG_FITS(icmp, 2, end))
		return 0;
	type = icmp[0];
	if (type >= 133 && type <= 137)
		return ip6->hop_limit == 255 && icmp[1] == 0 && headers == 0;
	if (type != 130 && type != 131 && type != 132 && type != 143)
		return 0;
	if (headers > 1 || (headers == 1 && ip6->nexthdr != IPPROTO_HOPOPTS))
		return 0;
	/* fe80::/10 */
	return ip6->hop_limit == 1 && src[0] == 0xfe && (src[1] & 0xc0) == 0x80;
}

static __always_inline int fg_parse_ipv6(struct xdp_md *ctx, void *data, void *pos, void *end,
					 struct fg_packet *pkt)
{
	struct ipv6hdr *ip6 = pos;
	struct fg_chain_walk walk = {.ctx = ctx, .result = -1};
	void *chain = pos + sizeof(*ip6);
	void *l4;
	int parsed;

	if (!FG_FITS(ip6, sizeof(*ip6), end))
		return FG_PARSE_MALFORMED;
	/* the source first: whatever the rest says, deny and bans see it */
	pkt->family = FG_FAMILY_V6;
	__builtin_memcpy(pkt->addr, &ip6->saddr, 16);
	pkt->has_source = fg_v6_source_whole(ip6->saddr.in6_u.u6_addr32) ? 1 | FG_SOURCE_WHOLE : 1;
	walk.left = bpf_ntohs(ip6->payload_len);
	if (ip6->version != 6 || chain + walk.left > end)
		return FG_PARSE_MALFORMED;
	walk.next = ip6->nexthdr;
	walk.chain = chain - data;

	bpf_loop(FG_MAX_IPV6_EXT_HEADERS, fg_chain_step, &walk, 0);
	if (walk.result >= 0)
		return walk.result;
	if (walk.fragment) {
		pkt->fragment = FG_LATER_FRAGMENT_ANY_PROTOCOL;
		pkt->l4_proto = walk.next;
		return FG_PARSE_OK;
	}
	if (fg_ipv6_is_ext(walk.next)) /* longer than we follow */
		return FG_PARSE_UNKNOWN_EXT;
	switch (walk.next) {
	case IPPROTO_NONE:
		pkt->l4_proto = walk.next;
		pkt->l4_known = 1;
		return FG_PARSE_OK;
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253: /* experimentation */
	case 254:
		return FG_PARSE_UNKNOWN_EXT;
	}
	l4 = chain + (walk.off & FG_IPV6_CHAIN_MASK);
	parsed = fg_parse_l4(l4, end, walk.left & 0xffff, walk.next, !walk.first, pkt);
	if (parsed == FG_PARSE_OK && walk.next == IPPROTO_ICMPV6 &&
	    fg_ipv6_link_control(ip6, l4, end, walk.headers))
		return FG_PARSE_LINK_CONTROL;
	return parsed;
}

/* The IPv6 header `offset` bytes into the frame of `ctx`, parsed into *pkt. A global
 * function: its chain walk keeps its state on a stack of its own (the rule loop's call
 * chain is near the verifier's 512-byte limit), and it is verified once, however many
 * ways the rest of the program can be reached. IPv4 stays inline: it is the common case,
 * and a call costs a few nanoseconds a packet. */
__attribute__((noinline)) int fg_parse_ipv6_at(struct xdp_md *ctx, __u32 offset,
					       struct fg_packet *pkt)
{
	void *data, *end;

	if (!ctx || !pkt)
		return FG_PARSE_MALFORMED;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	/* at most Ethernet and two VLAN tags, 22 bytes */
	return fg_parse_ipv6(ctx, data, data + (offset & 0x1f), end, pkt);
}

/* Parses the frame of `ctx` into *pkt (zeroed by the caller). */
static __always_inline int fg_parse(struct xdp_md *ctx, struct fg_packet *pkt)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *pos = data + sizeof(*eth);
	__u16 proto;
	int i;

	if (!FG_FITS(eth, sizeof(*eth), end))
		return FG_PARSE_MALFORMED;
	proto = eth->h_proto;

	for (i = 0; i < FG_MAX_VLAN_TAGS; i++) {
		__be16 *tag = pos; /* TCI, then the encapsulated ethertype */

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if (!FG_FITS(tag, 4, end))
			return FG_PARSE_MALFORMED;
		proto = tag[1];
		pos += 4;
	}

	if (proto == bpf_htons(ETH_P_IP))
		return fg_parse_ipv4(pos, end, pkt);
	if (proto == bpf_htons(ETH_P_IPV6))
		return fg_parse_ipv6_at(ctx, pos - data, pkt);
	/* a third VLAN tag is past what we parse: treat it as malformed, not as non-IP */
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
		return FG_PARSE_MALFORMED;
	return FG_PARSE_NON_IP;
}

#endif /* FLOODGATE_PARSE_BPF_H */
