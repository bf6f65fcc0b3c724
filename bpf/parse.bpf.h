/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Frame parser: Ethernet, up to two VLAN tags, IPv4 or IPv6 with extension headers, and the
 * TCP/UDP/ICMP header where present. Every frame ends in one fg_parse_result. */
#ifndef FLOODGATE_PARSE_BPF_H
#define FLOODGATE_PARSE_BPF_H

#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "floodgate_shared.h"

#define FG_MAX_VLAN_TAGS 2
#define FG_MAX_IPV6_EXT_HEADERS 6

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

enum fg_parse_result {
	FG_PARSE_OK = 0,
	FG_PARSE_NON_IP,      /* ARP, LLDP, ...: not ours to limit */
	FG_PARSE_MALFORMED,   /* truncated or inconsistent headers */
	FG_PARSE_UNKNOWN_EXT, /* an IPv6 extension chain longer or stranger than we parse */
};

/* What the limiter needs to know about a frame. */
struct fg_packet {
	__u8 addr[16];  /* source address; IPv4 in the first 4 bytes, the rest zero */
	__u8 family;    /* enum fg_family */
	__u8 l4_proto;  /* IPPROTO_*; 0 with no L4 header (non-first fragment) */
	__u8 tcp_flags; /* FIN..CWR in the order of the TCP header's flags byte */
	__u8 fragment;  /* 1 for a non-first fragment: no ports, no flags */
	__u16 dst_port; /* host order; 0 without TCP/UDP */
};

/* Bounds check a header of `size` bytes at `pos`; the verifier needs it written this way. */
#define FG_FITS(pos, size, end) ((void *)(pos) + (size) <= (end))

/* Reads the L4 header of `proto` at `pos`. */
static __always_inline int fg_parse_l4(void *pos, void *end, __u8 proto, struct fg_packet *pkt)
{
	pkt->l4_proto = proto;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = pos;

		if (!FG_FITS(tcp, sizeof(*tcp), end) || tcp->doff < 5)
			return FG_PARSE_MALFORMED;
		pkt->dst_port = bpf_ntohs(tcp->dest);
		/* byte 13 of the TCP header holds CWR..FIN */
		pkt->tcp_flags = ((__u8 *)tcp)[13];
	} else if (proto == IPPROTO_UDP) {
		struct udphdr *udp = pos;

		if (!FG_FITS(udp, sizeof(*udp), end))
			return FG_PARSE_MALFORMED;
		pkt->dst_port = bpf_ntohs(udp->dest);
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		/* type and code are all a rule may look at */
		if (!FG_FITS(pos, 4, end))
			return FG_PARSE_MALFORMED;
	}
	return FG_PARSE_OK;
}

static __always_inline int fg_parse_ipv4(void *pos, void *end, struct fg_packet *pkt)
{
	struct iphdr *ip = pos;
	__u32 header_len, total_len;

	if (!FG_FITS(ip, sizeof(*ip), end))
		return FG_PARSE_MALFORMED;
	header_len = ip->ihl * 4;
	total_len = bpf_ntohs(ip->tot_len);
	if (ip->version != 4 || header_len < sizeof(*ip) || total_len < header_len ||
	    pos + total_len > end)
		return FG_PARSE_MALFORMED;

	pkt->family = FG_FAMILY_V4;
	__builtin_memcpy(pkt->addr, &ip->saddr, 4);
	/* a non-first fragment carries no L4 header: it is limited by source alone */
	if (ip->frag_off & bpf_htons(0x1fff)) {
		pkt->fragment = 1;
		return FG_PARSE_OK;
	}
	return fg_parse_l4(pos + header_len, end, ip->protocol, pkt);
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

static __always_inline int fg_parse_ipv6(void *pos, void *end, struct fg_packet *pkt)
{
	struct ipv6hdr *ip6 = pos;
	__u8 next;
	int i;

	if (!FG_FITS(ip6, sizeof(*ip6), end))
		return FG_PARSE_MALFORMED;
	if (ip6->version != 6 || pos + sizeof(*ip6) + bpf_ntohs(ip6->payload_len) > end)
		return FG_PARSE_MALFORMED;

	pkt->family = FG_FAMILY_V6;
	__builtin_memcpy(pkt->addr, &ip6->saddr, 16);
	next = ip6->nexthdr;
	pos += sizeof(*ip6);

	/* one pass per extension header, and one more for the header that ends the chain */
	for (i = 0; i <= FG_MAX_IPV6_EXT_HEADERS; i++) {
		struct fg_ipv6_opt_hdr *opt = pos;

		if (i == FG_MAX_IPV6_EXT_HEADERS && fg_ipv6_is_ext(next))
			return FG_PARSE_UNKNOWN_EXT;
		switch (next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			if (!FG_FITS(opt, sizeof(*opt), end))
				return FG_PARSE_MALFORMED;
			next = opt->nexthdr;
			pos += (opt->hdrlen + 1) * 8;
			break;
		case IPPROTO_AH:
			if (!FG_FITS(opt, sizeof(*opt), end))
				return FG_PARSE_MALFORMED;
			next = opt->nexthdr;
			pos += (opt->hdrlen + 2) * 4;
			break;
		case IPPROTO_FRAGMENT: {
			struct fg_ipv6_frag_hdr *frag = pos;

			if (!FG_FITS(frag, sizeof(*frag), end))
				return FG_PARSE_MALFORMED;
			if (frag->frag_off & bpf_htons(0xfff8)) {
				pkt->fragment = 1;
				return FG_PARSE_OK;
			}
			next = frag->nexthdr;
			pos += sizeof(*frag);
			break;
		}
		case IPPROTO_NONE:
			return FG_PARSE_OK;
		case 135: /* mobility */
		case 139: /* HIP */
		case 140: /* shim6 */
		case 253: /* experimentation */
		case 254:
			return FG_PARSE_UNKNOWN_EXT;
		default:
			return fg_parse_l4(pos, end, next, pkt);
		}
	}
	return FG_PARSE_UNKNOWN_EXT;
}

/* Parses the frame in [data, end) into *pkt. */
static __always_inline int fg_parse(void *data, void *end, struct fg_packet *pkt)
{
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
		return fg_parse_ipv6(pos, end, pkt);
	/* a third VLAN tag is past what we parse: treat it as malformed, not as non-IP */
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
		return FG_PARSE_MALFORMED;
	return FG_PARSE_NON_IP;
}

#endif /* FLOODGATE_PARSE_BPF_H */
