"""SwitchGNN's multi-level partitioning of the boundary into aggregator-sized blocks (switchgnn.txt §3.3).

The cross-partition edges ``u -> v`` form the boundary dependency graph. A block is a set of these
edges whose destinations fit the switch at once: ``|destinations| * ceil(F / 128) <= aggregators``.
A set that does not fit is split by METIS (vertex weight = the aggregators a vertex needs as a
destination) into ``ceil(demand / (0.95 capacity))`` parts (the paper gives no k; 5 % slack over
METIS's ~3 % imbalance means parts rarely need another split, which gives fewer blocks); the edges inside a part become candidate
blocks and the cut edges form a new graph that is partitioned again, level after level, until
everything fits (Figure 10). Every cross edge ends in exactly one block. A sender appearing in
several blocks is sent once per block; a destination in several blocks receives one partial sum
per block and its host adds them. Blocks run one after another (the next starts when every host
has received the current block's results).

Switches may differ in memory (a leaf-spine's leaves and spines, each with its own
``aggregator_memory``; the paper has one switch). A block must then fit the smallest memory among
the switches its edges are aggregated at: every edge carries that budget (``memory_bytes`` per
edge, see :meth:`~netweave.sim.network.SimNetwork.edge_memory`). Departing from the paper, the
edges are first grouped by budget and each group is partitioned on its own, so edges that avoid a
small switch are not cut into its small blocks (fewer blocks, less traffic); a destination with
edges in two groups gets one partial sum from each. With one memory for every switch there is one group: the paper's rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import NetweaveError
from ..graph.counting import compact_ids, counting_argsort, group_by, undirected_csr
from ..partition.metis import metis_labels
from .boundary import BoundaryRelation
from .memo import content, memo
from .occupancy import edge_set_peak, worker_rank
from .orders import dependency_order
from .strategies import AGGREGATOR_BYTES


class TooManyBlocks(Exception):
    """A blocking stopped because it can no longer be picked (the cost model's pruning,
    :mod:`~netweave.ina.choose`): it needed more than its ``max_blocks``, or its :class:`Bound` was passed."""


@dataclass(frozen=True, eq=False)
class Bound:
    """A lower bound on the predicted completion of a blocking still being cut (the cost model of
    :mod:`~netweave.ina.choose`), to stop one that can no longer be picked.

    Every edge set, finished or still to be cut, becomes at least one block, and each of its senders
    goes up in at least one of them, so a set costs each host ``h`` at least ``send_s[h]`` ``(M,)``
    (seconds per message up its link) per distinct sender it owns. With barriers, blocks run one
    after another: completion ``>= Σ_sets max_h T_h + (sets - 1) gap_s + latency_s``; overlapped, a
    host still sends its blocks one after another and block ``b + 2`` waits a gap after block ``b``:
    ``>= max(max_h Σ_sets T_h, ⌊(sets - 1) / 2⌋ gap_s) + latency_s``. A blocking
    whose bound exceeds ``best_s`` by more than the choice's 1 % tie cannot be picked."""

    parts: np.ndarray
    send_s: np.ndarray
    gap_s: float
    latency_s: float
    best_s: float
    overlap: bool

    def sending_s(self, sender: np.ndarray) -> np.ndarray:
        """``(M,)`` each host's time to send the distinct senders of one set (``sender`` ascending)."""
        first = np.ones(sender.size, dtype=bool)
        np.not_equal(sender[1:], sender[:-1], out=first[1:])
        return np.bincount(self.parts[sender[first]], minlength=self.send_s.size) * self.send_s

    def completion_s(self, sets: list[np.ndarray]) -> float:
        """The bound (s) for edge sets of ``(M,)`` sending times (:meth:`sending_s`) each."""
        if not sets:
            return 0.0
        times = np.asarray(sets)
        if self.overlap:  # and block b + 2 starts a gap after block b is complete
            return float(max(times.sum(axis=0).max(), (len(sets) - 1) // 2 * self.gap_s) + self.latency_s)
        return float(times.max(axis=1).sum() + (len(sets) - 1) * self.gap_s + self.latency_s)

    def passed(self, sets: list[np.ndarray]) -> bool:
        """Whether the sets already put the completion beyond ``best_s`` (and its 1 % tie)."""
        return bool(sets) and np.isfinite(self.best_s) and self.completion_s(sets) > self.best_s * 1.01


@dataclass(frozen=True, eq=False)
class Blocks:
    """``block`` ``(C,)``: the block (0..B-1, in sending order) of every cross edge of the relation
    (edge ``e`` is ``sender[e] -> rel.dst[e]``); ``levels`` ``(B,)``: the partitioning level each came from."""

    block: np.ndarray
    levels: np.ndarray

    @property
    def num_blocks(self) -> int:
        return int(self.levels.size)


def _demand(dst: np.ndarray, chunks: int, n: int) -> int:
    return int(np.count_nonzero(np.bincount(dst, minlength=n))) * chunks


def _split(src: np.ndarray, dst: np.ndarray, parts_needed: int, chunks: int, seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """METIS labels of the edges' endpoints (compact ids), weighting destinations by their aggregators."""
    ids, place = compact_ids(n, src, dst)
    a, b = place[src], place[dst]
    indptr, cols = undirected_csr(a, b, ids.size)
    weight = np.zeros(ids.size, dtype=np.int64)
    weight[b] = chunks
    labels = metis_labels(indptr, cols, parts_needed, seed, vertex_weights=np.maximum(weight, 1))
    return labels[a], labels[b]


def _order_peak(sender: np.ndarray, dst: np.ndarray, parts: np.ndarray, chunks: int) -> int:
    """Peak aggregators of the edges ``sender -> dst`` sent as one block in their GAMR order."""
    seq = dependency_order(sender, dst, "gamr", 0)
    rank = np.empty(parts.size, dtype=np.int64)
    rank[seq] = np.arange(seq.size)
    return edge_set_peak(sender, dst, parts, rank[sender], chunks)


class _Sizer:
    """Whether an edge set fits ``capacity`` aggregators: by its destinations' total demand (the
    paper, §3.3) or, with ``peak``, by the most aggregators open at once under its GAMR order
    (beyond the paper: an aggregator lives only from its first to its last contribution)."""

    def __init__(self, rel: BoundaryRelation, chunks: int, peak: bool):
        self.sender, self.dst, self.parts = rel.senders(), rel.dst, rel.parts
        self.chunks, self.peak, self.n = chunks, peak, rel.parts.size

    def size(self, edges: np.ndarray, capacity: int) -> int:
        """Aggregators ``edges`` need (demand, or the GAMR peak when the demand does not fit)."""
        demand = _demand(self.dst[edges], self.chunks, self.n)
        if demand <= capacity or not self.peak:
            return demand
        return memo(self.dst, lambda: ("peak", self.chunks, content(edges)),
                    lambda: _order_peak(self.sender[edges], self.dst[edges], self.parts, self.chunks))


SIZINGS = ("demand", "peak")


def _check_memory(rel: BoundaryRelation, feature_bytes: int, memory_bytes) -> tuple[int, np.ndarray | None, int]:
    """``chunks`` per destination, the per-edge budget in aggregators (``None``: one memory) and the smallest."""
    chunks = -(-feature_bytes // AGGREGATOR_BYTES)
    if np.ndim(memory_bytes) > 0:
        budget = np.asarray(memory_bytes, dtype=np.int64)
        if budget.shape != rel.dst.shape:
            raise NetweaveError(f"{budget.size} per-edge switch memories for {rel.dst.size} cross edges; give one per edge")
        budget = budget // AGGREGATOR_BYTES
        smallest = int(budget.min(initial=np.iinfo(np.int64).max))
        if chunks > smallest:
            raise NetweaveError(f"one {feature_bytes}-byte feature needs {chunks} aggregators but the smallest switch "
                                f"on its path has {smallest} ({smallest * AGGREGATOR_BYTES} B); give that switch more "
                                "memory or use --strategy host")
        return chunks, budget, smallest
    smallest = int(memory_bytes) // AGGREGATOR_BYTES
    if chunks > smallest:
        raise NetweaveError(f"one {feature_bytes}-byte feature needs {chunks} aggregators but the switch has "
                            f"{smallest} ({memory_bytes} B); give the switch more memory or use --strategy host")
    return chunks, None, smallest


def _budget_groups(rel: BoundaryRelation, budget: np.ndarray | None, smallest: int) -> list[tuple[np.ndarray, int]]:
    """Edges of one budget are blocked together (one group when every switch has the same memory)."""
    if budget is not None and budget.size:
        return [(np.flatnonzero(budget == c), int(c)) for c in np.unique(budget)]
    return [(np.arange(rel.dst.size), smallest)]


def multilevel_blocks(rel: BoundaryRelation, feature_bytes: int, memory_bytes: int | np.ndarray,
                      seed: int = 0, sizing: str = "demand", cut: str = "metis", max_blocks: int | None = None,
                      bound: Bound | None = None) -> Blocks:
    """Split the cross edges of ``rel`` into blocks that fit ``memory_bytes`` of aggregators: one
    int (every switch), or ``(C,)`` per cross edge of ``rel``, the smallest aggregator memory among
    the switches the edge is aggregated at; every block then holds edges of one budget and fits it.

    ``sizing`` (:data:`SIZINGS`): a set fits when its destination demand does (the paper) or when
    its GAMR-order peak does. ``cut``: the cut edges of a level are partitioned again by METIS (the
    paper's Figure 10) or, ``destination``, grouped by destination in GAMR order (the hybrid).
    More than ``max_blocks`` blocks, or passing ``bound`` after a split, raises :class:`TooManyBlocks`."""
    if sizing not in SIZINGS:
        raise NetweaveError(f"unknown block sizing {sizing!r}; use one of {', '.join(SIZINGS)}")
    chunks, budget, smallest = _check_memory(rel, feature_bytes, memory_bytes)
    sizer = _Sizer(rel, chunks, sizing == "peak")
    sender, n = sizer.sender, rel.parts.size
    block = np.full(rel.dst.size, -1, dtype=np.int64)
    levels: list[int] = []
    # every edge set (ascending edge ids: senders ascending) with its level and, for ``bound``, its
    # hosts' (M,) sending times
    timed = (lambda e: None) if bound is None else (lambda e: bound.sending_s(sender[e]))
    work = [(edges, 0, timed(edges)) for edges, _ in _budget_groups(rel, budget, smallest)]
    done: list[np.ndarray] = []  # the finished blocks' sending times
    while work:
        edges, level, times = work.pop(0)
        capacity = int(budget[edges[0]]) if budget is not None and edges.size else smallest
        if max_blocks is not None and len(levels) > max_blocks:
            raise TooManyBlocks(len(levels))
        if level > 0 and cut == "destination":
            for group in _destination_groups(sizer, edges, capacity, max_blocks, bound, done):
                block[group] = len(levels)
                levels.append(level)
            continue
        need = sizer.size(edges, capacity)
        if need <= capacity:
            block[edges] = len(levels)
            levels.append(level)
            done.append(times)
            continue
        k = -(-need * 20 // (19 * capacity))  # 5 % slack: METIS balances to ~3 %, so parts rarely need a re-split
        side_u, side_v = memo(rel.dst, lambda: ("split", max(k, 2), chunks, seed + level, content(edges)),
                              partial(_split, sender[edges], rel.dst[edges], max(k, 2), chunks, seed + level, n))
        inside = side_u == side_v
        stuck = not inside.any() or (inside.all() and np.unique(side_v).size == 1)
        if stuck:  # METIS made no progress: group the edges by destination instead
            side_v = _by_destination(rel.dst[edges], capacity // chunks)
            inside = np.ones(edges.size, dtype=bool)
        work.extend((part, level, timed(part)) for part in group_by(side_v[inside], edges[inside]))
        if not inside.all():
            cut_edges = edges[~inside]
            work.append((cut_edges, level + 1, timed(cut_edges)))
        if bound is not None and bound.passed(done + [t for _, _, t in work]):
            raise TooManyBlocks(len(levels) + len(work))
    if max_blocks is not None and len(levels) > max_blocks:
        raise TooManyBlocks(len(levels))
    return Blocks(block, np.asarray(levels, dtype=np.int64))


def destination_blocks(rel: BoundaryRelation, feature_bytes: int, memory_bytes: int | np.ndarray,
                       sizing: str = "peak", max_blocks: int | None = None, bound: Bound | None = None) -> Blocks:
    """Blocks of whole destinations (beyond the paper): destinations in the order their aggregators
    open under GAMR, cut into consecutive groups that fit (by demand, or by GAMR-order peak). More
    than ``max_blocks`` blocks, or passing ``bound``, raises :class:`TooManyBlocks`."""
    if sizing not in SIZINGS:
        raise NetweaveError(f"unknown block sizing {sizing!r}; use one of {', '.join(SIZINGS)}")
    chunks, budget, smallest = _check_memory(rel, feature_bytes, memory_bytes)
    sizer = _Sizer(rel, chunks, sizing == "peak")
    block = np.full(rel.dst.size, -1, dtype=np.int64)
    nb, done = 0, []
    for edges, capacity in _budget_groups(rel, budget, smallest):
        for group in _destination_groups(sizer, edges, capacity, None if max_blocks is None else max_blocks - nb,
                                         bound, done):
            block[group] = nb
            nb += 1
    return Blocks(block, np.zeros(nb, dtype=np.int64))


def _destination_groups(sizer: _Sizer, edges: np.ndarray, capacity: int, limit: int | None = None,
                        bound: Bound | None = None, done: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """``edges`` as groups of whole destinations, consecutive in GAMR opening order, each fitting
    ``capacity``: as many destinations as the demand allows, grown (doubling, then bisection to an
    eighth of that) while the group's GAMR-order peak fits; a group that cannot take an eighth more
    stays as it is (one trial, where the search would cost four: dense graphs, whose aggregators
    stay open through the block). More than ``limit`` groups raises :class:`TooManyBlocks`, and
    so does ``bound`` passed by the blocks in ``done`` (sending times, extended here) and these groups."""
    if edges.size == 0:
        return []
    sender, dst, parts = sizer.sender[edges], sizer.dst[edges], sizer.parts
    m = int(parts.max()) + 1
    # arrival of every sender in the edges' GAMR order, interleaved over workers; a destination
    # opens at its earliest sender
    seq = dependency_order(sender, dst, "gamr", 0)
    rank = np.empty(parts.size, dtype=np.int64)
    worker = parts[seq]
    rank[seq] = worker_rank(worker, np.arange(seq.size)) * m + worker
    ids, place = compact_ids(parts.size, dst)
    dest = place[dst]
    opens = np.full(ids.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(opens, dest, rank[sender])
    dest_rank = np.empty(ids.size, dtype=np.int64)
    dest_rank[np.argsort(opens, kind="stable")] = np.arange(ids.size)
    by_dest = counting_argsort(dest_rank[dest], ids.size)  # edges, grouped by destination in opening order
    ptr = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(dest_rank[dest], minlength=ids.size), out=ptr[1:])
    per = max(capacity // sizer.chunks, 1)  # destinations that fit by demand
    groups, s = [], 0
    while s < ids.size:
        if limit is not None and len(groups) >= limit:
            raise TooManyBlocks(len(groups))
        good = min(s + per, ids.size)
        if sizer.peak and good < ids.size:
            def fits(e: int) -> bool:
                trial = np.sort(by_dest[ptr[s]:ptr[e]])  # in the relation's (sender, owner, dst) order
                return _order_peak(sender[trial], dst[trial], parts, sizer.chunks) <= capacity

            step = max(per // 8, 1)
            probe = min(good + step, ids.size)
            bad = None if fits(probe) else probe  # on dense graphs not even an eighth more fits: one trial
            while bad is None:  # doubling
                trial = min(s + 2 * (good - s), ids.size)
                if fits(trial):
                    good = trial
                    if good == ids.size:
                        break
                else:
                    bad = trial
            while bad is not None and bad - good > step:  # bisection, to an eighth of the demand fit
                mid = (good + bad) // 2
                good, bad = (mid, bad) if fits(mid) else (good, mid)
        groups.append(edges[by_dest[ptr[s]:ptr[good]]])
        if bound is not None:
            done.append(bound.sending_s(sender[np.sort(by_dest[ptr[s]:ptr[good]])]))
            if bound.passed(done):
                raise TooManyBlocks(len(done))
        s = good
    return groups


def _by_destination(dst: np.ndarray, per_block: int) -> np.ndarray:
    """Labels grouping edges by destination, ``per_block`` destinations a group."""
    return compact_ids(int(dst.max(initial=-1)) + 1, dst)[1][dst] // per_block
