"""Build the :class:`~.layer_plan.InaPlan` of one strategy and one explicit blocking (the mechanism
under :func:`~netweave.ina.plan.ina_plan`, whose ``blocking="auto"`` prices several of these, :mod:`.choose`).

Units are built from the boundary relation sorted by (sender, owner, destination): one unicast unit
per (sender, destination worker) for ``host``, one multicast unit per (block, sender) otherwise.
"""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError
from ..graph.counting import counting_argsort, counting_lexsort, run_bounds
from .blocks import Blocks, Bound, destination_blocks, multilevel_blocks
from .boundary import BoundaryRelation
from .forward import forwarded_destinations
from .layer_plan import BLOCKINGS, STRATEGIES, InaPlan
from .memo import memo
from .orders import block_orders


def _csr_by(keys: np.ndarray, size: int) -> np.ndarray:
    ptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=ptr[1:])
    return ptr


def _in_edge_order(block: np.ndarray, dst: np.ndarray, owner: np.ndarray, nb: int, n: int, m: int) -> np.ndarray:
    """Edge ids sorted by (``block``, ``dst``, ``owner`` of the sender), stably: three counting sorts."""
    order = counting_argsort(owner, m)
    order = order[counting_argsort(dst[order], n)]
    return order[counting_argsort(block[order], nb)] if nb > 1 else order


def _ride_along(sender: np.ndarray, keep: np.ndarray, block: np.ndarray, position: np.ndarray):
    """Block and position of the edges not in ``keep``: their sender's first block and its place
    there, so that they go up in a unit the sender sends anyway; a sender with no kept edge goes
    last in block 0 (by id)."""
    n = int(sender.max()) + 1 if sender.size else 0
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    kept = sender[keep]  # ascending: the relation goes by sender
    if kept.size:
        runs = run_bounds(kept)[:-1]
        first[kept[runs]] = np.minimum.reduceat(block[keep], runs)
    place = np.full(n, -1, dtype=np.int64)
    there = keep & (block == first[sender])
    place[sender[there]] = position[there]
    alone = np.unique(sender[~keep & (place[sender] < 0)])
    first[alone] = 0
    place[alone] = (position[keep & (block == 0)].max(initial=-1) + 1) + np.arange(alone.size)
    return first[sender[~keep]], place[sender[~keep]]


def switchgnn_blocks(rel: BoundaryRelation, feature_bytes: int, memory: int | np.ndarray, blocking: str,
                     order: str, seed: int = 0, max_blocks: int | None = None, bound: Bound | None = None) -> Blocks:
    """The blocks of ``blocking`` (:data:`BLOCKINGS`) for ``memory`` (bytes, or ``(C,)`` per cross edge).

    * ``paper``: multi-level METIS blocks sized by destination demand (§3.3, Figure 10);
    * ``multilevel``: the same, sized by the peak of aggregators alive at once under GAMR order;
    * ``destination``: whole destinations in GAMR opening order, peak-sized;
    * ``hybrid``: METIS at the first level, the cut edges grouped by destination, peak-sized;
    * ``single``: one block, best effort (the strawman's switch with SwitchGNN's order);
    * ``multicast``: one block, every destination forwarded: the switch only multicasts (each
      sender goes up once, one copy down per destination worker) and aggregates nothing.

    Peak sizing assumes the GAMR order; with ``order`` random the blocks are sized by demand.
    More than ``max_blocks`` blocks, or passing ``bound``, raises :class:`~netweave.ina.blocks.TooManyBlocks`.
    """
    if blocking not in BLOCKINGS:
        raise NetweaveError(f"unknown blocking {blocking!r}; use one of {', '.join(BLOCKINGS)}")
    sizing = "peak" if order == "gamr" and blocking != "paper" else "demand"
    if blocking in ("single", "multicast"):
        return Blocks(np.zeros(rel.dst.size, dtype=np.int64), np.zeros(1, dtype=np.int64))
    if blocking == "destination":
        return destination_blocks(rel, feature_bytes, memory, sizing, max_blocks, bound)
    return multilevel_blocks(rel, feature_bytes, memory, seed, sizing, "destination" if blocking == "hybrid" else "metis",
                             max_blocks, bound)


def build_plan(rel: BoundaryRelation, strategy: str, feature_bytes: int, memory_bytes: int | np.ndarray | None,
               order: str, seed: int, start: int | None, edge_memory: np.ndarray | None, blocking: str,
               overlap: bool, max_blocks: int | None, forward: bool, bound: Bound | None) -> InaPlan:
    """Build the :class:`InaPlan` of ``strategy`` on the boundary relation ``rel``; every argument
    explicit (the defaults are :func:`~netweave.ina.plan.ina_plan`'s).

    ``order`` (``random`` | ``gamr``) is each worker's sending order (per block for ``switchgnn``);
    ``memory_bytes`` is the switches' aggregator memory, one int or one per switch (``switchgnn``
    needs a finite one). ``switchgnn`` sizes its blocks to ``edge_memory`` ``(C,)`` when given: per
    cross edge of ``rel``, the smallest memory among the switches that aggregate it
    (:meth:`~netweave.sim.network.SimNetwork.edge_memory`); else to the smallest switch.
    ``blocking`` (:data:`BLOCKINGS`) is how ``switchgnn`` cuts blocks; ``overlap`` double-buffers
    them (each is sized to half the memory; see :attr:`InaPlan.overlap`); ``max_blocks`` stops a
    blocking that needs more, ``bound`` (:class:`~netweave.ina.blocks.Bound`) one that can no
    longer be picked (:class:`~netweave.ina.blocks.TooManyBlocks`). ``forward`` (``switchgnn``)
    lets the switches forward the destinations that gain nothing from an aggregator
    (:func:`~netweave.ina.forward.forwarded_destinations`); only the others are blocked.
    """
    if strategy not in STRATEGIES:
        raise NetweaveError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    if feature_bytes < 1:
        raise NetweaveError(f"feature size {feature_bytes} B must be positive")
    if memory_bytes is not None and np.ndim(memory_bytes) > 0:
        memory_bytes = np.asarray(memory_bytes, dtype=np.int64)
        if memory_bytes.ndim != 1 or memory_bytes.size == 0:
            raise NetweaveError(f"switch memory must be one number or one per switch, got shape {memory_bytes.shape}")
    if memory_bytes is not None and np.min(memory_bytes) < 0:
        raise NetweaveError(f"switch memory {int(np.min(memory_bytes))} B must not be negative")
    m, parts = rel.num_workers, rel.parts
    sender, dst = rel.senders(), rel.dst
    block, levels = np.zeros(dst.size, dtype=np.int64), np.zeros(1, dtype=np.int64)
    forwarded = memo(rel, "forwarded", lambda: forwarded_destinations(rel)) if forward and strategy == "switchgnn" else None
    if strategy == "switchgnn" and blocking == "multicast":
        forwarded = rel.need > 0
    keep = np.ones(dst.size, dtype=bool) if forwarded is None else ~forwarded[dst]
    blocked = rel if forwarded is None else memo(rel, ("kept", blocking == "multicast"), lambda: rel.subset(keep))
    if strategy == "switchgnn":
        if memory_bytes is None:
            raise NetweaveError("switchgnn needs a finite --switch-memory (its blocks are sized to it)")
        sizing = memory_bytes if np.ndim(memory_bytes) == 0 else int(memory_bytes.min())
        sizing = sizing if edge_memory is None else np.asarray(edge_memory, dtype=np.int64)[keep]
        blocks = switchgnn_blocks(blocked, feature_bytes, sizing // 2 if overlap else sizing, blocking, order, seed,
                                  max_blocks, bound)
        if blocks.num_blocks:
            block[keep], levels = blocks.block, blocks.levels
    nb = int(levels.size)
    position = np.zeros(dst.size, dtype=np.int64)
    position[keep] = block_orders(blocked, block[keep], order, seed, start)
    if forwarded is not None:
        block[~keep], position[~keep] = _ride_along(sender, keep, block, position)
    # the relation is sorted by (sender, owner, dst) already: a stable sort by block keeps that
    # (the edge arrays are gathered one at a time, at Reddit's size 0.7 GB each)
    by = counting_argsort(block, nb) if nb > 1 else None
    src_s = sender if by is None else sender[by]
    dst_s = dst if by is None else dst[by]
    block_s = block if by is None else block[by]
    del sender, block
    if strategy == "host":  # one unicast unit per (sender, destination worker)
        owner_s = parts[dst_s]
        starts = run_bounds(block_s, src_s, owner_s)
        to = owner_s[starts[:-1]]
        del owner_s
    else:  # one multicast unit per (block, sender)
        starts = run_bounds(block_s, src_s)
        to = np.full(starts.size - 1, -1, dtype=np.int64)
    lo, hi = starts[:-1], starts[1:]
    host = parts[src_s[lo]]
    unit_key = host * nb + block_s[lo]
    send = counting_lexsort((to + 1, position[lo if by is None else by[lo]], unit_key))
    del position, by
    in_edges = _in_edge_order(block_s, dst_s, parts[src_s], nb, rel.parts.size, m)
    dstarts = run_bounds(block_s[in_edges], dst_s[in_edges])
    dlo, dhi = dstarts[:-1], dstarts[1:]
    dest_v = dst_s[in_edges[dlo]]
    dest_key = parts[dest_v] * nb + block_s[in_edges[dlo]]
    dorder = np.argsort(dest_key, kind="stable")
    return InaPlan(strategy, m, nb, int(feature_bytes), memory_bytes, parts,
                   src_s, dst_s, block_s, lo[send], hi[send], to[send], _csr_by(unit_key, m * nb),
                   in_edges, dest_v[dorder], dlo[dorder], dhi[dorder], _csr_by(dest_key, m * nb), levels,
                   overlap and nb > 1, forwarded)
