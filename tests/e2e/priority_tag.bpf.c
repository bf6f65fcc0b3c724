/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* A TC egress program for the tests: every IPv4 packet leaves with an 802.1p priority tag
 * (VLAN ID 0, priority 5), as a client marking its traffic's class sends it. With the
 * device's VLAN offload off, the tag is written into the frame, where the far end's XDP
 * sees it. */
#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("tc")
int push_priority_tag(struct __sk_buff *skb) {
  if (skb->protocol == bpf_htons(ETH_P_IP)) bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 5 << 13);
  return TC_ACT_OK;
}
