"""The reference MGG aggregation (defines the semantics; numpy, runs anywhere).

For each GPU, each neighbour partition adds its neighbours' embeddings into its row. LNPs read the
GPU's own shard; RNPs read the owner's shard through the address translation. ``mode``:
``sum``, ``mean`` (divided by the degree), or ``gcn`` (each neighbour scaled by
``1/sqrt(d_u d_v)`` with ``d`` the full-graph degrees).
"""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError
from .layout import Layout

MODES = ("sum", "mean", "gcn")


def aggregate(layout: Layout, shards: list[np.ndarray], degree: np.ndarray, mode: str = "sum") -> np.ndarray:
    """``(n, D)`` aggregated rows, assembled from every GPU's output range."""
    if mode not in MODES:
        raise NetweaveError(f"unknown aggregation {mode!r}; use one of {', '.join(MODES)}")
    d = shards[0].shape[1]
    out = np.zeros((layout.num_nodes, d), dtype=np.float64)
    inv = 1.0 / np.sqrt(np.maximum(degree, 1))
    for work in layout.gpus:
        lo, hi = work.rows
        acc = np.zeros((hi - lo, d))
        for parts, fetch in ((work.lnp, lambda s, e: (shards[work.gpu][work.local_idx[s:e]],
                                                       work.gpu * layout.shard + work.local_idx[s:e])),
                             (work.rnp, lambda s, e: (np.stack([shards[o][f] for o, f in
                                                                zip(work.remote_owner[s:e], work.remote_off[s:e])])
                                                      if e > s else np.zeros((0, d)),
                                                      work.remote_owner[s:e] * layout.shard + work.remote_off[s:e]))):
            for row, s, e in parts:
                vals, ids = fetch(s, e)
                if mode == "gcn":
                    vals = vals * inv[ids][:, None]
                acc[row] += vals.sum(axis=0)
        rows = np.arange(lo, hi)
        if mode == "mean":
            acc /= np.maximum(degree[rows], 1)[:, None]
        elif mode == "gcn":
            acc *= inv[rows][:, None]
        out[lo:hi] = acc
    return out
