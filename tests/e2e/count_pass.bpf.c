/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* A next program for the tests: counts every packet it gets and passes it. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* One shared counter: the tests read it by the program's map ids. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counted SEC(".maps");

SEC("xdp")
int count_pass(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *count = bpf_map_lookup_elem(&counted, &zero);

	if (count)
		__sync_fetch_and_add(count, 1);
	return XDP_PASS;
}
