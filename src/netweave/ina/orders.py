"""Sending orders of the boundary vertices, per worker and per block (switchgnn.txt §3.2, §3.3).

``random`` is the strawman's best-effort upload; ``gamr`` runs the GAMR priority BFS
(:func:`~netweave.ina.gamr.gamr_order`) on the boundary dependency graph of the block — the
cross edges of the block, undirected — and each worker sends its senders in that order. "After
multi-level partitioning is completed, vertices within each partitioned block can also be
reordered" (§3.3): with one block this is GAMR on the whole boundary graph.
"""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError
from ..graph.counting import compact_ids, group_by, undirected_csr
from .boundary import BoundaryRelation
from .gamr import gamr_order
from .memo import memo

ORDERS = ("random", "gamr")


def dependency_order(src: np.ndarray, dst: np.ndarray, order: str, seed: int,
                     start: int | None = None) -> np.ndarray:
    """The senders of the edges ``src -> dst`` (vertex ids) in ``order``: GAMR over the undirected
    dependency graph of the edges (ties and restarts as in :func:`gamr_order`; ``start`` is a vertex
    id and must be one of the senders), or a random permutation drawn with ``seed``."""
    if order not in ORDERS:
        raise NetweaveError(f"unknown order {order!r}; use one of {', '.join(ORDERS)}")
    n = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    if order == "random":
        return np.random.default_rng(seed).permutation(compact_ids(n, src)[0])
    ids, place = compact_ids(n, src, dst)
    indptr, cols = undirected_csr(place[src], place[dst], ids.size)
    is_sender = np.zeros(n, dtype=bool)
    is_sender[src] = True
    root = None
    if start is not None:
        if not (0 <= start < n and is_sender[start]):
            raise NetweaveError(f"start vertex {start} is not a boundary vertex of this graph and partition")
        root = int(place[start])
    visit = ids[gamr_order(indptr, cols, start=root)]
    return visit[is_sender[visit]]


def block_orders(rel: BoundaryRelation, block: np.ndarray, order: str, seed: int = 0,
                 start: int | None = None) -> np.ndarray:
    """``(C,)`` position of every cross edge's sender in its block's sending order.

    ``block`` ``(C,)`` gives each cross edge's block (all zeros: one block). A sender's edges of one
    block share a position; workers send their own senders by ascending position. GAMR starts at
    ``start`` in the blocks where it is a sender, elsewhere at the highest-degree vertex.
    """
    sender = rel.senders()
    if block.size and block.max() == 0 and start is None:  # one block: the relation is the dependency graph
        if order == "gamr":  # cross edges of an undirected graph are symmetric already
            visit = memo(rel.dst, "gamr", lambda: gamr_order(rel.send_ptr, rel.dst))  # host and strawman alike
            seq = visit[np.diff(rel.send_ptr)[visit] > 0]
        else:
            seq = dependency_order(sender, rel.dst, order, seed)
        rank = np.empty(rel.parts.size, dtype=np.int64)
        rank[seq] = np.arange(seq.size)
        return rank[sender]
    position = np.empty(rel.dst.size, dtype=np.int64)
    for b, edges in enumerate(group_by(block)):
        here = start if start is not None and np.isin(start, sender[edges]) else None
        seq = dependency_order(sender[edges], rel.dst[edges], order, seed + b, here)
        rank = np.empty(rel.parts.size, dtype=np.int64)
        rank[seq] = np.arange(seq.size)
        position[edges] = rank[sender[edges]]
    return position
