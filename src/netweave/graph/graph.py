"""The ``Graph`` value: an undirected simple graph in CSR form with optional node data.

Every loader and generator ends in :func:`from_edges`, which symmetrises, deduplicates and drops
self-loops, so ``num_edges`` always counts unique undirected edges and the CSR stores each edge in
both directions (``indptr[-1] == 2 * num_edges``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError

Features = np.ndarray | sp.csr_array


@dataclass(frozen=True, eq=False)
class Graph:
    """An undirected simple graph.

    Attributes:
        indptr: ``(n + 1,)`` int64 CSR row pointers.
        indices: ``(2 m,)`` int32 (int64 when ``n >= 2**31``) neighbour ids, sorted within a row.
        features: ``(n, F)`` float32, dense ``ndarray`` or ``scipy.sparse.csr_array`` (bag-of-words
            datasets stay sparse: dense coauthor_phy would need 1.2 GB), or ``None``.
        labels: ``(n,)`` int64 class ids in ``0 .. num_classes-1`` or ``None``.
        train_mask, val_mask, test_mask: ``(n,)`` bool or ``None``.
        name: a short name for reports.
    """

    indptr: np.ndarray
    indices: np.ndarray
    features: Features | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    name: str = "graph"

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        """Unique undirected edges."""
        return int(self.indptr[-1] // 2)

    @property
    def feature_dim(self) -> int:
        return 0 if self.features is None else int(self.features.shape[1])

    @property
    def num_classes(self) -> int:
        return 0 if self.labels is None or self.labels.size == 0 else int(self.labels.max()) + 1

    @property
    def degrees(self) -> np.ndarray:
        """``(n,)`` int64 vertex degrees."""
        return np.diff(self.indptr)

    def edge_sources(self) -> np.ndarray:
        """``(2 m,)`` row id of every CSR entry (the source of each directed edge copy)."""
        return np.repeat(np.arange(self.num_nodes, dtype=self.indices.dtype), self.degrees)

    def dense_features(self) -> np.ndarray:
        """``(n, F)`` float32 features as a dense array (zeros of width 0 when absent)."""
        if self.features is None:
            return np.zeros((self.num_nodes, 0), dtype=np.float32)
        if sp.issparse(self.features):
            return self.features.toarray().astype(np.float32, copy=False)
        return self.features

    def with_(self, **changes) -> "Graph":
        return replace(self, **changes)

    def stats(self) -> dict:
        """Size and degree statistics (the fields of ``netweave graph stats``)."""
        deg = self.degrees
        out = {
            "name": self.name,
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
            "feature_dim": self.feature_dim,
            "num_classes": self.num_classes,
            "degree_min": int(deg.min()) if deg.size else 0,
            "degree_max": int(deg.max()) if deg.size else 0,
            "degree_mean": float(deg.mean()) if deg.size else 0.0,
            "degree_median": float(np.median(deg)) if deg.size else 0.0,
            "degree_std": float(deg.std()) if deg.size else 0.0,
            "isolated_nodes": int((deg == 0).sum()),
        }
        for split in ("train", "val", "test"):
            mask = getattr(self, f"{split}_mask")
            if mask is not None:
                out[f"num_{split}"] = int(mask.sum())
        return out

    # -- persistence -------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write a compressed ``.npz`` that :func:`~.saved.load_graph` reads back."""
        arrays = {"indptr": self.indptr, "indices": self.indices, "name": np.array(self.name)}
        if self.features is not None:
            if sp.issparse(self.features):
                f = self.features.tocsr()
                arrays |= {"feat_data": f.data, "feat_indices": f.indices,
                           "feat_indptr": f.indptr, "feat_shape": np.array(f.shape)}
            else:
                arrays["features"] = self.features
        for key in ("labels", "train_mask", "val_mask", "test_mask"):
            value = getattr(self, key)
            if value is not None:
                arrays[key] = value
        np.savez_compressed(path, **arrays)


def index_dtype(num_nodes: int) -> type:
    """int32 while ids fit, else int64."""
    return np.int32 if num_nodes < 2**31 else np.int64


def from_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int, **node_data) -> Graph:
    """Build a :class:`Graph` from directed or undirected edge arrays (vectorised).

    Edges are symmetrised, duplicates merged and self-loops dropped.

    Args:
        src, dst: ``(E,)`` integer endpoint ids in ``[0, num_nodes)``.
        num_nodes: number of vertices (isolated vertices are allowed).
        **node_data: ``features``, ``labels``, masks and ``name`` passed to :class:`Graph`.
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    if src.shape != dst.shape:
        raise NetweaveError(f"edge arrays differ in length ({src.size} sources, {dst.size} targets)")
    n = int(num_nodes)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise NetweaveError(f"edge endpoint out of range [0, {n}); remap vertex ids densely first")
    keep = src != dst
    lo = np.minimum(src[keep], dst[keep])
    hi = np.maximum(src[keep], dst[keep])
    und = sorted_unique(lo * n + hi)  # canonical u < v keys
    lo, hi = und // n, und % n
    keys = np.concatenate([und, hi * n + lo])
    keys.sort()
    rows, cols = np.divmod(keys, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return Graph(indptr, cols.astype(index_dtype(n)), **node_data)


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an int64 array (sort-based: numpy 2's hash ``unique`` is ~10×
    slower on tens of millions of keys)."""
    keys = np.sort(keys)
    if keys.size == 0:
        return keys
    keep = np.empty(keys.size, dtype=bool)
    keep[0] = True
    np.not_equal(keys[1:], keys[:-1], out=keep[1:])
    return keys[keep]


def remap_ids(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map arbitrary integer ids densely onto ``0..n-1`` in increasing id order.

    Returns ``(src, dst, original_ids)`` where ``original_ids[new] == old``.
    """
    both = np.concatenate([src, dst])
    ids = sorted_unique(both)
    if ids.size and ids[0] == 0 and ids[-1] == ids.size - 1:  # already dense
        return src, dst, ids
    inverse = np.searchsorted(ids, both)
    return inverse[: src.size], inverse[src.size:], ids
