// SPDX-License-Identifier: GPL-2.0
/* IPv4 multicast forwarding at a switch's tc ingress, for kernels built without CONFIG_IP_MROUTE
 * (netweave/testbed/net/multicast_tc.py): the static (source, group) entries the kernel's own
 * multicast routing would hold (MRT_ADD_MFC), each with its upstream interface and its downstream
 * ones. A datagram of an entry that arrives on its upstream interface leaves, its TTL one lower, on
 * every downstream interface (a clone each, the source MAC that interface's; the destination MAC is
 * the group's, as the sender's kernel made it); one that arrives on another interface is counted
 * (wrong_if) and dropped; anything else goes on to the kernel untouched. Counters per entry
 * (packets, bytes, wrong_if) and per interface (in, out), as /proc/net/ip_mr_cache and
 * /proc/net/ip_mr_vif give them. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_OIFS 32  /* the kernel's MAXVIFS */
#define ETH 14
#define TTL_AT (ETH + 8)      /* the IPv4 header's TTL (then its protocol: one 16-bit word) */
#define CSUM_AT (ETH + 10)    /* ... and its checksum */

struct key {
    __u32 source, group;  /* network order */
};
struct entry {
    __u32 iif;               /* the upstream interface (ifindex) */
    __u32 n;                 /* downstream interfaces */
    __u32 oif[MAX_OIFS];
    __u64 pkts, bytes, wrong_if;
};
struct port {              /* per interface (ifindex) */
    __u8 mac[6];           /* its own address: the source of what leaves it */
    __u8 pad[2];
    __u64 pkts_in, bytes_in, pkts_out, bytes_out;
};

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 256); __type(key, struct key); __type(value, struct entry); } entries SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, MAX_OIFS); __type(key, __u32); __type(value, struct port); } ports SEC(".maps");

SEC("tc")
int mcast_fwd(struct __sk_buff *skb)
{
    struct iphdr ip;
    if (skb->protocol != bpf_htons(ETH_P_IP) || bpf_skb_load_bytes(skb, ETH, &ip, sizeof(ip)) < 0)
        return TC_ACT_OK;
    if ((bpf_ntohl(ip.daddr) >> 28) != 0xE)  /* not 224.0.0.0/4 */
        return TC_ACT_OK;
    struct key k = {.source = ip.saddr, .group = ip.daddr};
    struct entry *e = bpf_map_lookup_elem(&entries, &k);
    if (!e)
        return TC_ACT_OK;
    __u32 in = skb->ingress_ifindex;
    if (in != e->iif) {
        __sync_fetch_and_add(&e->wrong_if, 1);
        return TC_ACT_SHOT;
    }
    __u64 len = skb->len > ETH ? skb->len - ETH : 0;  /* the datagram's IP length, as the kernel counts it */
    struct port *p = bpf_map_lookup_elem(&ports, &in);
    if (p) {
        __sync_fetch_and_add(&p->pkts_in, 1);
        __sync_fetch_and_add(&p->bytes_in, len);
    }
    __sync_fetch_and_add(&e->pkts, 1);
    __sync_fetch_and_add(&e->bytes, len);
    if (ip.ttl <= 1)
        return TC_ACT_SHOT;
    __u16 old = *(__u16 *)&ip.ttl, new;  /* TTL and protocol: the checksum's 16-bit word */
    ip.ttl -= 1;
    new = *(__u16 *)&ip.ttl;
    if (bpf_l3_csum_replace(skb, CSUM_AT, old, new, 2) < 0 || bpf_skb_store_bytes(skb, TTL_AT, &ip.ttl, 1, 0) < 0)
        return TC_ACT_SHOT;
    __u32 n = e->n;
    for (__u32 i = 0; i < MAX_OIFS; i++) {
        if (i >= n)
            break;
        __u32 out = e->oif[i];
        struct port *q = bpf_map_lookup_elem(&ports, &out);
        if (!q || bpf_skb_store_bytes(skb, 6, q->mac, 6, 0) < 0)
            continue;
        if (bpf_clone_redirect(skb, out, 0) == 0) {
            __sync_fetch_and_add(&q->pkts_out, 1);
            __sync_fetch_and_add(&q->bytes_out, len);
        }
    }
    return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "GPL";
