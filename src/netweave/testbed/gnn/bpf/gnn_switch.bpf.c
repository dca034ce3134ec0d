// SPDX-License-Identifier: GPL-2.0
/*
 * SwitchGNN's switch as a kernel data plane (switchgnn.txt §3.2-3.4, §4), for netweave's testbed
 * (issue 32): tc-BPF at the ingress of every port of the star's switch. tc rather than XDP because
 * one packet in becomes several out (copies to several workers, several completed sums): the
 * program clones it to each (bpf_clone_redirect, one copy per link, through the port's HTB class and
 * impairments, as a Tofino loops a packet back to reach another aggregator, §4).
 *
 * Packets (netweave/testbed/gnn/packet.py): UDP to cfg.switch_port, a 28-byte little-endian header
 * (magic "NWGU", kind, layer, direction, flags, seq, block, sender, unit, chunk, count, target),
 * then `count` float32 values: chunk `chunk` (VALUES values each) of one row, or several rows (UNIT).
 *
 *  UNIT   a worker's unit (its row c_u h_u, one chunk) of block `block` of exchange `seq`; where a
 *         row is one chunk, up to 32 units unit, unit + 1, ... of one sender, block and copy mask
 *         (count = rows * dim, as many as fit VALUES values with each row starting at an aggregator;
 *         netweave/testbed/gnn/tables.py: unit_packets; beyond the paper): deduplicated, copied and
 *         checked as one, its touches added as below, and the packet trimmed to one row before the
 *         first sum goes down (only the rows some touch adds here are converted, and one that
 *         saturates flags every sum the packet completes here). The plan's tables (filled by
 *         netweave/testbed/gnn/kswitch.py): units[layer base + unit] (its sender, block, the workers
 *         that get a COPY, and the UNIT packet it begins), packets[...] (its rows, and per shard its
 *         touches and the rows and subsets of rows they add), touches[...] (one per packet, shard,
 *         destination and group of GROUP rows: the destination's position in the block, the
 *         contributions it needs, its vertex and owner; the subset of the group's rows that feed it;
 *         netweave/testbed/gnn/touches.py: beyond the paper, whose switch adds each unit into each
 *         destination). A packet other than those the workers send is bad. A unit chunk seen
 *         before in this (exchange, block) is dropped (a duplicate or a resend crossing its
 *         original: the count of an aggregator must not count twice). Else: a COPY to each worker
 *         of copy_mask; its values are converted to int64 fixed point
 *         (netweave/testbed/gnn/fixed.py, bit for bit), the sums of the subsets of two or more rows
 *         that touches add are made once (make_sub), and each touch adds its row or subset into the
 *         cell (the destination's chunk), counting its rows as contributions: 128-byte aggregators of
 *         16 int64 lanes, 32 to a map entry under one spin lock (none when pinned: see locks; a
 *         full chunk's cell, or several destinations' partial cells of a power of two of
 *         aggregators; placed statically by
 *         netweave/testbed/gnn/tables.py within the parity's half with overlapped blocks), with the
 *         stamp (exchange, block) of its contents (stale contents are zeroed on first touch:
 *         nothing to release) and a count per cell; the packet whose count completes a cell sends
 *         its sum down to the owner at once (SUM: unit = the destination vertex).
 *  DONE   a worker has every sum of the block (§3.3): its bit in the parity's bitmap; the packet
 *         that completes it is broadcast as NEXT (one clone per port) and the block becomes the
 *         parity's floor: later units of it (or of older blocks) are stale and dropped, and an
 *         aggregator or count never goes back to an older stamp. A DONE of a completed block (its
 *         NEXT was lost) gets NEXT back alone.
 *  PULL   a worker timed out on cells of the block (§3.4): a copy to every other worker, which
 *         resends its contributions to them;
 *  RESEND such a contribution: forwarded to worker `target` unchanged, never aggregated (the
 *         "bypass" of §3.4: the puller sums them itself and ignores a late SUM of those cells).
 *  END    a worker's last unit of the block has gone up (beyond the paper): a copy to every worker,
 *         itself included. Each port is a FIFO, so a worker that has every worker's END of a block
 *         has had every SUM and COPY the switch sent it for that block: a cell still missing was
 *         lost, and it pulls at once instead of after the §3.4 timeout. With several shards the
 *         port hands it to every shard's device, behind the units it handed there, and each shard
 *         copies it (on_end).
 *  CNP    a worker got a packet whose ECN flag the egress of its port set (ecn_mark.bpf.c: the
 *         port's queue was longer than the threshold, §3.4/§4): forwarded to worker `target`, the
 *         sender named in that packet, which halves its rate (netweave/testbed/gnn/rate.py).
 *  shards (beyond the paper; cfg.shards > 1, netweave/testbed/gnn/tables.py: edge_shard): the
 *         aggregators' map entries are spread over several CPUs. The port checks, deduplicates and
 *         copies a UNIT as above, then clones it to the ingress of each shard's device (shard_dev,
 *         steered to that shard's CPU) that has touches of the packet (packet.cut), flagged F_SHARD
 *         with the shard in `target`; there the program adds only that shard's touches. A flagged
 *         unit from
 *         anywhere but its shard's device is dropped as bad.
 *  locks  (beyond the paper; built with LOCKLESS=1, the switch pinned): CPU cfg.cpu[s] alone walks
 *         shard s's touches (the receive of the ports, or of shard s's device, steered to it), so it
 *         adds into the entries without their lock: a lock with its interrupt save cost 60 of a
 *         cell's 160 ns on an AMD VM. A unit walked on any other CPU is dropped (C_OFF_CPU), a
 *         loss that §3.4 recovers.
 * Anything else passes to the host path (TC_ACT_OK). Every field is checked against the tables
 * before it indexes anything. Counters per CPU, among them where the time goes: ns adding a
 * packet's touches (making its subsets' sums, lookups, locks, clearing an entry on first touch,
 * adding, reading a sum; timed a packet at a time, less the sends of the sums it completed), ns
 * inside bpf_clone_redirect, and ns converting values to fixed point and sums back to float32.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define VALUES 512                 /* values per packet: a row's chunk */
#define LANES 16                   /* int64 lanes per 128-byte aggregator */
#define ENTRY_AGGS (VALUES / LANES)  /* aggregators per full chunk: one map entry */
#define MAX_CHUNKS 8
#define MAX_WORKERS 64
#define MAX_LAYERS 8
#define MAX_SHARDS 8               /* CPUs the aggregators are spread over */
#define F_SHARD 4                  /* flags: a unit handed to shard `target` (only from a shard device) */
#define F_ROWS 8                   /* flags: a SUM of several rows (their values, then their vertices) */
#define MAX_ROWS (VALUES / LANES)  /* units a UNIT packet carries, at most */
#define GROUP 8                    /* rows whose subsets' sums a shard makes once a packet (touches.py) */
#define GROUPS (MAX_ROWS / GROUP)
#define SUBSETS (1 << GROUP)       /* subsets of a group's rows: m, bit r for row GROUP * group + r */
#define SUBS (GROUPS * SUBSETS * LANES)  /* int64 lanes a shard adds from: addend sub from lane sub * lanes */
#define MAX_WALK (1 << 23)         /* touches one bpf_loop walks, at most (the helper's limit) */
#define ETH 14
#define IPH 20
#define UDPH 8
#define L4 (ETH + IPH)
#define HDR_AT (ETH + IPH + UDPH)
#define HDR 28
#define PAYLOAD_AT (HDR_AT + HDR)
#define MAGIC 0x5547574e           /* "NWGU" little-endian */
#define SHIFT_MAX 28
#define LIMIT ((1LL << 52) - 1)
#ifndef LOCKLESS
#define LOCKLESS 0                 /* 1: each shard's CPU alone adds into its entries (see locks) */
#endif

enum { K_UNIT = 1, K_SUM, K_COPY, K_DONE, K_NEXT, K_PULL, K_RESEND, K_CNP, K_END };
enum { C_UNITS, C_DUPLICATES, C_AGGREGATED, C_SUMS, C_COPIES, C_DONES, C_NEXTS, C_PULLS, C_RESENDS, C_BAD,
       C_SATURATED, C_CLONE_DROPPED, C_STALE, C_CNPS, C_ENDS, C_CELL_NS, C_CLONE_NS, C_CLEARED, C_CONVERT_NS, C_SHARDED,
       C_OFF_CPU, C_PACKED, C_SUM_PACKETS, C_CONVERTED, C_TOUCHED, C_SUBSETS, C_SUBSET_NS, C_MAX };

struct hdr {
    __u32 magic;
    __u8 kind, layer, direction, flags;
    __u32 seq;
    __u16 block, sender;
    __u32 unit;
    __u16 chunk, count;
    __u32 target;
};

struct config {
    __u32 switch_port;  /* UDP port of packets to the switch (host order) */
    __u32 worker_port;  /* UDP port of the workers' data-plane sockets */
    __u32 workers;
    __u32 self_ip;      /* network order */
    __u64 all_mask;     /* a bit per worker */
    __u32 region;       /* aggregators per parity (all of them without overlap) */
    __u32 overlap;      /* 1: block b uses parity b & 1 */
    __u32 shards;       /* 1: the port's CPU adds every touch; else each shard's device (shard_dev) */
    __u32 pad;
    __u32 cpu[MAX_SHARDS];  /* LOCKLESS: the CPU that adds shard s's touches */
};
struct port {
    __u32 ifindex;
    __u32 ip;           /* network order */
    __u8 mac[6];        /* the worker's uplink */
    __u8 smac[6];       /* the switch's port */
};
struct layer {
    __u32 unit_base, dim, chunks, full, units, blocks, frac, frac_back;
    __u32 part;       /* full chunks per row (32 aggregators each), aggregators of the last partial one
                         (a power of two: cells never straddle an entry) */
    __u32 owed_base;  /* the layer's first block in owed */
    __u32 packet_base, packets, touch_base, touches;  /* the layer's UNIT packets and touches */
};
struct unit {
    __u64 copy_mask;
    __u32 block, sender;
    __u32 pk;                   /* the UNIT packet it begins (among the layer's), or ~0 */
    __u32 pad;
};
struct packet {                 /* a UNIT packet as the workers send it (netweave/testbed/gnn/touches.py) */
    __u32 first, rows;          /* its first unit (the layer's numbering) and how many it carries */
    __u32 cut[MAX_SHARDS + 1];  /* shard s adds touches cut[s]..cut[s+1] (the layer's numbering) */
    __u32 conv[MAX_SHARDS];     /* the rows shard s adds anywhere (bit r: row r): those it converts */
    __u32 pad;                  /* used at a multiple of 8 bytes */
    __u64 used[MAX_SHARDS][GROUPS][SUBSETS / 64];  /* per group, the subsets of two or more rows shard s
                                                      adds (bit m) */
};
struct touch {                  /* what a packet's rows of one group add into one destination's cell */
    __u32 pos, need, dest_v, owner;  /* its position in the block, contributions, vertex, owner */
    __u32 pbase;                     /* where the block's partial cells start (aggregators) */
    __u16 sub;                       /* SUBSETS * group + m: bit r of m is row GROUP * group + r */
    __u16 cnt;                       /* the bits of m: contributions it adds */
};
struct addends {                /* what a CPU adds from (fixed point): addend sub = SUBSETS * group + m, the
                                   sum of the group's rows in m, from lane sub * lanes (a row alone where
                                   m has one bit: convert_in; the sum of two or more: make_sub) */
    __s64 v[SUBS];
};
struct entry {              /* ENTRY_AGGS aggregators of 128 bytes (16 int64 lanes each) under one lock:
                               a full chunk's cell, or several destinations' partial cells */
    struct bpf_spin_lock lock;
    __u32 stamp;
    __u32 count[ENTRY_AGGS];   /* per cell, at its first aggregator's slot */
    __s64 v[VALUES];
    __u8 pad[56];              /* 4,288 bytes, a multiple of 64: two CPUs adding into neighbouring
                                  entries (shards) share no cache line */
};
struct cell {
    struct bpf_spin_lock lock;
    __u32 stamp;
    __u32 count;
    __u32 pad;
};
struct sync {
    struct bpf_spin_lock lock;
    __u32 stamp;   /* the block whose DONEs are being counted */
    __u32 floor;   /* the last block complete (NEXT sent): its units and older ones are stale */
    __u32 pad;
    __u64 bitmap;
};
struct pend {           /* the sums of one (shard, parity, owner) not yet sent (LOCKLESS, a row a chunk) */
    __u32 stamp;        /* the block they belong to */
    __u32 rows;         /* sums held */
    __u32 done;         /* sums of the block completed so far (held or sent) */
    __u32 flags;        /* SATURATED if one of the held sums' packets saturated */
    __u32 n;            /* values a row */
    __u32 sender;       /* the worker whose unit completed the last held (its CNP halves that rate) */
    __u32 v[MAX_ROWS];  /* their vertices */
    __u32 f[VALUES];    /* their values, float32 bits, row j from j * n */
};
struct scratch {
    __s64 sum[VALUES];  /* a complete cell's sum, fixed point */
    __u32 f[VALUES];    /* ... as float32 bits */
    __u32 xf[VALUES];   /* the unit's chunk (or its rows, packed) as it came */
    __u32 frac;
    int sat;
    __u32 n;            /* values a row (chunk) */
    __u32 lanes;        /* lanes a row takes in the addends: n rounded up to LANES (rows start at an aggregator) */
    __u32 conv;               /* the packet's rows this shard adds (bit r: row r), ... */
    __u32 converted;          /* ... of which converted so far */
    __u64 used[GROUPS][SUBSETS / 64];  /* the subsets' sums this shard adds (struct packet), each bit
                                          cleared as make_sub makes its sum ... */
    __u32 word, words;        /* ... from word `word` on, of the `words` of the packet's rows (here, not in
                                 the walk on the stack: the verifier does not follow a map value's
                                 contents from one call of the loop to the next) */
    struct hdr sum_h;         /* the header of the sums the packet completes: its own (its sender that
                                 of the unit that completed them, or, held, that sent them), kind SUM,
                                 one row (unit and count set per packet sent) */
    struct hdr held_h;        /* send_held's: the header of a SUM of held rows */
    __u32 stamp;              /* the packet's (exchange, block) */
    __u32 per;                /* sums a SUM packet holds (LOCKLESS, a row a chunk: hold_sum; else 1) */
    __u32 pk;                 /* this shard's and parity's first pend */
    __u32 owed_at;            /* this block's and shard's first owed (one per owner) */
    struct iphdr ip;          /* send_to's: the IPv4 header of a packet out ... */
    __u16 udp[2];             /* ... its UDP destination port, and a zero checksum */
};

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct config); } cfg SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, MAX_WORKERS); __type(key, __u32); __type(value, struct port); } ports SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, MAX_LAYERS); __type(key, __u32); __type(value, struct layer); } layers SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct unit); } units SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct packet); } packets SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct touch); } touches SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct entry); } aggs SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct cell); } seen SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 2); __type(key, __u32); __type(value, struct sync); } syncs SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, MAX_SHARDS); __type(key, __u32); __type(value, __u32); } shard_dev SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u32); } owed SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, MAX_SHARDS * 2 * MAX_WORKERS); __type(key, __u32); __type(value, struct pend); } pend SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct scratch); } scratch SEC(".maps");
/* the addends, an entry a CPU (128 KiB, past a per-CPU map's 32 KiB): max_entries the possible CPUs, set
 * by the loader; a tc program runs on one CPU to its end, so a CPU's entry is its own, as a per-CPU map's */
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct addends); } addends SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, C_MAX); __type(key, __u32); __type(value, __u64); } counters SEC(".maps");

static __always_inline void bump_by(__u32 which, __u64 n)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += n;
}

static __always_inline void bump(__u32 which)
{
    bump_by(which, 1);
}

static __always_inline __u32 stamp_of(__u32 seq, __u32 block)
{
    return ((seq & 0xFFFFF) << 12 | (block & 0xFFF)) | 0;
}

/* fixed point: begin (netweave/testbed/gnn/fixed.py, bit for bit; compiled on the host by
 * tests/testbed/gnn/test_fixed_c.py). Without branches on the values: a sum's or a row's values
 * differ in sign, magnitude and zeros, and a branch on each mispredicted (each value a 16-way
 * unrolled step of convert_in or convert_out) cost more than the arithmetic */

/* x, which clang can no longer see through (an empty asm): the arithmetic below would otherwise
 * become compares and branches again */
static __always_inline __u64 opaque(__u64 x)
{
    asm volatile("" : "+r"(x));
    return x;
}

/* 1 if x != 0, else 0 (x < 2^63) */
static __always_inline __u64 nonzero(__u64 x)
{
    return (x | opaque(-x)) >> 63;
}

/* fixed.py: to_fixed. A zero's shift (frac - 150) is never above SHIFT_MAX (fixed.FRAC < 179) */
static __always_inline __s64 to_fixed(__u32 bits, __u32 frac, int *sat)
{
    __u64 e = (bits >> 23) & 0xFF;
    __s64 sh = (__s64)e - 150 + frac;
    __u64 v;
    if (e == 255 || sh > SHIFT_MAX) {  /* not finite, or too large: rare */
        *sat = 1;
        v = LIMIT;
    } else {
        __u64 m = (bits & 0x7FFFFF) | 0x800000;
        __u64 below = opaque((__u64)(sh >> 63));  /* all ones where sh < 0 */
        __u64 left = (__u64)sh & ~below;           /* sh >= 0: sh (at most SHIFT_MAX), else 0 */
        __u64 right = (__u64)-sh & below;          /* sh < 0: -sh, else 0 */
        right = (right & 31) | (31 & -nonzero(right >> 5));  /* at most 31: m < 2^24 is gone by 25 */
        v = ((m << (left & 63)) >> right) & -nonzero(e);  /* e == 0 (zero, subnormal): 0 */
    }
    __u64 neg = -(__u64)(bits >> 31);
    return (__s64)((v ^ neg) - neg);
}

/* fixed.py: from_fixed (nearest, ties to even) */
static __always_inline __u32 from_fixed(__s64 s, __u32 frac)
{
    __u64 neg = (__u64)s >> 63;
    __u64 a = ((__u64)s ^ -neg) + neg;  /* |s| < 2^63 */
    __u64 t = a, b;
    __u32 msb = 0;  /* the highest set bit of a (0 for 0) */
    b = nonzero(t >> 32) << 5; t >>= b; msb += b;
    b = nonzero(t >> 16) << 4; t >>= b; msb += b;
    b = nonzero(t >> 8) << 3; t >>= b; msb += b;
    b = nonzero(t >> 4) << 2; t >>= b; msb += b;
    b = nonzero(t >> 2) << 1; t >>= b; msb += b;
    msb += t >> 1;
    __s32 sh = (__s32)msb - 23;
    __u64 m;
    if (sh <= 0) {  /* |s| < 2^24: a few values near 0 */
        m = a << ((-sh) & 63);
    } else {  /* a / 2^sh rounded to nearest, ties to even: a carry into the quotient where it rounds up */
        __u32 r = (__u32)sh & 63;
        m = (a + (1ULL << (r - 1)) - 1 + ((a >> r) & 1)) >> r;
        __u64 c = m >> 24;  /* rounded up to 2^24 */
        m >>= c;
        msb += c;
    }
    __s32 e = (__s32)msb - (__s32)frac + 127;
    __u32 sign = (__u32)neg << 31;
    if (e <= 0)
        return sign;
    if (e >= 255)
        return sign | 0x7F800000;
    return (sign | ((__u32)e << 23) | (__u32)(m & 0x7FFFFF)) & -(__u32)nonzero(a);  /* 0 for 0 */
}
/* fixed point: end */

static __always_inline __u16 fold(__u32 sum)
{
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (__u16)~sum;
}

/* rewrite the packet's addresses for worker w and clone it out of w's port (or redirect it: the
 * original goes, for the last copy) */
static __always_inline int send_to(struct __sk_buff *skb, struct config *c, __u32 w, int redirect)
{
    struct port *p = bpf_map_lookup_elem(&ports, &w);
    struct scratch *s = bpf_map_lookup_elem(&scratch, &(__u32){0});  /* the headers built there, not on the stack */
    if (!p || !p->ifindex || !s || bpf_skb_load_bytes(skb, ETH, &s->ip, IPH) < 0)
        return -1;
    struct iphdr *ip = &s->ip;
    ip->daddr = p->ip;
    ip->saddr = c->self_ip;
    ip->ttl = 64;
    ip->check = 0;
    __u32 sum = 0;
    __u16 *words = (__u16 *)ip;
#pragma unroll
    for (int i = 0; i < 10; i++)
        sum += words[i];
    ip->check = fold(sum);
    s->udp[0] = bpf_htons((__u16)c->worker_port);
    s->udp[1] = 0;
    if (bpf_skb_store_bytes(skb, 0, p->mac, 6, 0) < 0 || bpf_skb_store_bytes(skb, 6, p->smac, 6, 0) < 0 ||
        bpf_skb_store_bytes(skb, ETH, ip, IPH, 0) < 0 || bpf_skb_store_bytes(skb, L4 + 2, &s->udp[0], 2, 0) < 0 ||
        bpf_skb_store_bytes(skb, L4 + 6, &s->udp[1], 2, 0) < 0)
        return -1;
    if (redirect)
        return bpf_redirect(p->ifindex, 0);
    __u64 t0 = bpf_ktime_get_ns();
    long r = bpf_clone_redirect(skb, p->ifindex, 0);  /* the copy's HTB enqueue and veth transmit happen in here */
    bump_by(C_CLONE_NS, bpf_ktime_get_ns() - t0);
    if (r)
        bump(C_CLONE_DROPPED);
    return (int)r;
}

/* the per-CPU scratch, for callbacks that keep their state there (bpf_loop's context is on the
 * stack, and the walk's three frames share 512 bytes) */
static __always_inline struct scratch *the_scratch(void)
{
    return bpf_map_lookup_elem(&scratch, &(__u32){0});
}

static __always_inline struct addends *the_addends(void)
{
    return bpf_map_lookup_elem(&addends, &(__u32){bpf_get_smp_processor_id()});
}

struct walk {
    struct __sk_buff *skb;
    struct config *c;
    struct layer *L;
    struct scratch *s;
    struct addends *a;
    __u32 base;     /* the parity's first entry */
    __u32 lo;       /* the packet's first touch on this shard (in the touches map) */
    __u64 aggregated;  /* contributions added (edges) ... */
    __u64 touched;     /* ... in so many additions (touches) */
    __u64 subsets;     /* subsets' sums made (make_sub) */
    __u64 sent_ns;     /* ns sending the sums this unit completed */
};

#define CONVERT_STEP 16  /* values per callback: fewer calls */
/* step i of converting the packet's rows into the addends (row r as the subset of its group that holds
 * it alone), CONVERT_STEP lanes of one row: a row this shard adds nowhere (s->conv) is not converted */
static long convert_in(__u32 i, struct walk *w)
{
    struct scratch *s = w->s;
    __s64 *x = w->a->v;
    __u32 base = (i * CONVERT_STEP) & (VALUES - 1);
    if (base + CONVERT_STEP > VALUES || s->lanes == 0)
        return 1;
    __u32 row = base / s->lanes, col = base - row * s->lanes;  /* a step lies in one row: lanes % 16 == 0 */
    if (!((s->conv >> (row & 31)) & 1))
        return 0;
    s->converted += col == 0;
    __u32 n = s->n, frac = s->frac, from = row * n + col;
    __u32 to = (((row / GROUP) * SUBSETS + (1 << (row % GROUP))) * s->lanes + col) & (SUBS - CONVERT_STEP);  /* exact */
    int sat = 0;
#pragma unroll
    for (__u32 k = 0; k < CONVERT_STEP; k++)
        x[to + k] = col + k < n ? to_fixed(s->xf[(from + k) & (VALUES - 1)], frac, &sat) : 0;
    s->sat |= sat;
    return 0;
}

/* the index of b's one set bit (b a power of two): the bits below it, counted */
static __always_inline __u32 bit_index(__u64 b)
{
    __u64 x = b - 1;
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (__u32)((x * 0x0101010101010101ULL) >> 56);
}

/* the next subset m of group grp of the packet's rows that this shard adds (s->used, each bit cleared
 * as its subset is made, in ascending order from word s->word of the packet's s->words): its sum
 * into the addends (addend grp * SUBSETS + m), as the sum of the subset without its lowest row (a
 * row alone, or a subset made before it: a smaller one; touches.py closes `used` under that, and
 * refuses tables that do not) and that row. So a destination fed by several rows of a group is one
 * addition into its cell. One call a subset, and one a word of 64 subsets (the call that finds it
 * empty). Returns 1 (the loop stops) past the last word */
static long make_sub(__u32 i, struct walk *w)
{
    struct scratch *s = w->s;
    __s64 *v = w->a->v;
    __u32 word = s->word;
    if (word >= s->words)
        return 1;
    __u32 grp = (word / (SUBSETS / 64)) & (GROUPS - 1), j = word & (SUBSETS / 64 - 1);
    __u64 bits = s->used[grp][j];
    if (!bits) {
        s->word = word + 1;
        return 0;
    }
    __u64 b = bits & -bits;
    s->used[grp][j] = bits ^ b;
    __u32 m = (j * 64 + bit_index(b)) & (SUBSETS - 1), lower = m & (m - 1);
    if (!lower)
        return 0;
    __u32 lanes = s->lanes, at = grp * SUBSETS;
    __u32 from = (at + lower) * lanes, row = (at + (m ^ lower)) * lanes, to = (at + m) * lanes;
    w->subsets += 1;
    for (__u32 a = 0; a < lanes / LANES && a < ENTRY_AGGS; a++) {
        __s64 *d = v + ((to + a * LANES) & (SUBS - LANES));
        const __s64 *y = v + ((from + a * LANES) & (SUBS - LANES));
        const __s64 *z = v + ((row + a * LANES) & (SUBS - LANES));
#pragma unroll
        for (__u32 j = 0; j < LANES; j++)
            d[j] = y[j] + z[j];
    }
    return 0;
}

/* a complete cell's sum (s->sum) as float32 bits, into s->f */
static long convert_out(__u32 i, void *unused)
{
    struct scratch *s = the_scratch();
    if (!s)
        return 1;
    __u32 base = (i * CONVERT_STEP) & (VALUES - 1);
    if (base + CONVERT_STEP > VALUES)
        return 1;
    __u32 frac = s->frac;
#pragma unroll
    for (__u32 k = 0; k < CONVERT_STEP; k++)
        s->f[base + k] = from_fixed(s->sum[base + k], frac);
    return 0;
}

/* the first k aggregators of a cell at lane o of an entry (k: the chunk's values over LANES,
 * rounded up; lanes past them stay 0 from the entry's clear, and the addends and sum past them are
 * never read): LANES lanes unrolled a step, each step's index masked into the entry (exact: a cell
 * starts at a multiple of LANES and o + n <= VALUES, checked in add_touch) */
static __always_inline void add_cell(__s64 *v, const __s64 *x, __u32 o, __u32 xo, __u32 k)
{
    for (__u32 a = 0; a < k && a < ENTRY_AGGS; a++) {
        __s64 *d = v + ((o + a * LANES) & (VALUES - LANES));
        const __s64 *y = x + ((xo + a * LANES) & (SUBS - LANES));  /* the addend's lanes from xo (exact too) */
#pragma unroll
        for (__u32 j = 0; j < LANES; j++)
            d[j] += y[j];
    }
}

static __always_inline void read_cell(const __s64 *v, __s64 *sum, __u32 o, __u32 k)
{
    for (__u32 a = 0; a < k && a < ENTRY_AGGS; a++) {
        const __s64 *d = v + ((o + a * LANES) & (VALUES - LANES));
        __s64 *y = sum + ((a * LANES) & (VALUES - LANES));
#pragma unroll
        for (__u32 j = 0; j < LANES; j++)
            y[j] = d[j];
    }
}

/* what touch_cell found (bits of its result) */
#define T_CLEARED 1   /* the entry held an earlier block's cells: this block's now */
#define T_STALE 2     /* a late unit of a finished block: the entry is a later block's */
#define T_COMPLETE 4  /* the addend completed the cell: its sum is in the scratch's sum */
#define T_MISSING 8   /* no such entry, or no scratch */

/* the cell at slot `slot` of entry `at` of the aggregators (from lane slot * LANES) gets an addend
 * (its k aggregators, for the scratch's n values a row, from lane xo of the addends: a row's chunk,
 * or the sum of cnt of them); its count reaching `need` completes it (its sum read into the
 * scratch's sum). The scratch's stamp is the packet's block. An entry of an earlier block is this block's
 * now (cleared); an entry of a later block leaves the unit stale. Under the entry's lock, or without
 * it where one CPU alone adds into it (LOCKLESS). A global function: the verifier walks it once,
 * not on every path of the touch walk (add_touch, a bpf_loop callback it walks until its states
 * converge): inlined there, the entry's clear and the cell's unrolled lanes took kernel 6.18.44's
 * verifier past its million instructions */
__attribute__((noinline)) int touch_cell(__u32 at, __u32 slot, __u32 xo, __u32 need, __u32 cnt)
{
    struct entry *g = bpf_map_lookup_elem(&aggs, &at);
    struct scratch *s = the_scratch();
    struct addends *a = the_addends();
    if (!g || !s || !a)
        return T_MISSING;
    int r = 0;
    slot &= ENTRY_AGGS - 1;
    __u32 o = slot * LANES, k = (s->n + LANES - 1) / LANES, stamp = s->stamp;
    if (!LOCKLESS)
        bpf_spin_lock(&g->lock);
    if (g->stamp < stamp) {  /* contents of an earlier block: this block's now */
        g->stamp = stamp;
        r |= T_CLEARED;
        volatile __s64 *v = g->v;  /* volatile: a loop clang would turn into memset, which BPF lacks */
        volatile __u32 *c = g->count;
        for (__u32 j = 0; j < VALUES; j++)
            v[j] = 0;
        for (__u32 j = 0; j < ENTRY_AGGS; j++)
            c[j] = 0;
    } else if (g->stamp > stamp) {
        r |= T_STALE;
        goto out;
    }
    add_cell(g->v, a->v, o, xo, k);
    g->count[slot] += cnt;
    if (g->count[slot] == need) {
        r |= T_COMPLETE;
        read_cell(g->v, s->sum, o, k);
    }
out:
    if (!LOCKLESS)
        bpf_spin_unlock(&g->lock);
    return r;
}

/* the packet's payload made `words` 4-byte words long, its lengths rewritten (a sum goes down as one
 * row, or as the rows a pend held) */
static __always_inline int set_words(struct __sk_buff *skb, __u32 words)
{
    __u16 ip_len = bpf_htons((__u16)(IPH + UDPH + HDR + 4 * words));
    __u16 udp_len = bpf_htons((__u16)(UDPH + HDR + 4 * words));
    if (bpf_skb_change_tail(skb, PAYLOAD_AT + 4 * words, 0) < 0 || bpf_skb_store_bytes(skb, ETH + 2, &ip_len, 2, 0) < 0
        || bpf_skb_store_bytes(skb, L4 + 4, &udp_len, 2, 0) < 0)
        return -1;
    return 0;
}

/* the sums pend p holds to worker o as one SUM packet (F_ROWS: count = rows * (n + 1) words, the
 * rows' values, then their vertices; unit = the first vertex; sender = the worker whose unit
 * completed the last, as a SUM of one row names its completer, also when an END flushes it) */
static __always_inline void send_held(struct __sk_buff *skb, struct config *c, struct scratch *s, struct pend *p,
                                      __u32 o)
{
    __u32 rows = p->rows, n = p->n;
    p->rows = 0;
    if (rows == 0 || rows > MAX_ROWS || n == 0 || n > VALUES || rows * n > VALUES)
        return;
    __u32 nv = rows * n;
    __u64 bytes = (((__u64)nv * 4 - 1) & (VALUES * 4 - 1)) + 1;  /* within their arrays, for the verifier */
    __u64 vbytes = (((__u64)rows * 4 - 1) & (MAX_ROWS * 4 - 1)) + 1;
    s->held_h = s->sum_h;  /* the walk's SUM header stays as it is for its next sum */
    s->held_h.flags |= F_ROWS | (__u8)p->flags;
    s->held_h.sender = (__u16)p->sender;
    s->held_h.unit = p->v[0];
    s->held_h.count = (__u16)(nv + rows);
    p->flags = 0;
    int bad = set_words(skb, nv + rows) < 0 || bpf_skb_store_bytes(skb, HDR_AT, &s->held_h, HDR, 0) < 0
              || bpf_skb_store_bytes(skb, PAYLOAD_AT, p->f, bytes, 0) < 0
              || bpf_skb_store_bytes(skb, PAYLOAD_AT + 4 * nv, p->v, vbytes, 0) < 0;
    if (bad) {
        bump(C_BAD);  /* the held sums are lost: their owner pulls them (§3.4) */
        return;
    }
    if (send_to(skb, c, o, 0) == 0) {
        bump(C_SUM_PACKETS);
        bump_by(C_SUMS, rows);
    }
}

/* a complete cell's sum (as float32 bits in the scratch's f) for worker `owner`, destination
 * `dest_v`, held in its pend (beyond the paper: LOCKLESS, so this CPU alone holds this shard's
 * pends): sent with the others held once there are s->per of them, or once it is the owner's last
 * cell of the block on this shard (owed), so the block's last sum waits for nothing; and at every
 * END of the block (flush_held, on each shard), so sums held when a unit was lost still go down
 * before the last END; the next block resets the pend. A global function: verified once, not per touch. A sum it cannot hold is
 * counted bad (its owner pulls it); the walk goes on */
__attribute__((noinline)) int hold_sum(struct __sk_buff *skb, __u32 owner, __u32 dest_v)
{
    struct scratch *s = the_scratch();
    struct config *c = bpf_map_lookup_elem(&cfg, &(__u32){0});
    if (!skb || !s || !c)
        return 0;
    __u32 o = owner & (MAX_WORKERS - 1), pk = s->pk + o, ok = s->owed_at + o;
    struct pend *p = bpf_map_lookup_elem(&pend, &pk);
    __u32 *total = bpf_map_lookup_elem(&owed, &ok);
    if (!p || !total) {
        bump(C_BAD);
        return 0;
    }
    if (p->stamp > s->stamp) {  /* a later block's already (none comes: its units were stale) */
        bump(C_STALE);
        return 0;
    }
    if (p->stamp < s->stamp) {  /* an earlier block's (complete: what it held was pulled) */
        p->stamp = s->stamp;
        p->rows = p->done = p->flags = 0;
    }
    __u32 r = p->rows;
    if (r >= MAX_ROWS || r >= s->per) {
        bump(C_BAD);
        return 0;
    }
    __u32 at = r * s->n, steps = (s->n + LANES - 1) / LANES;  /* row r from lane at (within f: r < per) */
    for (__u32 a = 0; a < ENTRY_AGGS && a < steps; a++) {
#pragma unroll
        for (__u32 j = 0; j < LANES; j++)  /* past the row's n values: overwritten by the next row */
            p->f[(at + a * LANES + j) & (VALUES - 1)] = s->f[(a * LANES + j) & (VALUES - 1)];
    }
    p->v[r & (MAX_ROWS - 1)] = dest_v;
    p->n = s->n;
    p->sender = s->sum_h.sender;
    p->rows = r + 1;
    p->done += 1;
    p->flags |= s->sum_h.flags & 1;
    if (p->rows >= s->per || p->done >= *total)
        send_held(skb, c, s, p, o);
    return 0;
}

struct flush {
    struct __sk_buff *skb;
    struct config *c;
};

/* what the pend of worker i (the scratch's pk, stamp) holds, sent */
static long flush_one(__u32 i, struct flush *fl)
{
    struct scratch *s = the_scratch();
    __u32 o = i & (MAX_WORKERS - 1), pk;
    if (!s)
        return 1;
    pk = s->pk + o;
    struct pend *p = bpf_map_lookup_elem(&pend, &pk);
    if (p && p->stamp == s->stamp && p->rows > 0)
        send_held(fl->skb, fl->c, s, p, o);
    return 0;
}

/* the half of the aggregators (and pends, syncs) block `block` uses: its parity when blocks overlap */
static __always_inline __u32 parity_of(struct config *c, __u32 block)
{
    return c->overlap ? (block & 1) : 0;
}

/* the first pend of (shard, parity): one per owner */
static __always_inline __u32 pend_base(__u32 shard, __u32 parity)
{
    return ((shard & (MAX_SHARDS - 1)) * 2 + (parity & 1)) * MAX_WORKERS;
}

/* an END of block h on the CPU of `shard` (pinned): every sum that shard holds for the block goes
 * down before the END is copied to the workers, so a worker with every END (from every shard) has
 * every sum the switch completed (a lost unit's owners then pull only its cells); the packet made
 * the END again. Returns -1 if it cannot be */
static __always_inline int flush_held(struct __sk_buff *skb, struct config *c, struct hdr *h, __u32 shard)
{
    struct scratch *s = the_scratch();
    if (!s || bpf_get_smp_processor_id() != c->cpu[shard & (MAX_SHARDS - 1)])
        return 0;  /* not the CPU that holds them (a misconfigured machine): their owners pull them */
    s->sum_h = *h;
    s->sum_h.kind = K_SUM;
    s->sum_h.flags = 0;
    s->sum_h.chunk = 0;
    s->sum_h.target = 0;
    s->stamp = stamp_of(h->seq, h->block);
    s->pk = pend_base(shard, parity_of(c, h->block));
    struct flush fl = {.skb = skb, .c = c};
    bpf_loop(c->workers < MAX_WORKERS ? c->workers : MAX_WORKERS, flush_one, &fl, 0);
    if (set_words(skb, 0) < 0 || bpf_skb_store_bytes(skb, HDR_AT, h, HDR, 0) < 0)
        return -1;
    return 0;
}

/* a complete cell's sum (the scratch's, fixed point; the scratch's n values) for worker `owner`,
 * destination `dest_v`: converted, and sent down as a SUM of one row (the header the walk made,
 * sum_h), or held (hold_sum). A global function, as touch_cell. Returns 1 where the packet could not
 * be made (the walk stops) */
__attribute__((noinline)) int sum_down(struct __sk_buff *skb, __u32 owner, __u32 dest_v)
{
    struct scratch *s = the_scratch();
    struct config *c = bpf_map_lookup_elem(&cfg, &(__u32){0});
    if (!skb || !s || !c)
        return 1;
    __u32 n = s->n;
    __u64 t1 = bpf_ktime_get_ns();
    bpf_loop((n + CONVERT_STEP - 1) / CONVERT_STEP, convert_out, NULL, 0);
    bump_by(C_CONVERT_NS, bpf_ktime_get_ns() - t1);
    if (s->per > 1)
        return hold_sum(skb, owner, dest_v);
    __u64 bytes = ((((__u64)n - 1) & (VALUES - 1)) + 1) * 4;  /* 4..VALUES*4, for the verifier */
    if (bpf_skb_store_bytes(skb, HDR_AT, &s->sum_h, HDR, 0) < 0 ||  /* a SUM's header (on_unit) ... */
        bpf_skb_store_bytes(skb, HDR_AT + 16, &dest_v, 4, 0) < 0 ||  /* ... for this destination */
        bpf_skb_store_bytes(skb, PAYLOAD_AT, s->f, bytes, 0) < 0)
        return 1;
    if (send_to(skb, c, owner & 0xFFFF, 0) == 0) {
        bump(C_SUMS);
        bump(C_SUM_PACKETS);
    }
    return 0;
}

/* touch i of the packet on this shard: add its rows' chunk (one row, or the sum of several made by
 * make_sub) into its destination's cell; the packet whose count completes the cell sends the sum
 * down (or holds it: hold_sum) */
static long add_touch(__u32 i, struct walk *w)
{
    struct scratch *s = w->s;
    __u32 ti = w->lo + i;
    struct touch *e = bpf_map_lookup_elem(&touches, &ti);
    if (!e)
        return 1;
    __u32 cnt = e->cnt, xo = e->sub * s->lanes;  /* the addend: a row, or a subset's sum */
    __u32 chunk = s->sum_h.chunk, full = w->L->full;
    __u32 agg = chunk < full ? (e->pos * full + chunk) * ENTRY_AGGS : e->pbase + e->pos * w->L->part;
    __u32 at = w->base + agg / ENTRY_AGGS;
    __u32 o = ((agg % ENTRY_AGGS) * LANES) & (VALUES - 1);  /* the cell's first lane in the entry */
    __u32 slot = (agg % ENTRY_AGGS) & (ENTRY_AGGS - 1);
    __u32 n = s->n;
    if (o + n > VALUES)
        return 1;
    int t = touch_cell(at, slot, xo, e->need, cnt);
    if (t & T_CLEARED)
        bump(C_CLEARED);
    if (t & (T_STALE | T_MISSING))
        return 1;
    w->aggregated += cnt;
    w->touched += 1;
    if (!(t & T_COMPLETE))
        return 0;
    __u64 t1 = bpf_ktime_get_ns();
    int bad = sum_down(w->skb, e->owner, e->dest_v);
    w->sent_ns += bpf_ktime_get_ns() - t1;  /* counted in C_CONVERT_NS and C_CLONE_NS, not C_CELL_NS */
    return bad ? 1 : 0;
}

struct hand {
    struct __sk_buff *skb;
    struct unit *u;
    struct config *c;
    __u32 shards;  /* the shards to hand the packet to (bit s: shard s) */
};

/* the unit to worker w as a COPY, if w sums one of its destinations itself */
static long copy_to(__u32 w, struct hand *hd)
{
    if ((hd->u->copy_mask >> (w & (MAX_WORKERS - 1))) & 1) {
        if (send_to(hd->skb, hd->c, w, 0) == 0)
            bump(C_COPIES);
    }
    return 0;
}

/* a copy of the packet, flagged F_SHARD, with shard `sh` in `target`, to the ingress of that shard's
 * device `dev` (steered to its CPU, behind what was handed there before); a clone that fails is
 * counted. Returns bpf_clone_redirect's result */
static __always_inline long clone_to_shard(struct __sk_buff *skb, __u32 sh, __u32 dev)
{
    bpf_skb_store_bytes(skb, HDR_AT + 24, &sh, 4, 0);
    long err = bpf_clone_redirect(skb, dev, BPF_F_INGRESS);
    if (err)
        bump(C_CLONE_DROPPED);
    return err;
}

/* the shard a packet flagged F_SHARD was handed to (its `target`), or -1 (counted bad) unless it
 * came from that shard's device: only the switch hands a packet to a shard */
static __always_inline int handed_shard(struct __sk_buff *skb, struct config *c, struct hdr *h)
{
    __u32 sh = h->target;
    if (sh >= MAX_SHARDS || sh >= c->shards) {
        bump(C_BAD);
        return -1;
    }
    __u32 key = sh;  /* sh stays in a register, bounded */
    __u32 *dev = bpf_map_lookup_elem(&shard_dev, &key);
    if (!dev || *dev != skb->ifindex) {
        bump(C_BAD);
        return -1;
    }
    return (int)(sh & (MAX_SHARDS - 1));
}

/* shard i's copy of the unit, to its device's ingress (handled on its CPU), if it holds any of the
 * destinations of the packet's units (hd->shards: bits of the cfg.shards shards only) */
static long hand_to_shard(__u32 i, struct hand *hd)
{
    __u32 sh = i & (MAX_SHARDS - 1);
    __u32 *dev = bpf_map_lookup_elem(&shard_dev, &(__u32){sh});
    if (!dev || !(hd->shards & (1u << sh)))
        return 0;
    __u64 t0 = bpf_ktime_get_ns();
    if (clone_to_shard(hd->skb, sh, *dev) == 0)
        bump(C_SHARDED);
    bump_by(C_CLONE_NS, bpf_ktime_get_ns() - t0);
    return 0;
}

/* the shards that add one of packet P's touches (bit s: shard s) */
static __always_inline __u32 shards_of(struct packet *P, __u32 shards)
{
    __u32 m = 0;
    for (int i = 0; i < MAX_SHARDS; i++)
        if (i < shards && P->cut[i] != P->cut[i + 1])
            m |= 1u << i;
    return m;
}

static __always_inline int on_unit(struct __sk_buff *skb, struct config *c, struct hdr *h)
{
    __u32 li = h->layer;
    struct layer *L = bpf_map_lookup_elem(&layers, &li);
    struct scratch *s = bpf_map_lookup_elem(&scratch, &(__u32){0});
    struct addends *a = the_addends();
    if (!L || !s || !a || !L->dim || h->unit >= L->units || h->chunk >= L->chunks || h->chunk >= MAX_CHUNKS
        || h->direction > 1) {
        bump(C_BAD);
        return TC_ACT_SHOT;
    }
    __u32 rest = L->dim - h->chunk * VALUES;
    __u32 n = rest < VALUES ? rest : VALUES;
    __u32 lanes = (n + LANES - 1) / LANES * LANES;
    __u32 rows = n ? h->count / n : 0;  /* several whole rows where a row is one chunk */
    if (n == 0 || n > VALUES || rows == 0 || h->count != rows * n || rows * lanes > VALUES
        || (rows > 1 && L->chunks != 1) || h->unit + rows > L->units || skb->len != PAYLOAD_AT + 4 * h->count) {
        bump(C_BAD);
        return TC_ACT_SHOT;
    }
    __u32 ui = L->unit_base + h->unit;
    struct unit *u = bpf_map_lookup_elem(&units, &ui);
    if (!u || u->sender != h->sender || u->block != h->block || u->pk >= L->packets) {
        bump(C_BAD);
        return TC_ACT_SHOT;
    }
    __u32 pi = L->packet_base + u->pk;
    struct packet *P = bpf_map_lookup_elem(&packets, &pi);
    if (!P || P->first != h->unit || P->rows != rows) {  /* not a UNIT packet the workers send (touches.py) */
        bump(C_BAD);
        return TC_ACT_SHOT;
    }
    __u32 stamp = stamp_of(h->seq, h->block);
    __u32 parity = parity_of(c, h->block);
    struct sync *y = bpf_map_lookup_elem(&syncs, &parity);
    if (!y || stamp <= y->floor) {  /* its block is complete: a late or duplicated unit */
        bump(C_STALE);
        return TC_ACT_SHOT;
    }
    __u32 shard = 0;
    __u64 bytes = ((((__u64)h->count - 1) & (VALUES - 1)) + 1) * 4;  /* 4..VALUES*4, for the verifier */
    if (h->flags & F_SHARD) {  /* a shard's copy (seen, copied and counted at the port): its touches */
        int sh = handed_shard(skb, c, h);
        if (sh < 0)
            return TC_ACT_SHOT;
        shard = (__u32)sh & (MAX_SHARDS - 1);
        if (bpf_skb_load_bytes(skb, PAYLOAD_AT, s->xf, bytes) < 0)
            return TC_ACT_SHOT;
        h->flags &= ~F_SHARD;
        h->target = 0;
        goto walk;
    }
    __u32 si = ui * MAX_CHUNKS + h->chunk;  /* a packet of several rows: its first unit's */
    struct cell *seen_at = bpf_map_lookup_elem(&seen, &si);
    if (!seen_at)
        return TC_ACT_SHOT;
    int dup = 0;
    bpf_spin_lock(&seen_at->lock);
    if (seen_at->stamp == stamp)
        dup = 1;
    seen_at->stamp = stamp;
    bpf_spin_unlock(&seen_at->lock);
    if (dup) {
        bump_by(C_DUPLICATES, rows);  /* units, as C_UNITS */
        return TC_ACT_SHOT;
    }
    bump_by(C_UNITS, rows);
    if (rows > 1)
        bump(C_PACKED);  /* a packet of several units */
    if (bpf_skb_load_bytes(skb, PAYLOAD_AT, s->xf, bytes) < 0)
        return TC_ACT_SHOT;
    /* the copies first, while the packet still holds the units */
    if (u->copy_mask) {
        __u8 kind = K_COPY;
        bpf_skb_store_bytes(skb, HDR_AT + 4, &kind, 1, 0);
        struct hand hd = {.skb = skb, .u = u, .c = c};
        bpf_loop(c->workers < MAX_WORKERS ? c->workers : MAX_WORKERS, copy_to, &hd, 0);
    }
    __u32 hand = shards_of(P, c->shards);
    if (!hand)  /* no destination aggregated here: the copies carried it */
        return TC_ACT_SHOT;
    if (c->shards > 1) {  /* each shard's CPU adds its own touches: a copy to its device's ingress */
        __u8 kind = K_UNIT, flags = h->flags | F_SHARD;  /* a COPY above may have readdressed the packet */
        __u16 dport = bpf_htons((__u16)c->switch_port);
        bpf_skb_store_bytes(skb, L4 + 2, &dport, 2, 0);
        bpf_skb_store_bytes(skb, HDR_AT + 4, &kind, 1, 0);
        bpf_skb_store_bytes(skb, HDR_AT + 7, &flags, 1, 0);
        struct hand hd = {.skb = skb, .u = u, .shards = hand};
        bpf_loop(c->shards < MAX_SHARDS ? c->shards : MAX_SHARDS, hand_to_shard, &hd, 0);
        return TC_ACT_SHOT;
    }
walk:;
    if (LOCKLESS && bpf_get_smp_processor_id() != c->cpu[shard & (MAX_SHARDS - 1)]) {
        bump(C_OFF_CPU);  /* steered to another CPU than the one that adds without locks: lost, pulled */
        return TC_ACT_SHOT;
    }
    __u32 lo = P->cut[shard & (MAX_SHARDS - 1)], hi = P->cut[(shard & (MAX_SHARDS - 1)) + 1];
    if (hi < lo || hi > L->touches || hi - lo > MAX_WALK) {
        bump(C_BAD);
        return TC_ACT_SHOT;
    }
    if (rows > 1 && set_words(skb, n) < 0)
        return TC_ACT_SHOT;
    __u32 frac = h->direction ? L->frac_back : L->frac;
    s->frac = frac;
    s->sat = 0;
    s->n = n;
    s->lanes = lanes;
    s->conv = P->conv[shard & (MAX_SHARDS - 1)];
    s->converted = 0;
#pragma unroll
    for (int g = 0; g < GROUPS; g++)
#pragma unroll
        for (int j = 0; j < SUBSETS / 64; j++)
            s->used[g][j] = P->used[shard & (MAX_SHARDS - 1)][g][j];
    s->word = 0;
    s->words = rows / GROUP * (SUBSETS / 64) + (rows % GROUP ? ((1 << (rows % GROUP)) + 63) / 64 : 0);
    struct walk w = {.skb = skb, .c = c, .L = L, .s = s, .a = a, .base = parity * c->region, .lo = L->touch_base + lo};
    __u64 t0 = bpf_ktime_get_ns();
    bpf_loop(rows * lanes / CONVERT_STEP, convert_in, &w, 0);  /* the addends are 0 past each row in its last step */
    bump_by(C_CONVERT_NS, bpf_ktime_get_ns() - t0);
    bump_by(C_CONVERTED, s->converted);
    if (s->sat) {
        bump(C_SATURATED);
        h->flags |= 1;
    }
    s->sum_h = *h;  /* the header of the sums this packet completes: one row each */
    s->sum_h.kind = K_SUM;  /* its sender the unit's: a marked SUM's CNP goes to a contributor (§3.4) */
    s->sum_h.count = n;
    s->stamp = stamp;
    s->per = LOCKLESS && L->chunks == 1 ? VALUES / lanes : 1;
    s->pk = pend_base(shard, parity);
    s->owed_at = ((L->owed_base + h->block) * c->shards + shard) * c->workers;
    __u64 t1 = bpf_ktime_get_ns();
    /* the sums of the subsets it adds, a call each and one a word (at most every subset of each
     * whole group and those of the last group's rows, and each word's call that finds it empty) */
    bpf_loop(rows / GROUP * SUBSETS + (rows % GROUP ? 1 << (rows % GROUP) : 0) + s->words, make_sub, &w, 0);
    bump_by(C_SUBSET_NS, bpf_ktime_get_ns() - t1);  /* of C_CELL_NS: the subsets' sums */
    bpf_loop(hi - lo, add_touch, &w, 0);
    bump_by(C_CELL_NS, bpf_ktime_get_ns() - t1 - w.sent_ns);  /* the walk, less the sums' sends */
    bump_by(C_AGGREGATED, w.aggregated);
    bump_by(C_TOUCHED, w.touched);
    bump_by(C_SUBSETS, w.subsets);
    return TC_ACT_SHOT;
}

static __always_inline int on_done(struct __sk_buff *skb, struct config *c, struct hdr *h)
{
    __u32 parity = parity_of(c, h->block);
    struct sync *y = bpf_map_lookup_elem(&syncs, &parity);
    if (!y || h->sender >= c->workers || h->sender >= MAX_WORKERS)
        return TC_ACT_SHOT;
    __u32 stamp = stamp_of(h->seq, h->block);
    __u64 bit = 1ULL << (h->sender & 63);
    int first_full = 0, again = 0;
    bpf_spin_lock(&y->lock);
    if (stamp <= y->floor) {
        again = 1;  /* complete already: its NEXT was lost */
    } else {
        if (y->stamp < stamp) {
            y->stamp = stamp;
            y->bitmap = 0;
        }
        if (y->stamp == stamp) {
            y->bitmap |= bit;
            first_full = y->bitmap == c->all_mask;
            if (first_full)
                y->floor = stamp;
        }
    }
    bpf_spin_unlock(&y->lock);
    bump(C_DONES);
    if (!first_full && !again)
        return TC_ACT_SHOT;
    __u8 kind = K_NEXT;
    bpf_skb_store_bytes(skb, HDR_AT + 4, &kind, 1, 0);
    if (again)  /* its NEXT was lost: to it alone */
        return send_to(skb, c, h->sender, 1) == TC_ACT_REDIRECT ? TC_ACT_REDIRECT : TC_ACT_SHOT;
    for (__u32 w = 0; w < MAX_WORKERS; w++) {
        if (w >= c->workers)
            break;
        if (send_to(skb, c, w, 0) == 0)
            bump(C_NEXTS);
    }
    return TC_ACT_SHOT;
}

/* shard i's copy of an END, to its device's ingress: behind the units handed to it before */
static long end_to_shard(__u32 i, struct flush *fl)
{
    __u32 sh = i & (MAX_SHARDS - 1);
    __u32 *dev = bpf_map_lookup_elem(&shard_dev, &(__u32){sh});
    if (dev)
        clone_to_shard(fl->skb, sh, *dev);
    return 0;
}

/* a worker's END of a block: copied to every worker, itself included. With several shards the
 * port hands it to every shard's device instead, behind the units it handed there (a FIFO per
 * CPU), and each shard copies it to the workers with `chunk` = the shard and `target` = the shards
 * (one shard: 0 and 1):
 * a worker with all of them from every worker has every SUM the switch sent it for the block. A
 * pinned shard first sends what it holds for the block (flush_held). */
static __always_inline int on_end(struct __sk_buff *skb, struct config *c, struct hdr *h)
{
    __u32 shard = 0;
    if (h->flags & F_SHARD) {
        int sh = handed_shard(skb, c, h);
        if (sh < 0)
            return TC_ACT_SHOT;
        shard = (__u32)sh & (MAX_SHARDS - 1);
        h->flags &= ~F_SHARD;
    } else {
        if (h->sender >= c->workers) {
            bump(C_BAD);
            return TC_ACT_SHOT;
        }
        bump(C_ENDS);
        if (c->shards > 1) {
            __u8 flags = h->flags | F_SHARD;
            bpf_skb_store_bytes(skb, HDR_AT + 7, &flags, 1, 0);
            struct flush fl = {.skb = skb, .c = c};
            bpf_loop(c->shards < MAX_SHARDS ? c->shards : MAX_SHARDS, end_to_shard, &fl, 0);
            return TC_ACT_SHOT;
        }
    }
    h->chunk = (__u16)shard;  /* the copy's shard fields are the switch's, never the worker's */
    h->target = c->shards;
    if (bpf_skb_store_bytes(skb, HDR_AT, h, HDR, 0) < 0)
        return TC_ACT_SHOT;
    if (LOCKLESS && h->count == 0 && flush_held(skb, c, h, shard) < 0)
        return TC_ACT_SHOT;
    for (__u32 w = 0; w < MAX_WORKERS; w++) {
        if (w >= c->workers)
            break;
        send_to(skb, c, w, 0);
    }
    return TC_ACT_SHOT;
}

SEC("tc")
int gnn_switch(struct __sk_buff *skb)
{
    if (skb->protocol != bpf_htons(ETH_P_IP))
        return TC_ACT_OK;
    struct config *c = bpf_map_lookup_elem(&cfg, &(__u32){0});
    struct iphdr ip;
    struct udphdr udp;
    struct hdr h;
    if (!c || bpf_skb_load_bytes(skb, ETH, &ip, IPH) < 0 || ip.ihl != 5 || ip.protocol != IPPROTO_UDP)
        return TC_ACT_OK;
    if (bpf_skb_load_bytes(skb, L4, &udp, UDPH) < 0 || udp.dest != bpf_htons((__u16)c->switch_port))
        return TC_ACT_OK;
    if (bpf_skb_load_bytes(skb, HDR_AT, &h, HDR) < 0 || h.magic != MAGIC)
        return TC_ACT_OK;
    switch (h.kind) {
    case K_UNIT:
        return on_unit(skb, c, &h);
    case K_DONE:
        return on_done(skb, c, &h);
    case K_END:
        return on_end(skb, c, &h);
    case K_PULL:
        bump(C_PULLS);
        for (__u32 w = 0; w < MAX_WORKERS; w++) {
            if (w >= c->workers)
                break;
            if (w != h.sender)
                send_to(skb, c, w, 0);
        }
        return TC_ACT_SHOT;
    case K_RESEND:
    case K_CNP:
        if (h.target >= c->workers)
            return TC_ACT_SHOT;
        bump(h.kind == K_CNP ? C_CNPS : C_RESENDS);
        return send_to(skb, c, h.target, 1) == TC_ACT_REDIRECT ? TC_ACT_REDIRECT : TC_ACT_SHOT;
    default:
        bump(C_BAD);
        return TC_ACT_SHOT;
    }
}

char LICENSE[] SEC("license") = "GPL";
