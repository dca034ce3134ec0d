"""Execution tables of a plan: DGCL's ``(d_i, d_j, k, T^s_ij, T^r_ij)`` tuples (dgcl.txt §6.1),
the backward tables, and the non-atomic sub-stages of §6.2.

Forward: in stage ``k``, worker ``d_i`` sends the embeddings ``T^s`` to ``d_j`` and receives ``T^r``
from it. Backward: stages run in reverse (``k' = K + 1 - k``) and send/receive swap, as gradients
flow against the embeddings. Sub-stages: a backward receive table is split so that, within one
sub-stage, a vertex gets its gradient from at most one peer — no atomic accumulation is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .plan import GraphCommPlan


@dataclass(frozen=True, eq=False)
class CommTuple:
    """One batched exchange between ``worker`` and ``peer`` in a stage (and sub-stage).

    ``send`` / ``recv``: sorted global vertex ids ``worker`` sends to / receives from ``peer``.
    """

    worker: int
    peer: int
    stage: int
    send: np.ndarray
    recv: np.ndarray
    substage: int = 0


def _groups(stage, src, dst, vertex, m):
    """``{(stage, src, dst): sorted vertex ids}`` (hops already sorted by these keys); ``{}`` for no hops
    (a graph without edges between parts exchanges nothing)."""
    if stage.size == 0:
        return {}
    key = (stage.astype(np.int64) * m + src) * m + dst
    order = np.lexsort((vertex, key))
    key, vertex = key[order], vertex[order]
    cuts = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    return {(int(key[a] // (m * m)), int(key[a] // m % m), int(key[a] % m)): vertex[a:b]
            for a, b in zip(cuts[:-1], cuts[1:])}


def _tuples(groups: dict) -> list[CommTuple]:
    """Pair the two directions of every (stage, worker, peer) into tuples of both workers."""
    empty = np.zeros(0, dtype=np.int64)
    out = []
    pairs = sorted({(k, min(i, j), max(i, j)) for (k, i, j) in groups})
    for k, a, b in pairs:
        for i, j in ((a, b), (b, a)):
            out.append(CommTuple(i, j, k, groups.get((k, i, j), empty), groups.get((k, j, i), empty)))
    return out


def forward_tables(plan: GraphCommPlan) -> list[CommTuple]:
    """One tuple per (worker, peer, stage) with traffic in either direction, by stage."""
    return _tuples(_groups(plan.hop_stage, plan.hop_src, plan.hop_dst, plan.hop_vertex, plan.num_workers))


def backward_tables(plan: GraphCommPlan) -> list[CommTuple]:
    """Forward tables with stages reversed and send/receive swapped (gradients flow back)."""
    last = plan.num_stages
    return sorted((CommTuple(t.worker, t.peer, last + 1 - t.stage, t.recv, t.send) for t in forward_tables(plan)),
                  key=lambda t: (t.stage, min(t.worker, t.peer), max(t.worker, t.peer), t.worker > t.peer))


def backward_substage_tables(plan: GraphCommPlan) -> list[CommTuple]:
    """Backward tuples split into sub-stages ``l = 0, 1, …`` (dgcl.txt §6.2).

    In backward stage ``k'`` a worker receives the gradient of vertex ``u`` from every peer it
    sent ``u`` to in forward stage ``k``. Those senders get sub-stages 0, 1, … in rank order, so
    each (stage, sub-stage) delivers at most one gradient per vertex; a send sub-table holds what
    the matching receive sub-table expects.
    """
    m, last = plan.num_workers, plan.num_stages
    # Backward hop: gradient of u flows forward-dst -> forward-src in stage last+1-k.
    bstage = (last + 1 - plan.hop_stage).astype(np.int64)
    bsrc, bdst, u = plan.hop_dst.astype(np.int64), plan.hop_src.astype(np.int64), plan.hop_vertex
    group = (bstage * m + bdst) * (u.max(initial=0) + 1) + u  # (stage, receiver, vertex)
    order = np.lexsort((bsrc, group))
    starts = np.r_[True, group[order][1:] != group[order][:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(order.size), 0))
    sub = np.empty(order.size, dtype=np.int64)
    sub[order] = np.arange(order.size) - first
    out = []
    for l in range(int(sub.max(initial=-1)) + 1):
        mask = sub == l
        groups = _groups(bstage[mask], bsrc[mask], bdst[mask], u[mask], m)
        out += [CommTuple(t.worker, t.peer, t.stage, t.send, t.recv, l) for t in _tuples(groups)]
    return sorted(out, key=lambda t: (t.stage, t.substage, t.worker, t.peer))
