"""A layer's :class:`~netweave.ina.plan.InaPlan` (its arrays, :mod:`.plans`) as the kernel data
plane's tables (``bpf/gnn_switch.bpf.c``) and as what each worker expects of it (pure numpy,
testable without root).

**Aggregators** (switchgnn.txt §3.3, §4): 128 bytes each, 16 int64 lanes (:mod:`.fixed`); the
switch's memory holds ``capacity = memory_bytes // 128`` of them (half per parity with overlapped
blocks: :attr:`~netweave.ina.plan.InaPlan.overlap`). A map entry holds 32 aggregators under one lock (a full chunk's cell).
A destination of width ``dim`` takes :func:`footprint` aggregators: one entry per full chunk of
:data:`VALUES` values, and for the last, partial chunk a power of two of aggregators (so that no
cell straddles an entry). In each block the ``K`` aggregated destinations (the plan's order, ``p``
their position) take entries ``p · full + c`` for their full chunks, and the partial cells are packed
after them from aggregator ``K · full · 32``: placed statically, as the plan sized the blocks to the
memory (the job plans with :func:`footprint` aggregators per destination). A destination that does not fit (a switch smaller than
the plan assumed) is *bypassed*, like one the plan forwards (``plan.forward``): its contributions
go to the owner as copies and the owner sums them (the host path).

A packet carries one *chunk* of a row (:data:`VALUES` values); a destination's chunk ``c`` is a
*cell*: its aggregators from ``c · VALUES / 16``, its own count; a complete cell's sum goes down
as one packet.

**Several rows a packet** (beyond the paper, which sends a row a packet): where a row is one chunk,
a UNIT packet carries up to :func:`rows_per_packet` consecutive units of one sender and block with
one copy mask (:func:`unit_packets`): a packet's fixed costs (a system call's share, the UDP and
HTB path, the switch's parse, deduplication and copies) are paid once for them. Down, a pinned
switch (no locks) holds a shard's complete sums per owner and sends up to :func:`rows_per_packet`
of them as one SUM packet, or fewer once the owner's last cell of the block on that shard is
complete (:attr:`SwitchTables.owed`, :func:`sums_owed`) or a worker's END of the block passes
(every shard's); an unpinned one sends a sum a packet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .fixed import AGGREGATOR_BYTES, LANES, frac_bits
from .plans import edge_ranges

VALUES = 512  # float32 values per packet (bpf: VALUES)
ENTRY_AGGS = VALUES // LANES  # aggregators per map entry: one full chunk's cell (bpf: ENTRY_AGGS)
MAX_CHUNKS = 8  # chunks per row: rows up to 4096 values (bpf: MAX_CHUNKS)
MAX_WORKERS = 64
MAX_LAYERS = 8
MAX_BLOCKS = 4096  # the stamp holds 12 bits of block (bpf: stamp_of)
MAX_SHARDS = 8  # CPUs the aggregators are spread over (bpf: MAX_SHARDS)

UNIT = np.dtype([("copy_mask", "<u8"), ("block", "<u4"), ("sender", "<u4"), ("pk", "<u4"), ("pad", "<u4")])
LAYER = np.dtype([(k, "<u4") for k in ("unit_base", "dim", "chunks", "full", "units", "blocks", "frac", "frac_back",
                                       "part", "owed_base", "packet_base", "packets", "touch_base", "touches")])
NO_PACKET = 0xFFFFFFFF  # a unit's ``pk`` where no UNIT packet begins with it


def chunks_of(dim: int) -> int:
    return max(1, math.ceil(dim / VALUES))


def cell_shape(dim: int) -> tuple[int, int]:
    """``(full, part)``: a row's full chunks (:data:`ENTRY_AGGS` aggregators each) and the
    aggregators of its last, partial chunk rounded up to a power of two (0 when there is none), so
    that no cell straddles a map entry."""
    full, rest = divmod(dim, VALUES)
    part = 0 if rest == 0 else 1 << (math.ceil(rest / LANES) - 1).bit_length()
    return full, part


def footprint(dim: int) -> int:
    """Aggregators (128 bytes each) one destination of width ``dim`` takes."""
    full, part = cell_shape(dim)
    return full * ENTRY_AGGS + part


def rows_per_packet(dim: int) -> int:
    """Units of ``dim`` values a UNIT packet carries: as many as fit :data:`VALUES` values when each
    row starts at an aggregator (the switch converts them into 16-lane-aligned rows: ``rows ·
    16 · ⌈dim / 16⌉ ≤ VALUES``); 1 for rows of several chunks."""
    if dim > VALUES:
        return 1
    return VALUES // (LANES * math.ceil(dim / LANES))


def unit_packets(masks: np.ndarray, per: int) -> tuple[np.ndarray, np.ndarray]:
    """``(first, rows)``: the UNIT packets of one sender's consecutive units of one block whose copy
    masks are ``masks`` ``(U,)``: runs of equal masks, cut every ``per`` units; ``first`` indexes
    ``masks``."""
    n = masks.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    run = np.flatnonzero(np.r_[True, masks[1:] != masks[:-1]])
    at = np.arange(n) - np.repeat(run, np.diff(np.r_[run, n]))  # position within its run
    first = np.flatnonzero(at % per == 0)
    return first, np.diff(np.r_[first, n])


def copy_masks(p: dict[str, np.ndarray], v: "LayerView") -> np.ndarray:
    """``(units,)`` uint64: per unit of plan ``p``, a bit per worker that sums one of its
    destinations itself (forwarded or bypassed) and so gets the unit as a COPY."""
    nu = p["unit_lo"].size
    mask = np.zeros(nu, np.uint64)
    if nu:
        ce, ue = edge_ranges(p["unit_lo"], p["unit_hi"])
        k = v.slot_of_edge[ce]
        bits = np.where(v.copy[k], np.left_shift(np.uint64(1), v.owner[k].astype(np.uint64)), np.uint64(0))
        np.bitwise_or.at(mask, ue, bits.astype(np.uint64))
    return mask


def region_of(memory_bytes: int, overlap: bool) -> int:
    """Map entries (of :data:`ENTRY_AGGS` aggregators) per parity."""
    entries = memory_bytes // (AGGREGATOR_BYTES * ENTRY_AGGS)
    return entries // 2 if overlap else entries


@dataclass(frozen=True)
class LayerView:
    """One layer's plan indexed per destination slot ``k`` (the plan's ``dest_*`` order).

    Attributes:
        dim, chunks, per_dest: row width, chunks per row, aggregators per destination
        (:func:`footprint`); full, part: :func:`cell_shape`;
        pos ``(K,)``: the slot's position in its block; block ``(K,)``; need ``(K,)``: its cross
        edges in the block (contributions); owner ``(K,)``: its worker; copy ``(K,)``: forwarded or
        bypassed (summed by the owner); slot_of_edge ``(C,)``: the slot of each plan edge; pbase
        ``(K,)``: the first aggregator of its block's partial cells.
    """

    dim: int
    chunks: int
    per_dest: int
    full: int
    part: int
    pos: np.ndarray
    block: np.ndarray
    need: np.ndarray
    owner: np.ndarray
    copy: np.ndarray
    slot_of_edge: np.ndarray
    pbase: np.ndarray


def layer_view(p: dict[str, np.ndarray], memory_bytes: int, overlap: bool = False) -> LayerView:
    """The slots of plan ``p`` as the kernel data plane places them (see the module docstring)."""
    dim, k, B = int(p["dim"]), p["dest_v"].size, int(p["num_blocks"])
    if dim < 1 or dim > VALUES * MAX_CHUNKS:
        raise ValueError(f"a row of {dim} values: the kernel data plane takes 1..{VALUES * MAX_CHUNKS}")
    if B > MAX_BLOCKS or int(p["num_workers"]) > MAX_WORKERS:
        raise ValueError(f"{B} blocks of {int(p['num_workers'])} workers: the kernel data plane takes at most "
                         f"{MAX_BLOCKS} blocks and {MAX_WORKERS} workers")
    edges, which = edge_ranges(p["dest_lo"], p["dest_hi"])
    slot_of_edge = np.empty(p["dst"].size, np.int64)
    slot_of_edge[p["in_edges"][edges]] = which
    need = (p["dest_hi"] - p["dest_lo"]).astype(np.int64)
    block = p["block"][p["in_edges"][p["dest_lo"]]].astype(np.int64) if k else np.zeros(0, np.int64)
    forward = p["forward"][p["dest_v"]].astype(bool)
    pos = np.zeros(k, np.int64)  # among the block's aggregated destinations (forwarded ones take none)
    agg = np.flatnonzero(~forward)
    order = agg[np.argsort(block[agg], kind="stable")]
    starts = np.searchsorted(block[order], np.arange(B))
    pos[order] = np.arange(order.size) - starts[block[order]]
    full, part = cell_shape(dim)
    per_dest = footprint(dim)
    fit = region_of(memory_bytes, overlap) * ENTRY_AGGS // per_dest  # destinations a block can aggregate
    copy = forward | (pos >= fit)
    aggregated = np.bincount(block[~copy], minlength=B) if k else np.zeros(B, np.int64)
    pbase = aggregated[block] * full * ENTRY_AGGS if k else np.zeros(0, np.int64)
    return LayerView(dim, chunks_of(dim), per_dest, full, part, pos, block, need,
                     p["parts"][p["dest_v"]].astype(np.int64), copy.astype(bool), slot_of_edge, pbase)


@dataclass
class SwitchTables:
    """What ``bpf/gnn_switch.bpf.c`` reads: ``layers`` (:data:`LAYER`), ``units`` (:data:`UNIT`;
    ``pk``: the UNIT packet it begins, or :data:`NO_PACKET`), ``packets`` and ``touches``
    (:mod:`.touches`: what each packet adds into which cells, shard by shard), ``owed`` (uint32:
    :func:`sums_owed` of every layer, layer ``i``'s from block ``layers[i]["owed_base"]``), and the
    sizes of its maps (``entries``: the memory's, in entries of :data:`ENTRY_AGGS` aggregators;
    ``region``: entries per parity; ``seen``: a stamp per unit chunk); ``shards``: the CPUs the
    touches are cut for (:func:`edge_shard`)."""

    layers: np.ndarray
    units: np.ndarray
    packets: np.ndarray
    touches: np.ndarray
    owed: np.ndarray
    entries: int
    region: int
    overlap: bool
    shards: int = 1

    def check(self, workers: int) -> None:
        """Refuse tables the program would misread (it checks the packets, these are the plan's)."""
        from .touches import check_touches

        for i, L in enumerate(self.layers):
            u = self.units[L["unit_base"]:L["unit_base"] + L["units"]]
            ok = (u.size == L["units"] and (u["sender"] < workers).all() and (u["block"] < L["blocks"]).all()
                  and ((u["pk"] < L["packets"]) | (u["pk"] == NO_PACKET)).all() and L["chunks"] <= MAX_CHUNKS
                  and check_touches(self.packets[L["packet_base"]:L["packet_base"] + L["packets"]],
                                    self.touches[L["touch_base"]:L["touch_base"] + L["touches"]],
                                    int(L["units"]), int(L["dim"]), workers))
            if not ok:
                raise ValueError(f"layer {i}'s tables are inconsistent with {workers} workers")
        first = np.cumsum(np.r_[0, self.layers["blocks"][:-1]]) if self.layers.size else np.zeros(0)
        if (self.layers["owed_base"] != first).any() or \
                self.owed.size != int(self.layers["blocks"].sum()) * self.shards * workers:
            raise ValueError(f"{self.owed.size} sums owed: not a count per block, shard and worker of {workers}")

    @property
    def seen(self) -> int:
        return max(1, self.units.size * MAX_CHUNKS)


def entry_of(v: LayerView, k: np.ndarray) -> np.ndarray:
    """The map entry (of the layer's region, ``ENTRY_AGGS`` aggregators each) that holds the cells of
    slots ``k``: that of its partial cell, which neighbouring destinations share, else its position
    (its full chunks' entries are its own)."""
    return (v.pbase[k] + v.pos[k] * v.part) // ENTRY_AGGS if v.part else v.pos[k]


def entry_shards(v: LayerView, shards: int) -> np.ndarray:
    """``(entries,)``: the shard (``0..shards-1``) whose CPU adds into each map entry of the layer —
    contiguous ranges of entries, cut where the cells aggregated into them (a destination's
    ``need`` each; summed over the blocks, which reuse the entries) reach ``s / shards`` of the
    layer's, each entry going to the range its middle cell falls in. So the shards add nearly
    equal numbers of cells, an entry (its lock, its cache lines) stays on one CPU through a layer's
    exchanges, and two shards' entries meet at ``shards - 1`` places only. An entry may change CPU
    from one layer to the next: no unit of an exchange is sent before every worker's DONE of the
    one before (NEXT), and each walk first checks its block is not done (the floor).

    Beyond the paper. Runs of 64 entries dealt round robin, as before, left the busiest of 8 shards
    1.40–3.14× the mean's cells on amazon_cs and reddit-like:0.02, these ranges 1.00–1.09×
    (``benchmarks/bench_shard_balance.py``): the shard that adds most bounds the exchange. Entry by
    entry, two shards' neighbouring entries had made a cell cost 131–171 ns instead of 85–98, the
    prefetchers reaching into the other CPU's lines."""
    agg = np.flatnonzero(~v.copy)
    entry = entry_of(v, agg)
    load = np.bincount(entry, weights=v.need[agg], minlength=int(entry.max()) + 1 if entry.size else 0)
    total = load.sum()
    if total == 0:
        return np.zeros(load.size, np.int64)
    middle = np.cumsum(load) - load / 2
    return np.minimum(shards - 1, (shards * middle / total).astype(np.int64))


def edge_shard(v: LayerView, k: np.ndarray, shards: int, table: np.ndarray | None = None) -> np.ndarray:
    """The shard (``0..shards-1``) whose CPU adds into the cells of the plan edges whose slots are
    ``k``: their map entry's (``table``, an entry's shard; :func:`entry_shards` unless given);
    ``shards`` for an edge not aggregated here (forwarded or bypassed: the owner sums its copies),
    which no shard walks."""
    agg = ~v.copy[k]
    out = np.full(k.shape, shards, np.int64)
    out[agg] = (entry_shards(v, shards) if table is None else table)[entry_of(v, k[agg])]
    return out


def unit_shards(p: dict[str, np.ndarray], v: LayerView, shards: int, table: np.ndarray | None = None) -> np.ndarray:
    """``(U,)`` int64: per unit of plan ``p``, the shards that walk one of its edges
    (:func:`edge_shard`, ``table`` as there; bit ``s``: shard ``s``): those a switch of ``shards``
    hands it to."""
    ce, ue = edge_ranges(p["unit_lo"], p["unit_hi"])
    sh = edge_shard(v, v.slot_of_edge[ce], shards, table)
    walked = sh < shards
    out = np.zeros(p["unit_lo"].size, np.int64)
    np.bitwise_or.at(out, ue[walked], np.left_shift(1, sh[walked]))
    return out


def plan_packets(p: dict[str, np.ndarray], v: LayerView, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, rows)``: every UNIT packet of plan ``p`` as the workers pack them
    (:func:`unit_packets` per sender and block, ``masks`` the units' :func:`copy_masks`), ``first``
    indexing ``p``'s units."""
    per, ptr = rows_per_packet(v.dim), p["unit_ptr"]
    parts = [unit_packets(masks[ptr[g]:ptr[g + 1]], per) for g in range(ptr.size - 1)]  # (sender, block) groups
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (np.concatenate([ptr[g] + f for g, (f, _) in enumerate(parts)]),
            np.concatenate([r for _, r in parts]))


def packet_shards(first: np.ndarray, units: np.ndarray) -> np.ndarray:
    """``(Q,)``: the shards each UNIT packet is handed to, the union of its units' (``units``:
    :func:`unit_shards`; the packets' ``first`` units from :func:`plan_packets`)."""
    return np.bitwise_or.reduceat(units, first) if first.size else np.zeros(0, np.int64)


def popcount(x: np.ndarray) -> np.ndarray:
    """``(N,)`` int64: the bits set in each of ``x`` (``(N,)`` non-negative integers below 2⁶⁴)."""
    bits = np.unpackbits(np.ascontiguousarray(x, "<u8").view(np.uint8).reshape(-1, 8), axis=1)
    return bits.sum(axis=1).astype(np.int64)


def sums_owed(v: LayerView, blocks: int, shards: int, workers: int, table: np.ndarray | None = None) -> np.ndarray:
    """``(blocks · shards · workers,)`` uint32: per block ``b``, shard ``s`` and owner ``o`` (at
    ``(b · shards + s) · workers + o``), the sums the switch sends ``o``: its destinations of block
    ``b`` aggregated on shard ``s`` (:func:`edge_shard`), a sum each (a row is one chunk wherever sums
    are held: ``bpf/gnn_switch.bpf.c``, hold_sum). The sum that makes the count sends what is held.
    ``table``: as :func:`edge_shard`'s."""
    agg = np.flatnonzero(~v.copy)
    sh = edge_shard(v, agg, shards, table)
    key = (v.block[agg] * shards + sh) * workers + v.owner[agg]
    return np.bincount(key, minlength=blocks * shards * workers).astype(np.uint32)


def switch_tables(plans: list[dict[str, np.ndarray]], memory_bytes: int, overlap: bool = False,
                  shards: int = 1) -> SwitchTables:
    """The tables of every layer's plan (see the module docstring): per unit its sender, block,
    the workers that get a copy and the UNIT packet it begins; per UNIT packet and shard, what it
    adds into which cells (:mod:`.touches`).

    With ``shards`` > 1 (beyond the paper: a switch whose aggregators several CPUs hold, as a
    Tofino's pipelines each hold their own) each map entry is one shard's (:func:`entry_shards`)
    and a packet's touches go shard by shard."""
    if len(plans) > MAX_LAYERS:
        raise ValueError(f"{len(plans)} layers: the kernel data plane takes at most {MAX_LAYERS}")
    if not 1 <= shards <= MAX_SHARDS:
        raise ValueError(f"{shards} shards: the kernel data plane takes 1 to {MAX_SHARDS}")
    from .touches import PACKET, TOUCH, packet_touches

    layers = np.zeros(len(plans), LAYER)
    units, owed, packets, touches = [], [], [], []
    unit_base = owed_base = packet_base = touch_base = 0
    for i, p in enumerate(plans):
        v = layer_view(p, memory_bytes, overlap)
        M, B = int(p["num_workers"]), int(p["num_blocks"])
        nu = p["unit_lo"].size
        u = np.zeros(nu, UNIT)
        hb = np.repeat(np.arange(M * B), np.diff(p["unit_ptr"]))
        u["sender"], u["block"] = hb // B, hb % B
        u["copy_mask"] = copy_masks(p, v)
        table = entry_shards(v, shards)  # an entry's shard: the same for the touches and the sums owed
        first, rows = plan_packets(p, v, u["copy_mask"])
        pk, tch = packet_touches(p, v, first, rows, shards, table)
        u["pk"] = NO_PACKET
        u["pk"][first] = np.arange(first.size)
        layers[i] = (unit_base, v.dim, v.chunks, v.full, nu, B, frac_bits(0), frac_bits(1), v.part,
                     owed_base, packet_base, pk.size, touch_base, tch.size)
        units.append(u)
        owed.append(sums_owed(v, B, shards, M, table))
        packets.append(pk)
        touches.append(tch)
        unit_base += nu
        owed_base += B
        packet_base += pk.size
        touch_base += tch.size
    region = region_of(memory_bytes, overlap)
    return SwitchTables(layers, np.concatenate(units) if units else np.zeros(0, UNIT),
                        np.concatenate(packets) if packets else np.zeros(0, PACKET),
                        np.concatenate(touches) if touches else np.zeros(0, TOUCH),
                        np.concatenate(owed) if owed else np.zeros(0, np.uint32),
                        max(1, region * (2 if overlap else 1)), region, overlap, shards)
