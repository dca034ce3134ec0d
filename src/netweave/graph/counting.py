"""Counting sorts over small integer keys (numba): the stable argsort and the simple undirected CSR
that SwitchGNN's blocking and orders build many times over tens of millions of cross edges.

Both are O(E + K) for ``E`` keys in ``0..K-1``, where numpy's comparison sorts are O(E log E) and
``searchsorted`` against a sorted id list costs a cache miss per key.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _counting_argsort(keys, size):
    start = np.zeros(size + 1, dtype=np.int64)
    for k in keys:
        start[k + 1] += 1
    for i in range(size):
        start[i + 1] += start[i]
    out = np.empty(keys.size, dtype=np.int64)
    for i in range(keys.size):
        k = keys[i]
        out[start[k]] = i
        start[k] += 1
    return out


def counting_argsort(keys: np.ndarray, size: int | None = None) -> np.ndarray:
    """``(E,)`` int64 indices sorting ``keys`` (ints in ``0..size-1``) stably: equal keys keep their
    order, as ``np.argsort(keys, kind="stable")``. ``size`` defaults to ``keys.max() + 1``."""
    keys = np.asarray(keys)
    if keys.size and (keys.min() < 0 or (size is not None and keys.max() >= size)):
        raise ValueError(f"counting sort keys must lie in 0..{size}, got {keys.min()}..{keys.max()}")
    if size is None:
        size = int(keys.max()) + 1 if keys.size else 0
    return _counting_argsort(keys, int(size))


def counting_lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key primary, stable) for non-negative int keys: one counting
    sort per key, least significant first."""
    order = np.arange(keys[0].size, dtype=np.int64)
    for k in keys:
        order = order[counting_argsort(k[order])]
    return order


def run_bounds(*keys: np.ndarray) -> np.ndarray:
    """Start index of every run of equal key tuples in arrays sorted by them, plus the end: run ``r``
    is ``[bounds[r], bounds[r + 1])``; ``[0]`` when empty."""
    change = np.zeros(keys[0].size, dtype=bool)
    change[:1] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.append(np.flatnonzero(change), keys[0].size)


def group_by(label: np.ndarray, items: np.ndarray | None = None) -> list[np.ndarray]:
    """``items`` (default: the indices ``0..E-1``) split by their ``label`` (non-negative ints), one
    array per label present, labels ascending, each keeping the items' order: one counting sort."""
    if label.size == 0:
        return []
    by = counting_argsort(label)
    bounds = np.flatnonzero(np.diff(label[by])) + 1
    return np.split(by if items is None else items[by], bounds)


def compact_ids(n: int, *vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct ids among ``vertices`` (ints in ``0..n-1``) and ``(n,)`` each id's place
    among them (``-1`` for an absent id): a lookup table instead of ``searchsorted``."""
    present = np.zeros(n, dtype=bool)
    for v in vertices:
        present[v] = True
    ids = np.flatnonzero(present)
    place = np.full(n, -1, dtype=np.int64)
    place[ids] = np.arange(ids.size)
    return ids, place


@numba.njit(cache=True)
def _undirected_csr(a, b, k):
    ptr = np.zeros(k + 1, dtype=np.int64)
    for i in range(a.size):
        ptr[a[i] + 1] += 1
        ptr[b[i] + 1] += 1
    for i in range(k):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    cols = np.empty(ptr[k], dtype=np.int64)
    for i in range(a.size):
        cols[fill[a[i]]] = b[i]
        fill[a[i]] += 1
        cols[fill[b[i]]] = a[i]
        fill[b[i]] += 1
    indptr = np.zeros(k + 1, dtype=np.int64)
    w = 0
    for v in range(k):
        row = cols[ptr[v]:ptr[v + 1]]
        row.sort()  # in place: its entries are read before ``w`` passes them
        last = -1
        for u in row:
            if u != last and u != v:
                cols[w] = u
                w += 1
                last = u
        indptr[v + 1] = w
    return indptr, cols[:w].copy()


def undirected_csr(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr (k+1,), indices)`` of the simple undirected graph on ``0..k-1`` with an edge
    ``{a[i], b[i]}`` for every ``i``: both directions, no duplicates, no self-loops, every row
    sorted ascending (the rows ``np.unique`` of the symmetric keys would give)."""
    return _undirected_csr(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), int(k))
