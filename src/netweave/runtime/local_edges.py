"""The edges of a worker's local graph ``G_d`` as arrays, and GCN's weights over full-graph degrees.

``G_d`` (dgcl.txt §4.1) holds the edges *into* the worker's own vertices: for own vertex ``v`` and
each neighbour ``u`` (own or halo), one edge ``u → v``. Rows are numbered locally: the own vertices
first (ascending global id), then the halo (grouped by owner rank, ascending within an owner), as
:class:`~netweave.partition.LocalGraph` numbers them and as the graph allgather returns them.

GCN's normalisation must use the degrees of the *whole* graph: a halo vertex has only its edges to
this worker's vertices in ``G_d``, so degrees counted on ``G_d`` (what PyG's ``gcn_norm`` would do)
give another model than single-process training. :func:`gcn_edges` computes the weights
``1 / sqrt((d_u + 1)(d_v + 1))`` and the self loops ``1 / (d_v + 1)`` from full-graph degrees ``d``.
"""

from __future__ import annotations

import numpy as np

from ..partition import LocalGraph


def local_edges(local: LocalGraph) -> tuple[np.ndarray, np.ndarray]:
    """``(source, target)``: ``(E,)`` int64 local indices of every edge into an own vertex, in the
    global CSR order (grouped by target). ``source`` is in ``[0, num_local + num_halo)``, ``target``
    in ``[0, num_local)``."""
    counts = np.diff(local.indptr).astype(np.int64)
    target = np.repeat(np.arange(local.num_local, dtype=np.int64), counts)
    return local.indices.astype(np.int64), target


def gcn_edges(local: LocalGraph, degrees: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GCN's propagation rows of ``G_d``: ``(indptr, source, target, weight)``.

    Each own row ``v`` holds its neighbours in CSR order, then its self loop; ``indptr`` is
    ``(num_local + 1,)``, the others ``(E + num_local,)`` (int64, int64, int64, float32). ``weight``
    is ``1 / sqrt((d_u + 1)(d_v + 1))`` (computed in float64) for an edge and ``1 / (d_v + 1)`` for a
    self loop, with ``d = degrees``, the full graph's.
    """
    n_own = local.num_local
    source, target = local_edges(local)
    counts = np.diff(local.indptr).astype(np.int64)
    deg1 = degrees[local.global_ids].astype(np.float64) + 1.0
    weight = 1.0 / np.sqrt(deg1[source] * deg1[target])
    indptr = np.concatenate([[0], np.cumsum(counts + 1)])
    order = np.argsort(np.concatenate([target, np.arange(n_own)]), kind="stable")
    rows = np.concatenate([target, np.arange(n_own, dtype=np.int64)])[order]
    cols = np.concatenate([source, np.arange(n_own, dtype=np.int64)])[order]
    vals = np.concatenate([weight, 1.0 / deg1[:n_own]])[order].astype(np.float32)
    return indptr, cols, rows, vals
