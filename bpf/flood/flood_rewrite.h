/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Source rotation and checksum arithmetic of the flood generator, in plain C: flood.bpf.c
 * runs it on live frames and the unit tests run the very same code on the host. */
#ifndef FLOOD_REWRITE_H
#define FLOOD_REWRITE_H

#include "flood_shared.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define fl_be32(x) __builtin_bswap32(x)
#define fl_be64(x) __builtin_bswap64(x)
#else
#define fl_be32(x) (x)
#define fl_be64(x) (x)
#endif

/* Folds a one's complement sum to 16 bits (two rounds are enough below 2^31). */
static __always_inline __u16 fl_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* The one's complement sum of `words` 16-bit words at `bytes`, loaded in host order. */
static __always_inline __u32 fl_sum_words(const __u8 *bytes, int words)
{
	__u32 sum = 0;
	for (int i = 0; i < words; i++) {
		__u16 word;
		__builtin_memcpy(&word, bytes + 2 * i, 2);
		sum += word;
	}
	return sum;
}

/* Source number `index` (0 ≤ index < sources) in network order into out[16]. */
static __always_inline void fl_source_at(const struct fl_template *t, __u32 index, __u8 *out)
{
	__builtin_memcpy(out, t->base_source, 16);
	if (t->family == FL_FAMILY_IPV4) {
		__u32 v4;
		__builtin_memcpy(&v4, out, 4);
		v4 = fl_be32(fl_be32(v4) + index);
		__builtin_memcpy(out, &v4, 4);
		return;
	}
	/* the interface id (bytes 8..15) or the /64 prefix (bytes 0..7) counts up; both halves
	 * as values, since choosing between two stack pointers compiles to a pointer OR that
	 * the verifier rejects */
	__u64 prefix, host;
	__builtin_memcpy(&prefix, out, 8);
	__builtin_memcpy(&host, out + 8, 8);
	if (t->spread == FL_SPREAD_PREFIX)
		prefix = fl_be64(fl_be64(prefix) + index);
	else
		host = fl_be64(fl_be64(host) + index);
	__builtin_memcpy(out, &prefix, 8);
	__builtin_memcpy(out + 8, &host, 8);
}

/* Writes source number `index` into `frame` (built from `t`) and fixes its checksums.
 * Returns 0, or -1 when the frame is shorter than the template's offsets. */
static __always_inline int fl_rewrite(const struct fl_template *t, __u32 index, __u8 *frame,
				      const __u8 *end)
{
	__u8 source[16];
	__u32 source_sum;
	__u16 csum;

	fl_source_at(t, index, source);
	if (t->family == FL_FAMILY_IPV4) {
		__u8 *ip_csum = frame + FL_IPV4_CSUM_OFFSET;
		if (frame + FL_IPV4_SRC_OFFSET + 4 > end)
			return -1;
		__builtin_memcpy(frame + FL_IPV4_SRC_OFFSET, source, 4);
		source_sum = fl_sum_words(source, 2);
		csum = (__u16)~fl_fold(t->ip_rest_sum + source_sum);
		__builtin_memcpy(ip_csum, &csum, 2);
	} else {
		if (frame + FL_IPV6_SRC_OFFSET + 16 > end)
			return -1;
		__builtin_memcpy(frame + FL_IPV6_SRC_OFFSET, source, 16);
		source_sum = fl_sum_words(source, 8);
	}
	if (!t->l4_covers_source)
		return 0;

	/* the mask bounds the offset for the verifier, which tracks no packet range through a
	 * pointer whose offset may reach 64 KiB; frames are at most 1514 bytes anyway */
	__u8 *l4_csum = frame + (t->l4_csum_offset & 0x7ff);
	if (l4_csum + 2 > end)
		return -1;
	csum = (__u16)~fl_fold(t->l4_rest_sum + source_sum);
	/* UDP sends a computed 0 as 0xffff: 0 would mean "no checksum" */
	if (csum == 0 && t->protocol == FL_PROTO_UDP)
		csum = 0xffff;
	__builtin_memcpy(l4_csum, &csum, 2);
	return 0;
}

#endif
