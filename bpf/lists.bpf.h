/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Allow and deny list lookups in the LPM tries. */
#ifndef FLOODGATE_LISTS_BPF_H
#define FLOODGATE_LISTS_BPF_H

#include "maps.bpf.h"
#include "parse.bpf.h"

/* Whether the source of `pkt` falls in the list made of `v4` and `v6`, with `filter` the
 * IPv4 trie's filter, to be trusted when `filtered`. The entry counts let an empty list
 * cost nothing, and the filter most sources of a long one: an LPM lookup is the priciest
 * step of a packet's path. */
static __always_inline int fg_listed(void *v4, void *v6, void *filter, int filtered,
				     const __u32 entries[2], const struct fg_packet *pkt)
{
	if (pkt->family == FG_FAMILY_V4) {
		struct fg_lpm_v4 key = {.prefixlen = 32};
		__u32 slash24, word;
		__u64 *bits;

		if (!entries[FG_FAMILY_V4])
			return 0;
		__builtin_memcpy(key.addr, pkt->addr, 4);
		if (filtered) {
			slash24 =
			    ((__u32)key.addr[0] << 16) | ((__u32)key.addr[1] << 8) | key.addr[2];
			word = slash24 / 64;
			bits = bpf_map_lookup_elem(filter, &word);
			if (bits && !(*bits & (1ULL << (slash24 % 64))))
				return 0;
		}
		return bpf_map_lookup_elem(v4, &key) != NULL;
	} else {
		struct fg_lpm_v6 key = {.prefixlen = 128};

		if (!entries[FG_FAMILY_V6])
			return 0;
		__builtin_memcpy(key.addr, pkt->addr, 16);
		return bpf_map_lookup_elem(v6, &key) != NULL;
	}
}

#endif /* FLOODGATE_LISTS_BPF_H */
