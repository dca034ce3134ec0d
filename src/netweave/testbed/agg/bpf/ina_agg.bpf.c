// SPDX-License-Identifier: GPL-2.0
/*
 * PAHInA's aggregation data plane in XDP (pahina.txt §IV-B/C, Figure 3b), for netweave's testbed.
 *
 * Attached to the worker-facing interfaces of an INA switch namespace. A UDP datagram to the
 * aggregation port whose payload is a netweave DATA packet for this aggregator (magic "NWAG",
 * kind 1, agg_id = this switch's) is aggregated; anything else passes unchanged.
 *
 * Two maps, keyed by (epoch_id, tensor_id, precision) — precisions never mix:
 *   state: the bitmap of workers seen, how many have finished adding, and a bpf_timer;
 *   data:  the running fixed-point sum, exact in int64, one slot per value (at most MAX_SLOTS).
 * Values travel in the container of the packet's precision, big-endian: fp8 int16, fp16 int32,
 * fp32 int64 (netweave.dataplane.fixedpoint.CONTAINER_BITS; the widths come in as -DWIDTH_FP8=2
 * -DWIDTH_FP16=4 -DWIDTH_FP32=8 from xdp.py, which reads that table). A DATA packet must be exactly
 * header + count × width bytes; its values are sign-extended into the int64 sums.
 * No lock: packets of one key arriving on different interfaces run on different CPUs, so the
 * bitmap is claimed with an atomic fetch-or (a worker whose bit is already set is a duplicate and
 * is dropped) and values are added with atomic 64-bit adds; the sum is saturated to the
 * container's range (int16, int32; int64 never saturates: fp32 values are limited to ±2^56) only
 * when complete, which makes it independent of the arrival order (netweave.dataplane.fixedpoint
 * does the same, so both data planes give bit-identical sums). The packet whose atomic increment
 * of `added` reaches the number of workers is the last to have added: its values are overwritten
 * in place with the RESULT in the same container (same length: the packet neither grows nor
 * shrinks), kind 2, wor_id = workers summed, flags bit 0 = saturated; it passes on to the PS, and
 * both entries are freed.
 * A completed key stays in `done` (LRU) so that late duplicates are dropped, not re-aggregated.
 * When the state map is full (the switch's aggregator memory), the key is marked in `bypass` and
 * all its packets pass to the PS unchanged: the PS aggregates what the switch could not (a key is
 * aggregated wholly in the switch or wholly at the PS, never split).
 * When first packets of one key race on two CPUs, the one that finds the other between its two
 * inserts drops its packet (counted as raced) and touches neither entry, so a race neither splits
 * the key nor frees the winner's sums. The winner's timer NACKs the loser's worker; where the
 * winner found no aggregator free and bypassed the key, there is no timer, and the PS, which then
 * holds some of the key's DATA, asks the missing worker (endpoints.Collector).
 * Multi-level aggregation (ARO's and ECMP's trees): with a parent configured, the complete sum
 * leaves as a DATA packet of the parent aggregator, from this switch's worker id there, instead of
 * a RESULT; the parent adds it like any worker's (the sum is already within its container).
 * The timer, on expiry, reports the key and its bitmap on a ring buffer; the userspace agent NACKs
 * the missing workers, and the timer re-arms.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define MAX_SLOTS 256
#define MAX_KEYS 4096
#define HEADER_BYTES 22
#define KIND_DATA 1
#define KIND_RESULT 2
#define CLOCK_MONOTONIC 1
#define EEXIST 17
#define INT16_MAX_ 32767LL
#define INT16_MIN_ (-32768LL)
#define INT32_MAX_ 2147483647LL
#define INT32_MIN_ (-2147483647LL - 1)
#ifndef WIDTH_FP8
#error "compile with -DWIDTH_FP8=2 -DWIDTH_FP16=4 -DWIDTH_FP32=8 (netweave.testbed.xdp.compile_program does)"
#endif
#define MAX_WIDTH 8
#if WIDTH_FP8 > MAX_WIDTH || WIDTH_FP16 > MAX_WIDTH || WIDTH_FP32 > MAX_WIDTH
#error "a container wider than 8 bytes does not fit the int64 sums"
#endif

struct config {
    __u32 port;        /* aggregation UDP port, host order */
    __u32 agg_id;      /* this aggregator */
    __u64 timeout_ns;  /* silence after which the agent NACKs missing workers */
    __u32 parent_agg;  /* multi-level aggregation: the next aggregator up (0: none, the sum goes to the PS) */
    __u32 parent_wor;  /* this aggregator's worker id at its parent */
};

struct worker {
    __u64 bit;         /* the worker's bit in the bitmap */
    __u32 precision;   /* the precision it was assigned (1 fp8, 2 fp16, 3 fp32) */
    __u32 pad;
};

struct key {
    __u32 epoch;
    __u16 tensor;
    __u8 precision;
    __u8 pad;
};

struct state {
    __u64 bitmap;      /* workers whose packet was claimed */
    __u64 added;       /* workers whose values are in the sum */
    __u32 count;       /* values per packet of this key */
    __u32 expired;     /* timer expiries so far */
    struct key key;
    struct bpf_timer timer;
};

struct sums {
    __s64 v[MAX_SLOTS];
};

struct scratch {
    __u8 in[MAX_SLOTS * MAX_WIDTH];   /* the packet's values, network order, `width` bytes each */
};

struct loop_ctx {
    struct sums *sum;
    struct scratch *buf;
    __u32 width;
    __u32 saturated;
};

struct event {
    struct key key;
    __u64 bitmap;
};

enum { C_ACCEPTED, C_DUPLICATES, C_RESULTS, C_SATURATED, C_PASSED_FULL, C_MISMATCHED, C_UNKNOWN, C_TIMEOUTS, C_RACED,
       C_MAX };

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct config); } cfg SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 1024); __type(key, __u32); __type(value, struct worker); } workers SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } full SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, MAX_KEYS); __type(key, struct key); __type(value, struct state); } state SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, MAX_KEYS); __type(key, struct key); __type(value, struct sums); } data SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 4 * MAX_KEYS); __type(key, struct key); __type(value, __u8); } done SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 4 * MAX_KEYS); __type(key, struct key); __type(value, __u8); } bypass SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, C_MAX); __type(key, __u32); __type(value, __u64); } counters SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 1 << 16); } events SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct sums); } zeros SEC(".maps");  /* never written: seeds data */
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct scratch); } scratch SEC(".maps");

static __always_inline __u32 width_of(__u8 precision)
{
    return precision == 1 ? WIDTH_FP8 : precision == 2 ? WIDTH_FP16 : WIDTH_FP32;
}

/* value i of the packet, sign-extended from its container */
static __always_inline __s64 read_value(struct scratch *buf, __u32 width, __u64 i)
{
    if (width == 2)
        return (__s16)bpf_ntohs(((__u16 *)buf->in)[i & (MAX_SLOTS - 1)]);
    if (width == 4)
        return (__s32)bpf_ntohl(((__u32 *)buf->in)[i & (MAX_SLOTS - 1)]);
    return (__s64)bpf_be64_to_cpu(((__u64 *)buf->in)[i & (MAX_SLOTS - 1)]);
}

/* value i of the result: the complete sum saturated to the container, written back in its width */
static __always_inline __u32 write_value(struct scratch *buf, __u32 width, __u64 i, __s64 x)
{
    __s64 clipped = x;
    if (width == 2) {
        clipped = x > INT16_MAX_ ? INT16_MAX_ : (x < INT16_MIN_ ? INT16_MIN_ : x);
        ((__u16 *)buf->in)[i & (MAX_SLOTS - 1)] = bpf_htons((__u16)(__s16)clipped);
    } else if (width == 4) {
        clipped = x > INT32_MAX_ ? INT32_MAX_ : (x < INT32_MIN_ ? INT32_MIN_ : x);
        ((__u32 *)buf->in)[i & (MAX_SLOTS - 1)] = bpf_htonl((__u32)(__s32)clipped);
    } else {  /* int64: the sum is the result */
        ((__u64 *)buf->in)[i & (MAX_SLOTS - 1)] = bpf_cpu_to_be64((__u64)x);
    }
    return clipped != x;
}

static long add_value(__u64 i, struct loop_ctx *lc)
{
    if (i >= MAX_SLOTS)
        return 1;
    __sync_fetch_and_add(&lc->sum->v[i], read_value(lc->buf, lc->width, i));
    return 0;
}

static long write_result(__u64 i, struct loop_ctx *lc)
{
    if (i >= MAX_SLOTS)
        return 1;
    lc->saturated |= write_value(lc->buf, lc->width, i, lc->sum->v[i]);
    return 0;
}

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1;
}

static int on_timeout(void *map, struct key *k, struct state *s)
{
    struct config *c;
    __u32 zero = 0;
    struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

    if (e) {
        e->key = *k;
        e->bitmap = s->bitmap;
        bpf_ringbuf_submit(e, 0);
    }
    s->expired += 1;
    count(C_TIMEOUTS);
    c = bpf_map_lookup_elem(&cfg, &zero);
    if (c)
        bpf_timer_start(&s->timer, c->timeout_ns, 0);
    return 0;
}

SEC("xdp")
int ina_aggregate(struct xdp_md *ctx)
{
    void *data_end = (void *)(long)ctx->data_end;
    void *pkt = (void *)(long)ctx->data;
    struct ethhdr *eth = pkt;
    struct iphdr *ip;
    struct udphdr *udp;
    __u8 *hdr;
    __u32 zero = 0;
    struct config *c;

    if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
        return XDP_PASS;
    udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > data_end)
        return XDP_PASS;
    c = bpf_map_lookup_elem(&cfg, &zero);
    if (!c || udp->dest != bpf_htons((__u16)c->port))
        return XDP_PASS;
    hdr = (void *)(udp + 1);
    if ((void *)(hdr + HEADER_BYTES) > data_end)
        return XDP_PASS;
    if (hdr[0] != 'N' || hdr[1] != 'W' || hdr[2] != 'A' || hdr[3] != 'G' || hdr[4] != KIND_DATA)
        return XDP_PASS;
    __u16 agg = (__u16)hdr[5] << 8 | hdr[6];
    __u32 wor = (__u16)hdr[7] << 8 | hdr[8];
    __u8 precision = hdr[9];
    __u32 epoch = (__u32)hdr[10] << 24 | (__u32)hdr[11] << 16 | (__u32)hdr[12] << 8 | hdr[13];
    __u16 tensor = (__u16)hdr[14] << 8 | hdr[15];
    __u32 n = (__u32)hdr[16] << 24 | (__u32)hdr[17] << 16 | (__u32)hdr[18] << 8 | hdr[19];
    if (agg != c->agg_id)
        return XDP_PASS;
    struct worker *w = bpf_map_lookup_elem(&workers, &wor);
    if (!w || w->precision != precision) {
        count(C_UNKNOWN);
        return XDP_PASS;  /* not ours, or not at its precision: the PS sees it as sent */
    }
    __u8 *vals = hdr + HEADER_BYTES;
    __u32 width = width_of(precision);
    if (n == 0 || n > MAX_SLOTS || (void *)(vals + n * width) != data_end) {
        count(C_MISMATCHED);
        return XDP_PASS;  /* not header + count x width bytes */
    }
    struct key k = {.epoch = epoch, .tensor = tensor, .precision = precision};
    if (bpf_map_lookup_elem(&done, &k)) {
        count(C_DUPLICATES);
        return XDP_DROP;  /* a late duplicate or resend of a finished key */
    }
    if (bpf_map_lookup_elem(&bypass, &k)) {
        count(C_PASSED_FULL);
        return XDP_PASS;  /* this key's first packet found no aggregator: the PS aggregates all of it */
    }
    struct state *s = bpf_map_lookup_elem(&state, &k);
    if (!s) {  /* the first packet seeds both maps and arms the timer */
        struct sums *zero_sums = bpf_map_lookup_elem(&zeros, &zero);
        if (!zero_sums)
            return XDP_PASS;
        long seeded = bpf_map_update_elem(&data, &k, zero_sums, BPF_NOEXIST);
        if (seeded == -EEXIST) {  /* another CPU seeds this key: never split it, never touch its entries */
            s = bpf_map_lookup_elem(&state, &k);
            if (!s) {
                count(C_RACED);
                return XDP_DROP;  /* it is between its two inserts: the timer will NACK this worker */
            }
        } else if (seeded == 0) {
            struct state fresh = {.bitmap = 0, .count = n, .key = k};
            if (bpf_map_update_elem(&state, &k, &fresh, BPF_NOEXIST) == 0)
                s = bpf_map_lookup_elem(&state, &k);
            if (s) {
                bpf_timer_init(&s->timer, &state, CLOCK_MONOTONIC);
                bpf_timer_set_callback(&s->timer, on_timeout);
                bpf_timer_start(&s->timer, c->timeout_ns, 0);
            } else {
                bpf_map_delete_elem(&data, &k);  /* ours: the state map is full */
            }
        }
        if (!s) {
            __u8 one = 1;
            bpf_map_update_elem(&bypass, &k, &one, BPF_ANY);
            count(C_PASSED_FULL);
            return XDP_PASS;  /* no aggregator free: the PS aggregates this one */
        }
    }
    struct sums *sum = bpf_map_lookup_elem(&data, &k);
    __u64 *want = bpf_map_lookup_elem(&full, &(__u32){precision & 3});
    if (!sum || !want)
        return XDP_PASS;
    if (s->count != n) {
        count(C_MISMATCHED);
        return XDP_DROP;
    }
    __u64 before = __sync_fetch_and_or(&s->bitmap, w->bit);
    if (before & w->bit) {
        count(C_DUPLICATES);
        return XDP_DROP;
    }
    struct scratch *buf = bpf_map_lookup_elem(&scratch, &zero);
    if (!buf)
        return XDP_PASS;
    __u32 offset = (__u32)((void *)vals - pkt);
    /* = n x width for 1 <= n <= MAX_SLOTS and width <= MAX_WIDTH, provably in [1, MAX_SLOTS x MAX_WIDTH] */
    __u64 len = (((__u64)n * width - 1) & (MAX_SLOTS * MAX_WIDTH - 1)) + 1;
    if (bpf_xdp_load_bytes(ctx, offset, buf->in, len) < 0)
        return XDP_PASS;
    struct loop_ctx lc = {.sum = sum, .buf = buf, .width = width, .saturated = 0};
    bpf_loop(n, add_value, &lc, 0);
    __u64 workers_in = (__u64)__builtin_popcountll(*want);
    __u64 added = __sync_add_and_fetch(&s->added, 1);
    count(C_ACCEPTED);
    if (added != workers_in)
        return XDP_DROP;  /* absorbed: its values are in the sum */
    /* the last to add carries the result on to the PS; both entries are freed */
    bpf_loop(n, write_result, &lc, 0);
    len = (((__u64)n * width - 1) & (MAX_SLOTS * MAX_WIDTH - 1)) + 1;
    if (bpf_xdp_store_bytes(ctx, offset, buf->in, len) < 0)
        return XDP_DROP;
    __u32 saturated = lc.saturated;
    pkt = (void *)(long)ctx->data;  /* store_bytes invalidated the packet pointers */
    data_end = (void *)(long)ctx->data_end;
    hdr = pkt + sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr);
    udp = pkt + sizeof(struct ethhdr) + sizeof(struct iphdr);
    if ((void *)(hdr + HEADER_BYTES) > data_end)
        return XDP_DROP;
    if (c->parent_agg) {  /* multi-level (ARO, ECMP): the sum is one more worker's DATA at the next aggregator */
        hdr[4] = KIND_DATA;
        hdr[5] = (__u8)(c->parent_agg >> 8);
        hdr[6] = (__u8)c->parent_agg;
        hdr[7] = (__u8)(c->parent_wor >> 8);
        hdr[8] = (__u8)c->parent_wor;
    } else {
        hdr[4] = KIND_RESULT;
        hdr[7] = (__u8)(workers_in >> 8);
        hdr[8] = (__u8)workers_in;
    }
    hdr[20] = 0;
    hdr[21] = saturated ? 1 : 0;
    udp->check = 0;  /* IPv4 allows no UDP checksum; the payload changed */
    __u8 one = 1;
    bpf_map_update_elem(&done, &k, &one, BPF_ANY);
    bpf_map_delete_elem(&state, &k);
    bpf_map_delete_elem(&data, &k);
    count(C_RESULTS);
    if (saturated)
        count(C_SATURATED);
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
