/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The baseline of every benchmark row: an XDP program that drops everything, nothing more. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("xdp")
int xdp_drop(struct xdp_md *ctx) { return XDP_DROP; }
