/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The baseline of the SYN-cookie answer row: an XDP program that sends every frame back out
 * of the interface it came in on, unchanged, nothing more. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("xdp")
int xdp_tx(struct xdp_md *ctx) { return XDP_TX; }
