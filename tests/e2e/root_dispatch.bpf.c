/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* An operator's root XDP program, as katran's chains its programs: it counts what it gets
 * and tail-calls slot 1 of its prog array, passing what falls through. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} root_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} root_seen SEC(".maps");

SEC("xdp")
int root_dispatch(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *seen = bpf_map_lookup_elem(&root_seen, &zero);

	if (seen)
		__sync_fetch_and_add(seen, 1);
	bpf_tail_call(ctx, &root_array, 1);
	return XDP_PASS;
}
