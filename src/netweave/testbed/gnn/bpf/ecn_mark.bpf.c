// SPDX-License-Identifier: GPL-2.0
/*
 * ECN marking at the SwitchGNN switch's egress ports (switchgnn.txt §3.4 and §4: "The ECN field is
 * marked when the switch queue length exceeds a certain threshold"), for netweave's testbed
 * (issue 32). The testbed's kernel has no marking qdisc (no sch_red, codel or fq_codel), and a tc
 * program cannot read the HTB class's backlog, so the queue is emulated beside it: every packet
 * that leaves through the port (copies, sums, NEXTs, and whatever else the host routes through,
 * e.g. background flows) adds its length to a phantom backlog that drains at the port's HTB rate
 * (the rate HTB itself drains the real queue at while it is backlogged). A SwitchGNN packet
 * (netweave/testbed/gnn/packet.py: UDP, magic "NWGU") that joins a backlog longer than the
 * threshold gets the header's ECN flag; its receiver sends a CNP to the packet's sender, which
 * halves its rate (netweave/testbed/gnn/rate.py). The switch's packets carry no UDP checksum, so
 * the flag costs no checksum update; a packet that has one is left unmarked (counted).
 *
 * Attached at the tc egress (clsact, direct action) before the impairments' program, to which it
 * hands every packet on (TC_ACT_UNSPEC): it never drops anything. Per port (the key: ifindex):
 * threshold (bytes) and rate (kbit/s), written by netweave/testbed/gnn/ecn.py.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ETH 14
#define IPH 20
#define L4 (ETH + IPH)
#define HDR_AT (L4 + 8)
#define FLAGS_AT (HDR_AT + 7)      /* magic u32, kind, layer, direction, then flags */
#define MAGIC 0x5547574e           /* "NWGU" little-endian */
#define F_ECN 2
#define SECOND_NS 1000000000ULL

enum { E_SEEN, E_MARKED, E_UNMARKABLE, E_MAX };

struct queue {
    struct bpf_spin_lock lock;
    __u32 threshold;    /* bytes */
    __u64 rate_kbit;    /* the port's HTB rate */
    __u64 backlog;      /* bytes, emulated */
    __u64 last_ns;
};

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 64); __type(key, __u32); __type(value, struct queue); } queues SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, E_MAX); __type(key, __u32); __type(value, __u64); } ecn_counters SEC(".maps");

static __always_inline void bump(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&ecn_counters, &which);
    if (c)
        *c += 1;
}

SEC("tc")
int ecn_mark(struct __sk_buff *skb)
{
    __u32 ifindex = skb->ifindex;
    struct queue *q = bpf_map_lookup_elem(&queues, &ifindex);
    if (!q)
        return TC_ACT_UNSPEC;
    __u64 now = bpf_ktime_get_ns();
    int over;
    bpf_spin_lock(&q->lock);
    __u64 dt = now > q->last_ns ? now - q->last_ns : 0;
    if (dt >= SECOND_NS) {
        q->backlog = 0;  /* idle for a second: empty at any rate the testbed emulates */
    } else {
        __u64 drained = dt * q->rate_kbit / 8000000;  /* ns × kbit/s → bytes */
        q->backlog = q->backlog > drained ? q->backlog - drained : 0;
    }
    q->last_ns = now;
    over = q->backlog > q->threshold;
    q->backlog += skb->len;
    bpf_spin_unlock(&q->lock);
    bump(E_SEEN);
    if (!over || skb->protocol != bpf_htons(ETH_P_IP))
        return TC_ACT_UNSPEC;
    struct iphdr ip;
    struct udphdr udp;
    __u32 magic;
    __u8 flags;
    if (bpf_skb_load_bytes(skb, ETH, &ip, IPH) < 0 || ip.ihl != 5 || ip.protocol != IPPROTO_UDP ||
        bpf_skb_load_bytes(skb, L4, &udp, sizeof(udp)) < 0 || bpf_skb_load_bytes(skb, HDR_AT, &magic, 4) < 0 ||
        magic != MAGIC || bpf_skb_load_bytes(skb, FLAGS_AT, &flags, 1) < 0)
        return TC_ACT_UNSPEC;
    if (udp.check) {
        bump(E_UNMARKABLE);
        return TC_ACT_UNSPEC;
    }
    flags |= F_ECN;
    if (bpf_skb_store_bytes(skb, FLAGS_AT, &flags, 1, 0) == 0)
        bump(E_MARKED);
    return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "GPL";
