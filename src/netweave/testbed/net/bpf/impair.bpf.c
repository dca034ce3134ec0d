// SPDX-License-Identifier: GPL-2.0
/*
 * Link impairments for netweave's testbed, where the kernel has no sch_netem: attached at a veth's
 * tc egress (clsact, direct action), it drops, duplicates or reorders each packet with the
 * probabilities LOSS_PPM, DUPLICATE_PPM and REORDER_PPM (parts per million, compiled in with -D:
 * one object per distinct setting, so no map needs pinning; drawn with bpf_get_prandom_u32):
 *   loss:      TC_ACT_SHOT;
 *   duplicate: a clone is sent out of the same interface (marked, so it is not impaired again);
 *   reorder:   the packet goes to HTB class 1:2, a slower lane beside the link's class 1:1, so
 *              packets sent after it overtake it.
 * Only IPv4 is impaired (ARP passes). Counters per outcome are kept per CPU.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define CLONE_MARK 0x4e574331  /* "NWC1": a duplicate we made */
#define SLOW_LANE 0x00010002   /* HTB class 1:2 */
#define PPM 1000000

#ifndef LOSS_PPM
#define LOSS_PPM 0
#endif
#ifndef DUPLICATE_PPM
#define DUPLICATE_PPM 0
#endif
#ifndef REORDER_PPM
#define REORDER_PPM 0
#endif

enum { I_SEEN, I_LOST, I_DUPLICATED, I_REORDERED, I_MAX };

struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, I_MAX); __type(key, __u32); __type(value, __u64); } impair_counters SEC(".maps");

static __always_inline void bump(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&impair_counters, &which);
    if (c)
        *c += 1;
}

SEC("tc")
int impair_egress(struct __sk_buff *skb)
{
    if (skb->protocol != bpf_htons(ETH_P_IP))
        return TC_ACT_OK;  /* ARP and the rest pass: the links lose data, not their neighbours */
    if (skb->mark == CLONE_MARK) {  /* our duplicate: send it as it is */
        skb->mark = 0;
        return TC_ACT_OK;
    }
    bump(I_SEEN);
    if (LOSS_PPM && bpf_get_prandom_u32() % PPM < LOSS_PPM) {
        bump(I_LOST);
        return TC_ACT_SHOT;
    }
    if (DUPLICATE_PPM && bpf_get_prandom_u32() % PPM < DUPLICATE_PPM) {
        __u32 mark = skb->mark;
        skb->mark = CLONE_MARK;
        if (bpf_clone_redirect(skb, skb->ifindex, 0) == 0)
            bump(I_DUPLICATED);
        skb->mark = mark;
    }
    if (REORDER_PPM && bpf_get_prandom_u32() % PPM < REORDER_PPM) {
        skb->priority = SLOW_LANE;
        bump(I_REORDERED);
    }
    return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
