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

import numpy as np

from ..errors import NetweaveError
from ..graph.graph import sorted_unique
from ..partition.metis import metis_labels
from .boundary import BoundaryRelation
from .strategies import AGGREGATOR_BYTES


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
    present = np.zeros(n, dtype=bool)
    present[src] = True
    present[dst] = True
    ids = np.flatnonzero(present)
    compact = np.zeros(n, dtype=np.int64)
    compact[ids] = np.arange(ids.size)
    a, b = compact[src], compact[dst]
    key = sorted_unique(np.concatenate([a * ids.size + b, b * ids.size + a]))
    rows, cols = np.divmod(key, ids.size)
    indptr = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=ids.size), out=indptr[1:])
    weight = np.zeros(ids.size, dtype=np.int64)
    weight[b] = chunks
    labels = metis_labels(indptr, cols, parts_needed, seed, vertex_weights=np.maximum(weight, 1))
    return labels[a], labels[b]


def multilevel_blocks(rel: BoundaryRelation, feature_bytes: int, memory_bytes: int | np.ndarray,
                      seed: int = 0) -> Blocks:
    """Split the cross edges of ``rel`` into blocks that fit ``memory_bytes`` of aggregators: one
    int (every switch), or ``(C,)`` per cross edge of ``rel``, the smallest aggregator memory among
    the switches the edge is aggregated at; every block then holds edges of one budget and fits it."""
    chunks = -(-feature_bytes // AGGREGATOR_BYTES)
    sender, n = rel.senders(), rel.parts.size
    per_edge = np.ndim(memory_bytes) > 0
    if per_edge:
        budget = np.asarray(memory_bytes, dtype=np.int64)
        if budget.shape != rel.dst.shape:
            raise NetweaveError(f"{budget.size} per-edge switch memories for {rel.dst.size} cross edges; give one per edge")
        budget = budget // AGGREGATOR_BYTES
        smallest = int(budget.min(initial=np.iinfo(np.int64).max))
        if chunks > smallest:
            raise NetweaveError(f"one {feature_bytes}-byte feature needs {chunks} aggregators but the smallest switch "
                                f"on its path has {smallest} ({smallest * AGGREGATOR_BYTES} B); give that switch more "
                                "memory or use --strategy host")
    else:
        smallest = int(memory_bytes) // AGGREGATOR_BYTES
        if chunks > smallest:
            raise NetweaveError(f"one {feature_bytes}-byte feature needs {chunks} aggregators but the switch has "
                                f"{smallest} ({memory_bytes} B); give the switch more memory or use --strategy host")
    block = np.full(rel.dst.size, -1, dtype=np.int64)
    levels: list[int] = []
    # edges of one budget are partitioned together (one group when every switch has the same memory)
    work = [(np.flatnonzero(budget == c), 0) for c in np.unique(budget)] if per_edge and budget.size else [(np.arange(rel.dst.size), 0)]
    while work:
        edges, level = work.pop(0)
        capacity = int(budget[edges[0]]) if per_edge and edges.size else smallest
        demand = _demand(rel.dst[edges], chunks, n)
        if demand <= capacity:
            block[edges] = len(levels)
            levels.append(level)
            continue
        k = -(-demand * 20 // (19 * capacity))  # 5 % slack: METIS balances to ~3 %, so parts rarely need a re-split
        side_u, side_v = _split(sender[edges], rel.dst[edges], k, chunks, seed + level, n)
        inside = side_u == side_v
        stuck = not inside.any() or (inside.all() and np.unique(side_v).size == 1)
        if stuck:  # METIS made no progress: group the edges by destination instead
            side_v = _by_destination(rel.dst[edges], capacity // chunks)
            inside = np.ones(edges.size, dtype=bool)
        for part in np.unique(side_v[inside]):
            work.append((edges[inside & (side_v == part)], level))
        if (~inside).any():
            work.append((edges[~inside], level + 1))
    return Blocks(block, np.asarray(levels, dtype=np.int64))


def _by_destination(dst: np.ndarray, per_block: int) -> np.ndarray:
    """Labels grouping edges by destination, ``per_block`` destinations a group."""
    return np.searchsorted(sorted_unique(dst), dst) // per_block
