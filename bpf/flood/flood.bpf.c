/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* floodgate flood's generator: run by BPF_PROG_RUN in live-frames mode on a template frame,
 * it gives each frame the next of N source addresses and sends it back out with XDP_TX. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

#include "flood_rewrite.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set through the skeleton before load. In .bss rather than as a const volatile in rodata:
 * clang 14 folds the copy of a const volatile struct's array to its zero initialiser. */
struct fl_template tmpl = {};

/* Frames sent so far, whose count picks the next source. One counter for every CPU (not
 * per CPU): the sending thread may move between CPUs, and a per-CPU count would then start
 * over and repeat sources, which a spoofed-source flood must never do. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} next_source SEC(".maps");

SEC("xdp")
int flood_xdp(struct xdp_md *ctx)
{
	__u8 *data, *data_end;
	const struct fl_template *t = &tmpl;
	__u32 zero = 0, index, head_len;
	__u64 *next, count;

	next = bpf_map_lookup_elem(&next_source, &zero);
	if (!next || !t->sources)
		return XDP_ABORTED;
	count = __sync_fetch_and_add(next, 1);
	index = (__u32)(count % t->sources);
	/* A live-frame page comes back as its last receiver left it. The kernel resets the
	 * frame's bounds from the template only when this program moved them, or when the
	 * receiver moved its start: a receiver that only trimmed or grew the tail (a SYN
	 * cookie's SYN-ACK) would have the next copy go out at its length, cut short. Moving
	 * the metadata start every time makes the kernel refresh the frame from this run's
	 * bounds, the template's, and reset them before the next. */
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u32)))
		return XDP_ABORTED;
	/* and the bytes: the template's headers written back */
	head_len = t->head_len;
	if (head_len > FL_HEAD_BYTES)
		head_len = FL_HEAD_BYTES;
	if (head_len == 0 || bpf_xdp_store_bytes(ctx, 0, (void *)t->head, head_len))
		return XDP_ABORTED;
	data = (__u8 *)(long)ctx->data;
	data_end = (__u8 *)(long)ctx->data_end;
	if (fl_rewrite(t, index, data, data_end) != 0)
		return XDP_ABORTED;
	return XDP_TX;
}
