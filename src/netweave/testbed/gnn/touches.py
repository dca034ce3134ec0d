"""A UNIT packet's additions into the kernel switch's cells, one per destination (beyond the
paper): the tables ``bpf/gnn_switch.bpf.c`` walks instead of each unit's edges.

A UNIT packet carries several consecutive units of one sender (:func:`~.tables.unit_packets`), and
on a dense graph they share destinations. SwitchGNN's switch adds each unit into each of its
destinations' aggregators (switchgnn.txt §3.3); here a shard adds each destination once a packet
the sum of the packet's rows that feed it. The rows are taken in *groups* of :data:`GROUP`; per
group, the sums of the subsets of rows that some destination needs (``used``, closed under dropping
the lowest row, so that each is one row plus a smaller one) are computed once a packet in the CPU's
scratch, so a destination fed by k rows of a group costs one addition into its cell instead of k.
Integer sums do not depend on the order of additions, so the cells' sums are the same bits
(``tests/testbed/gnn/test_kernel_dataplane.py`` checks them against the userspace agent).

On reddit-like:scale=0.02 (8 workers, 10 MB, 2 × 128, 2 shards) the touches are 0.57 of the edges
in layer 0 (8 rows of 64 values a packet, its column slices) and 0.63 in layer 1 (10 rows of 41),
against 0.75 and 0.78 in groups of 4 rows: a packet's 8 rows feed one destination in 1.8 of them,
and a group of all 8 makes about 90 more subsets' sums a packet and shard to save about 285
touches, about 200 additions net (``benchmarks/bench_touch_groups.py``). On amazon_cs, a sparse
graph, 0.92 and 0.88.

A *touch* is one (packet, shard, destination, group): the destination's cell (its position,
contributions, vertex, owner and partial-cell base, as an edge of :func:`~.tables.switch_tables`),
``sub = SUBSETS · group + m`` (bit ``r`` of ``m``: row ``GROUP · group + r`` of the packet) and
``cnt``, the bits of ``m`` (the contributions it adds). A packet's touches are contiguous, shard by
shard (``cut[s] .. cut[s + 1]``); ``conv[s]`` has a bit per row that shard ``s`` adds anywhere
(only those are converted to fixed point), ``used[s, group]`` a bit per subset ``m`` of two or more
rows that shard ``s`` needs.

The addends a CPU adds from (``bpf: addends``, :data:`SUBS` int64 lanes, 128 KiB): addend ``sub``
at lane ``sub · lanes`` (``lanes``: a row's values rounded up to 16), a row alone where ``m`` has
one bit; within :data:`SUBS` for every width (rows · lanes ≤ 512: 8 rows of 64 lanes fill it, as
do 16 of 32 and 32 of 16).
"""

from __future__ import annotations

import numpy as np

from .fixed import LANES
from .plans import edge_ranges
from .tables import ENTRY_AGGS as MAX_ROWS  # units a UNIT packet carries, at most (bpf: MAX_ROWS)
from .tables import MAX_SHARDS, edge_shard

GROUP = 8  # rows whose subsets' sums are made once a packet (bpf: GROUP)
GROUPS = MAX_ROWS // GROUP
SUBSETS = 1 << GROUP  # subsets m of a group's rows (bpf: SUBSETS)
SUBS = GROUPS * SUBSETS * LANES  # int64 lanes a CPU adds from: addend sub from lane sub · lanes (bpf: SUBS)

PACKET = np.dtype([("first", "<u4"), ("rows", "<u4"), ("cut", "<u4", (MAX_SHARDS + 1,)),
                   ("conv", "<u4", (MAX_SHARDS,)), ("pad", "<u4"), ("used", "<u8", (MAX_SHARDS, GROUPS, SUBSETS // 64))])
TOUCH = np.dtype([("pos", "<u4"), ("need", "<u4"), ("dest_v", "<u4"), ("owner", "<u4"), ("pbase", "<u4"),
                  ("sub", "<u2"), ("cnt", "<u2")])
BITS = np.array([bin(m).count("1") for m in range(SUBSETS)], np.int64)  # the rows of a group's subset


def packet_touches(p: dict[str, np.ndarray], v, first: np.ndarray, rows: np.ndarray, shards: int,
                   table: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(packets, touches)`` (:data:`PACKET`, :data:`TOUCH`) of one layer's plan ``p`` (its
    :class:`~.tables.LayerView` ``v``), whose UNIT packets are ``first``, ``rows``
    (:func:`~.tables.plan_packets`: every unit, in order, in one packet), for a switch of
    ``shards``, the shard that adds into each destination's cells being :func:`~.tables.edge_shard`'s
    (``table`` as there). Only aggregated destinations are touched (a forwarded or bypassed
    one's owner sums the COPY). A packet's touches go shard by shard, then by destination."""
    Q = first.size
    packets = np.zeros(Q, PACKET)
    packets["first"], packets["rows"] = first, rows
    unit_packet = np.repeat(np.arange(Q), rows)
    ce, ue = edge_ranges(p["unit_lo"], p["unit_hi"])
    k = v.slot_of_edge[ce]
    agg = ~v.copy[k]
    ce, ue, k = ce[agg], ue[agg], k[agg]
    sh = edge_shard(v, k, shards, table)
    pk = unit_packet[ue]
    row = ue - first[pk]
    g = row // GROUP
    order = np.lexsort((g, k, sh, pk))
    ce, pk, sh, k, g = ce[order], pk[order], sh[order], k[order], g[order]
    bit = np.left_shift(1, row[order] % GROUP)
    new = np.r_[True, (pk[1:] != pk[:-1]) | (sh[1:] != sh[:-1]) | (k[1:] != k[:-1]) | (g[1:] != g[:-1])] \
        if pk.size else np.zeros(0, bool)
    at = np.flatnonzero(new)
    m = np.bitwise_or.reduceat(bit, at) if at.size else np.zeros(0, np.int64)
    pk, sh, k, g, ce = pk[at], sh[at], k[at], g[at], ce[at]
    touches = np.zeros(at.size, TOUCH)
    touches["pos"], touches["need"], touches["dest_v"] = v.pos[k], v.need[k], p["dst"][ce]
    touches["owner"], touches["pbase"] = v.owner[k], v.pbase[k]
    touches["sub"], touches["cnt"] = g * SUBSETS + m, BITS[m]
    counts = np.bincount(pk * shards + sh, minlength=Q * shards).reshape(Q, shards)
    ends = np.cumsum(counts.ravel()).reshape(Q, shards)
    packets["cut"][:, :shards] = ends - counts
    packets["cut"][:, shards:] = ends[:, -1:] if Q else 0
    conv = np.zeros((Q, MAX_SHARDS), np.int64)
    np.bitwise_or.at(conv, (pk, sh), np.left_shift(m, GROUP * g))
    packets["conv"] = conv
    packets["used"] = used_subsets(Q, pk, sh, g, m)
    return packets, touches


def used_subsets(packets: int, pk: np.ndarray, sh: np.ndarray, g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``(packets, MAX_SHARDS, GROUPS, SUBSETS // 64)`` uint64: bit ``m`` where shard ``sh`` of packet
    ``pk`` adds subset ``m`` of group ``g`` (the touches' ``(T,)`` arrays) and it holds two rows or
    more, closed under dropping a subset's lowest row (each is then a row plus one made before it)."""
    key = np.unique(((pk * MAX_SHARDS + sh) * GROUPS + g) * SUBSETS + m)
    found = [key[:0]]  # none where the layer has no touches
    while key.size:
        key = key[BITS[key % SUBSETS] >= 2]
        found.append(key)
        key = np.unique(key & (key - 1))  # its lowest row dropped: the group's bits are the key's lowest
    key = np.unique(np.concatenate(found))
    used = np.zeros(packets * MAX_SHARDS * GROUPS * (SUBSETS // 64), np.uint64)
    m = key % SUBSETS
    bit = np.left_shift(np.uint64(1), (m % 64).astype(np.uint64))
    np.bitwise_or.at(used, key // SUBSETS * (SUBSETS // 64) + m // 64, bit)
    return used.reshape(packets, MAX_SHARDS, GROUPS, SUBSETS // 64)


def check_touches(packets: np.ndarray, touches: np.ndarray, units: int, dim: int, workers: int) -> bool:
    """Whether a layer's packets and touches are ones the program may read: packets within the
    layer's ``units``, at most :data:`MAX_ROWS` rows, cuts ascending within its touches, subsets of
    their rows (and their sums within :data:`SUBS`) made by the packet's shard (:func:`check_made`),
    owners among ``workers``."""
    if packets.size == 0:
        return touches.size == 0
    lanes = LANES * -(-dim // LANES)
    rows = packets["rows"].astype(np.int64)
    cut = packets["cut"].astype(np.int64)
    ok = ((rows >= 1).all() and (rows <= MAX_ROWS).all()
          and (packets["first"].astype(np.int64) + rows <= units).all()
          and (np.diff(cut, axis=1) >= 0).all() and cut[0, 0] == 0 and (cut[1:, 0] == cut[:-1, -1]).all()
          and cut[-1, -1] == touches.size
          and (packets["conv"].astype(np.int64) < np.left_shift(1, rows)[:, None]).all())
    if not ok or touches.size == 0:
        return bool(ok)
    sub = touches["sub"].astype(np.int64)
    m, g, cnt = sub % SUBSETS, sub // SUBSETS, touches["cnt"].astype(np.int64)
    at = np.repeat(np.arange(packets.size * MAX_SHARDS), np.diff(cut, axis=1).ravel())  # packet · MAX_SHARDS + shard
    of = at // MAX_SHARDS
    top = GROUP * g + np.log2(np.maximum(m, 1)).astype(np.int64)  # the highest row of each subset
    ok = bool((m > 0).all() and (g < GROUPS).all() and (cnt == BITS[m]).all() and (top < rows[of]).all()
              and ((sub + 1) * lanes <= SUBS).all()
              and (touches["need"] > 0).all() and (touches["owner"] < workers).all())
    return ok and check_made(packets, at, g, m)


def check_made(packets: np.ndarray, at: np.ndarray, g: np.ndarray, m: np.ndarray) -> bool:
    """Whether every addend the touches read is one this packet's shard writes, so that no touch adds
    another packet's stale scratch: a touch's rows (``at``: its packet · :data:`MAX_SHARDS` + shard,
    ``g``, ``m``: its group and subset, ``(T,)``) are rows the shard converts (``conv``), a subset of
    two rows or more among those made (``used``), and each made subset (:func:`used_subsets`'s
    closure) holds two rows or more, all within the packet and converted, and is one row plus a row
    alone or a subset made before it (``make_sub``)."""
    conv = packets["conv"].astype(np.int64).ravel()  # (packets · MAX_SHARDS,), below 2^rows (check_touches)
    if (np.left_shift(m, GROUP * g) & ~conv[at]).any():
        return False
    words = packets["used"].reshape(-1)  # (packets · MAX_SHARDS · GROUPS · SUBSETS // 64,) of 64 subsets
    w = np.flatnonzero(words)
    bits = np.unpackbits(words[w].view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    i, b = np.nonzero(bits)
    key = w[i] * 64 + b  # ((packet · MAX_SHARDS + shard) · GROUPS + group) · SUBSETS + subset, ascending
    made, gm, mm = key // SUBSETS // GROUPS, key // SUBSETS % GROUPS, key % SUBSETS
    lower = key & (key - 1)  # its lowest row dropped: the rest, made before it or a row alone
    several = BITS[m] >= 2
    need = np.r_[lower[BITS[lower % SUBSETS] >= 2], (at[several] * GROUPS + g[several]) * SUBSETS + m[several]]
    return bool((BITS[mm] >= 2).all()  # within the packet's rows: converted ones are
                and not (np.left_shift(mm, GROUP * gm) & ~conv[made]).any()
                and (words[need // 64] >> (need % 64).astype(np.uint64) & np.uint64(1)).all())
