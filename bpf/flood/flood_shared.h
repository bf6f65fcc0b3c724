/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The flood generator's template settings: the one header flood.bpf.c and C++ share. */
#ifndef FLOOD_SHARED_H
#define FLOOD_SHARED_H

#include <linux/types.h>

enum fl_protocol {
	FL_PROTO_UDP = 0,
	FL_PROTO_TCP_SYN = 1,
	FL_PROTO_ICMP = 2,
};

enum fl_family {
	FL_FAMILY_IPV4 = 4,
	FL_FAMILY_IPV6 = 6,
};

/* Which part of an IPv6 source the rotation counts in: the interface id keeps every source
 * inside the base /64 (one bucket for a limiter keyed per /64); the prefix puts each source
 * in a /64 of its own. IPv4 sources always count up from the base address. */
enum fl_spread {
	FL_SPREAD_HOST = 0,
	FL_SPREAD_PREFIX = 1,
};

#define FL_ETH_LEN 14
#define FL_IPV4_SRC_OFFSET (FL_ETH_LEN + 12)
#define FL_IPV4_CSUM_OFFSET (FL_ETH_LEN + 10)
#define FL_IPV6_SRC_OFFSET (FL_ETH_LEN + 8)
/* The frame's first bytes the generator writes back from the template before every copy:
 * all of Ethernet, IP and L4 headers, and more than a SYN-ACK built in place of a SYN. */
#define FL_HEAD_BYTES 128

/* Set in the program's rodata before load. Checksum sums are one's complement sums of
 * 16-bit words loaded in host order, folded to 16 bits, over everything the checksum covers
 * except the source address: the program adds the source it writes and folds again. Sums
 * start from the template, not from the frame, because live-frame pages are recycled and
 * may hold an earlier run's rewrite. */
struct fl_template {
	__u8 base_source[16];  /* first source, network order (IPv4: the first 4 bytes) */
	__u32 sources;	       /* distinct sources to rotate through, at least 1 */
	__u32 ip_rest_sum;     /* IPv4 header without the source; 0 for IPv6 */
	__u32 l4_rest_sum;     /* pseudo header (if any) without the source, L4 header, payload */
	__u16 l4_csum_offset;  /* of the L4 checksum, from the start of the frame */
	__u8 family;	       /* enum fl_family */
	__u8 protocol;	       /* enum fl_protocol */
	__u8 spread;	       /* enum fl_spread */
	__u8 l4_covers_source; /* 0 for ICMPv4, whose checksum has no pseudo header */
	__u8 pad[2];
	/* The template frame's first head_len bytes (min(frame, FL_HEAD_BYTES)). A receiver
	 * that answers in place (a SYN cookie's SYN-ACK by XDP_TX) hands the page back
	 * rewritten, flags, sequence numbers, length fields, options and all: each copy starts
	 * over from these, so every frame sent is the template's but for its source. */
	__u8 head[FL_HEAD_BYTES];
	__u32 head_len;
};

#endif
