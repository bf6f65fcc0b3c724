/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Allow and deny list lookups in the LPM tries. */
#ifndef FLOODGATE_LISTS_BPF_H
#define FLOODGATE_LISTS_BPF_H

#include "maps.bpf.h"
#include "parse.bpf.h"

/* Whether the source of `pkt` falls in the list made of `v4` and `v6`. The entry counts
 * let an empty list cost nothing: an LPM lookup is the priciest step of a packet's path. */
static __always_inline int fg_listed(void *v4, void *v6, const __u32 entries[2],
				     const struct fg_packet *pkt)
{
	if (pkt->family == FG_FAMILY_V4) {
		struct fg_lpm_v4 key = {.prefixlen = 32};

		if (!entries[FG_FAMILY_V4])
			return 0;
		__builtin_memcpy(key.addr, pkt->addr, 4);
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
