/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* floodgate's TC ingress program, beside the XDP one on the same interface: hands the cookie
 * ACKs the XDP program verified to their listener. An object of its own, loaded only while a
 * rule gives SYN cookies: its kfunc (bpf_sk_assign_tcp_reqsk, Linux 6.9) would otherwise keep
 * the XDP program from loading on any older kernel. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

#include "syncookie_tc.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("tc")
int floodgate_tc(struct __sk_buff *skb) { return fg_cookie_handover(skb); }
