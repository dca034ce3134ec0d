// SPDX-License-Identifier: GPL-2.0
/*
 * Streaming in-network aggregation in XDP, for netweave's testbed (issue 31): PAHInA's aggregation
 * service (pahina.txt §IV-B) at the paper's byte widths, with the complete sum of every chunk
 * multicast down to the workers at once, as SwitchML and ATP do, instead of going to a PS.
 *
 * Packets (netweave/testbed/agg/streampacket.py): a 22-byte big-endian header ("NWA2", kind,
 * agg_id, wor_id, precision, step, chunk, count, exponent, want, flags, workers), then `count`
 * little-endian biased integers of 1, 2 or 4 bytes (fp8, fp16, fp32: netweave/testbed/agg/blockfp.py).
 * The senders chose their exponent so that the sum of all workers fits the width again, so a sum
 * never saturates and a RESULT is as long as a DATA packet.
 *
 * DATA for this aggregator (agg_id = cfg.agg_id) from a member (a worker, or a child aggregator's
 * partial sum): its key (step, chunk, precision) has one entry holding a bpf_spin_lock, the bitmap
 * of members added, the exponent, the largest `want`, the OR of the flags, and the sums in lanes
 * twice as wide as the values, two u64 words of lanes per u64 word of values: every 8 payload bytes
 * cost two masked adds under the lock (no atomics, no helper calls). The loops run over all 256
 * words whatever the count (a constant trip count the verifier walks once): the bytes past the
 * payload add garbage only to lanes of values past the count, whose carries run upward, into other
 * such lanes or out of the word, and are never sent. The member whose bit completes
 * the bitmap takes the sum out of the lanes (less (members - 1) x 2^(b-1): biased again), writes it
 * over its own payload and
 *   - at the root of its aggregation tree: turns the packet into a RESULT to the results group
 *     (IP multicast address and MAC, UDP port cfg.results_port) and sends it along the
 *     distribution tree (below);
 *   - below the root: turns it into DATA of the parent aggregator, from this aggregator's member
 *     id there, addressed to the parent switch (the kernel routes it up).
 * The result is kept in `done` (LRU), and the key's entry is freed. A DATA packet of a done key is
 * a worker's (or a child's) resend after a loss: the kept result is sent again the same way, so a
 * lost RESULT or partial is recovered by the senders' timeouts alone; results are idempotent.
 *
 * RESULTs to the results group travel the distribution tree, rooted at cfg.dist_root's switch (a
 * RESULT to one worker's unicast address, a userspace aggregator's, passes to the kernel's routing: broadcast
 * unchanged it would reach every worker with a MAC none accepts): arriving from the parent
 * (ingress = cfg.up_ifindex) or made here at the root, they are broadcast to the ports in `down`
 * (devmap broadcast: one copy per link); made here below the root, or arriving from a child below
 * the root, they go up (bpf_redirect to cfg.up_ifindex). Workers' interfaces need an XDP program of
 * their own for veth to take redirected frames (testbed/net: the pass program).
 *
 * A PULL for this aggregator (any worker's: "the sum of this key, again") is answered from `done`
 * like a resend, or dropped while the key is still open (its members' own timeouts finish it):
 * a worker that lost the RESULT of a chunk another aggregator sums asks that aggregator for it.
 *
 * Anything else passes unchanged. No bpf_timer: recovery is the senders' (SwitchML's).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define PAYLOAD 2048
#define WORDS (PAYLOAD / 8)
#define HEADER_BYTES 22
#define KIND_DATA 1
#define KIND_RESULT 2
#define KIND_PULL 3
#define EEXIST 17

struct config {
    __u32 port;          /* aggregation UDP port (DATA), host order */
    __u32 results_port;  /* UDP port of RESULTs, host order */
    __u32 agg_id;        /* this switch's aggregator (0: none, it only forwards RESULTs) */
    __u32 parent_agg;    /* below the root of its tree: the parent aggregator, else 0 */
    __u32 parent_wor;    /* this aggregator's member id at its parent, less the precision code (one member
                            per precision: a switch summing fp8 and fp16 sends two partial streams up) */
    __be32 parent_ip;    /* the parent switch's address (network order) */
    __be32 group_ip;     /* the results' IP multicast group (network order) */
    __u32 up_ifindex;    /* toward the distribution root (0 at the root) */
    __u32 dist_root;     /* 1: results are broadcast down from here */
    __be32 self_ip;      /* this switch's address: the source of its RESULTs (a host drops a multicast
                            datagram whose source is its own address, as the last sender's would be) */
};

struct member {
    __u64 bit;
    __u32 precision;
    __u32 pad;
};

struct key {
    __u32 step;
    __u16 chunk;
    __u8 precision;
    __u8 pad;
};

struct entry {
    struct bpf_spin_lock lock;
    __u32 count;
    __u64 bitmap;
    __s32 exponent;
    __s32 want;
    __u32 flags;
    __u32 done;
    __u64 lane[2][WORDS];
};

struct kept {            /* a complete sum, for resends */
    __u32 count;
    __s32 exponent;
    __s32 want;
    __u32 flags;
    __u32 members;
    __u32 pad;
    __u64 w[WORDS];
};

enum { C_ACCEPTED, C_DUPLICATES, C_RESULTS, C_PARTIALS, C_RESENT, C_FULL, C_MISMATCHED, C_UNKNOWN, C_FORWARDED, C_PULLS,
       C_MAX };

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct config); } cfg SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 1024); __type(key, __u32); __type(value, struct member); } members SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } full SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 1024); __type(key, struct key); __type(value, struct entry); } entries SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 1024); __type(key, struct key); __type(value, struct kept); } done SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_DEVMAP_HASH); __uint(max_entries, 64); __type(key, __u32); __type(value, __u32); } down SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, C_MAX); __type(key, __u32); __type(value, __u64); } counters SEC(".maps");
struct blank {           /* an entry's bytes, all zero, without a lock field (which no load may touch) */
    __u64 z[sizeof(struct entry) / 8];
};
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct blank); } zeros SEC(".maps");  /* never written */
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 2); __type(key, __u32); __type(value, struct kept); } scratch SEC(".maps");

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1;
}

static __always_inline __u32 width_of(__u8 precision)
{
    return precision == 1 ? 1 : precision == 2 ? 2 : 4;
}

static __always_inline __u16 fold(__u32 sum)
{
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (__u16)~sum;
}

static __always_inline void ip_checksum(struct iphdr *ip)
{
    __u32 sum = 0;
    __u16 *w = (__u16 *)ip;
    ip->check = 0;
#pragma unroll
    for (int i = 0; i < 10; i++)
        sum += w[i];
    ip->check = fold(sum);
}

/* The lanes of `width`-byte values: a payload word w adds `w & mask` and `(w >> shift) & mask` to the
 * two lane words (even and odd values, each in a lane twice the width); `rep` has a 1 in every lane. */
struct lanes {
    __u64 mask, rep;
    __u32 shift;
};

static __always_inline struct lanes lanes_of(__u32 width)
{
    struct lanes l = {.mask = 0xFFFFFFFFULL, .rep = 1, .shift = 32};
    if (width == 1) {
        l.mask = 0x00FF00FF00FF00FFULL;
        l.rep = 0x0001000100010001ULL;
        l.shift = 8;
    } else if (width == 2) {
        l.mask = 0x0000FFFF0000FFFFULL;
        l.rep = 0x0000000100000001ULL;
        l.shift = 16;
    }
    return l;
}

/* rewrite the packet (its payload already the sum) as a RESULT to the group, or as the parent's
 * DATA; return the action that sends it on */
static __always_inline int emit(struct xdp_md *ctx, struct config *c, struct kept *k)
{
    void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = (void *)(eth + 1);
    struct udphdr *udp = (void *)(ip + 1);
    __u8 *hdr = (void *)(udp + 1);
    if ((void *)(hdr + HEADER_BYTES) > data_end)
        return XDP_DROP;
    hdr[18] = (__u8)k->exponent;
    hdr[19] = (__u8)k->want;
    hdr[20] = (__u8)k->flags;
    hdr[21] = (__u8)k->members;
    udp->check = 0;  /* IPv4 allows none; the payload changed */
    if (c->parent_agg) {  /* below the root of the aggregation tree: one more member's DATA up there */
        hdr[4] = KIND_DATA;
        hdr[5] = (__u8)(c->parent_agg >> 8);
        hdr[6] = (__u8)c->parent_agg;
        __u32 member = c->parent_wor + hdr[9];
        hdr[7] = (__u8)(member >> 8);
        hdr[8] = (__u8)member;
        ip->daddr = c->parent_ip;
        ip_checksum(ip);
        return XDP_PASS;  /* the kernel routes it to the parent */
    }
    hdr[4] = KIND_RESULT;
    udp->dest = bpf_htons((__u16)c->results_port);
    ip->daddr = c->group_ip;
    ip->saddr = c->self_ip;
    ip->ttl = 64;
    ip_checksum(ip);
    __u32 g = bpf_ntohl(c->group_ip);
    eth->h_dest[0] = 0x01; eth->h_dest[1] = 0x00; eth->h_dest[2] = 0x5e;
    eth->h_dest[3] = (g >> 16) & 0x7f; eth->h_dest[4] = (g >> 8) & 0xff; eth->h_dest[5] = g & 0xff;
    if (c->dist_root)
        return bpf_redirect_map(&down, 0, BPF_F_BROADCAST);
    return bpf_redirect(c->up_ifindex, 0);
}

/* overwrite the payload with a kept sum and send it on */
static __always_inline int resend(struct xdp_md *ctx, struct config *c, struct kept *k, __u32 offset, __u32 bytes)
{
    __u64 len = ((bytes - 1) & (PAYLOAD - 1)) + 1;
    if (bpf_xdp_store_bytes(ctx, offset, k->w, len) < 0)
        return XDP_DROP;
    count(C_RESENT);
    return emit(ctx, c, k);
}

static __always_inline int forward_result(struct xdp_md *ctx, struct config *c)
{
    count(C_FORWARDED);
    if (c->dist_root)
        return bpf_redirect_map(&down, 0, BPF_F_BROADCAST);
    if (ctx->ingress_ifindex == c->up_ifindex)
        return bpf_redirect_map(&down, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
    return bpf_redirect(c->up_ifindex, 0);
}

SEC("xdp")
int stream_aggregate(struct xdp_md *ctx)
{
    void *data_end = (void *)(long)ctx->data_end;
    void *pkt = (void *)(long)ctx->data;
    struct ethhdr *eth = pkt;
    __u32 zero = 0, one = 1;
    if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
        return XDP_PASS;
    struct udphdr *udp = (void *)(ip + 1);
    __u8 *hdr = (void *)(udp + 1);
    if ((void *)(hdr + HEADER_BYTES) > data_end)
        return XDP_PASS;
    struct config *c = bpf_map_lookup_elem(&cfg, &zero);
    if (!c || hdr[0] != 'N' || hdr[1] != 'W' || hdr[2] != 'A' || hdr[3] != '2')
        return XDP_PASS;
    __u16 dport = bpf_ntohs(udp->dest);
    if (hdr[4] == KIND_RESULT && dport == c->results_port)  /* to the results group: down the tree; */
        return (ip->daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000) ? forward_result(ctx, c) : XDP_PASS;
        /* unicast (a userspace aggregator's, e.g. at the PS, to one worker): the kernel routes it */
    if ((hdr[4] != KIND_DATA && hdr[4] != KIND_PULL) || dport != c->port || !c->agg_id)
        return XDP_PASS;
    __u32 agg = (__u32)hdr[5] << 8 | hdr[6];
    __u32 wor = (__u32)hdr[7] << 8 | hdr[8];
    __u8 precision = hdr[9];
    if (agg != c->agg_id)
        return XDP_PASS;
    if (hdr[4] == KIND_PULL) {
        __u32 n = (__u32)hdr[16] << 8 | hdr[17];
        __u32 bytes = n * width_of(precision);
        struct key k = {.step = (__u32)hdr[10] << 24 | (__u32)hdr[11] << 16 | (__u32)hdr[12] << 8 | hdr[13],
                        .chunk = (__u16)hdr[14] << 8 | hdr[15], .precision = precision};
        struct kept *kept = bpf_map_lookup_elem(&done, &k);
        count(C_PULLS);
        if (!kept || n == 0 || bytes > PAYLOAD || (void *)(hdr + HEADER_BYTES) + bytes != data_end || kept->count != n)
            return XDP_DROP;  /* not summed yet (its members' timeouts see to it), or not a whole packet */
        return resend(ctx, c, kept, (__u32)((void *)(hdr + HEADER_BYTES) - pkt), bytes);
    }
    struct member *m = bpf_map_lookup_elem(&members, &wor);
    if (!m || m->precision != precision) {
        count(C_UNKNOWN);
        return XDP_PASS;
    }
    __u32 n = (__u32)hdr[16] << 8 | hdr[17];
    __u32 width = width_of(precision);
    __u32 bytes = n * width;
    __u32 offset = (__u32)((void *)(hdr + HEADER_BYTES) - pkt);
    if (n == 0 || bytes > PAYLOAD || (void *)(hdr + HEADER_BYTES) + bytes != data_end) {
        count(C_MISMATCHED);
        return XDP_PASS;
    }
    struct key k = {.step = (__u32)hdr[10] << 24 | (__u32)hdr[11] << 16 | (__u32)hdr[12] << 8 | hdr[13],
                    .chunk = (__u16)hdr[14] << 8 | hdr[15], .precision = precision};
    __s32 exponent = (__s8)hdr[18], want = (__s8)hdr[19];
    __u32 flags = hdr[20];
    struct kept *kept = bpf_map_lookup_elem(&done, &k);
    if (kept)  /* a resend after a loss: the sum again, the same way */
        return resend(ctx, c, kept, offset, bytes);
    __u64 *all = bpf_map_lookup_elem(&full, &(__u32){precision & 3});
    struct kept *buf = bpf_map_lookup_elem(&scratch, &zero);
    if (!all || !buf)
        return XDP_PASS;
    __u64 len = ((bytes - 1) & (PAYLOAD - 1)) + 1;
    if (bpf_xdp_load_bytes(ctx, offset, buf->w, len) < 0)
        return XDP_PASS;
    struct entry *e = bpf_map_lookup_elem(&entries, &k);
    if (!e) {
        struct blank *z = bpf_map_lookup_elem(&zeros, &zero);
        if (!z)
            return XDP_PASS;
        long made = bpf_map_update_elem(&entries, &k, z, BPF_NOEXIST);
        if (made && made != -EEXIST) {
            count(C_FULL);
            return XDP_DROP;  /* no aggregator free: the sender's timeout resends it later */
        }
        e = bpf_map_lookup_elem(&entries, &k);
        if (!e)
            return XDP_DROP;
    }
    __u64 members_in = (__u64)__builtin_popcountll(*all);
    __u64 extra = (members_in - 1) << (width * 8 - 1);
    struct lanes l = lanes_of(width);
    int complete = 0, dup = 0, mismatch = 0;
    bpf_spin_lock(&e->lock);
    if (e->done || (e->bitmap & m->bit)) {
        dup = 1;
    } else if (e->bitmap && (e->count != n || e->exponent != exponent)) {
        mismatch = 1;
    } else {
        e->count = n;
        e->exponent = exponent;
        if (!e->bitmap || want > e->want)
            e->want = want;
        e->flags |= flags;
        e->bitmap |= m->bit;
        for (__u32 i = 0; i < WORDS; i++) {  /* all words: a constant trip count for the verifier */
            __u64 w = buf->w[i];
            e->lane[0][i] += w & l.mask;
            e->lane[1][i] += (w >> l.shift) & l.mask;
        }
        if (e->bitmap == *all) {
            complete = 1;
            e->done = 1;
            __u64 c = extra * l.rep;  /* (members - 1) biases in every lane */
            for (__u32 i = 0; i < WORDS; i++)
                buf->w[i] = (e->lane[0][i] - c) | ((e->lane[1][i] - c) << l.shift);
            buf->count = n;
            buf->exponent = e->exponent;
            buf->want = e->want;
            buf->flags = e->flags;
            buf->members = (__u32)members_in;
        }
    }
    bpf_spin_unlock(&e->lock);
    if (dup) {
        count(C_DUPLICATES);
        return XDP_DROP;
    }
    if (mismatch) {
        count(C_MISMATCHED);
        return XDP_DROP;
    }
    count(C_ACCEPTED);
    if (!complete)
        return XDP_DROP;  /* absorbed: its values are in the sum */
    if (bpf_xdp_store_bytes(ctx, offset, buf->w, len) < 0)
        return XDP_DROP;
    bpf_map_update_elem(&done, &k, buf, BPF_ANY);
    bpf_map_delete_elem(&entries, &k);
    count(c->parent_agg ? C_PARTIALS : C_RESULTS);  /* first sends; resends count as resent */
    return emit(ctx, c, buf);
}

SEC("xdp")
int pass(struct xdp_md *ctx)
{
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
