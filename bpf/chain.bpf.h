/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Handing a passed packet on to the next XDP program, by a tail call through `next_program`. */
#ifndef FLOODGATE_CHAIN_BPF_H
#define FLOODGATE_CHAIN_BPF_H

#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"

/* The tail call reads the slot once, atomically: a program swapped in meanwhile gets the
 * next packet, and no packet is lost or seen by both. With the key a constant, the x86 JIT
 * patches the call site into a direct jump (or a no-op while the slot is empty), so an
 * empty slot costs about what the `return XDP_PASS` it falls through to does. A next
 * program that tail-calls back into floodgate loops at most the kernel's 33 tail calls
 * (MAX_TAIL_CALL_CNT) a packet; after that the call falls through and the packet passes. */
static __always_inline int fg_pass_on(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &next_program, FG_NEXT_PROGRAM_SLOT);
	return XDP_PASS;
}

#endif /* FLOODGATE_CHAIN_BPF_H */
