"""Synthetic graphs: R-MAT, Erdős–Rényi, star and ring (all vectorised, seeded).

Random generators draw candidate edges in batches and keep drawing until the graph has exactly
``m`` unique undirected edges (self-loops and duplicates do not count), so ``num_edges == m``.
The edges are kept as sorted keys ``lo * n + hi`` (``lo < hi``), from which the CSR is filled
directly (:func:`graph_from_keys`): no symmetrised copy of the edge list is ever sorted.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import NetweaveError
from .graph import Graph, from_edges, index_dtype
from .memory import check_memory
from .splits import random_split

MAX_ROUNDS = 64


# Peak bytes measured for these generators (numpy 2.4): ids, permutation and CSR per vertex; drawn
# candidates, sort keys and the symmetrised CSR per edge; float32 features (plus one temporary).
BYTES_PER_VERTEX, BYTES_PER_EDGE = 24, 80


def _check_size(n: int, m: int, what: str) -> None:
    if n < 1:
        raise NetweaveError(f"{what}: n={n} must be a positive number of vertices, e.g. {what}:n=1000")
    if m < 0 or m > n * (n - 1) // 2:
        raise NetweaveError(f"{what}: m={m} edges impossible on n={n} vertices (at most {n * (n - 1) // 2})")


def check_generator_memory(what: str, n: int, m: int, feat: int = 0, fix: str | None = None,
                           per_vertex: float = BYTES_PER_VERTEX, per_edge: float = BYTES_PER_EDGE) -> None:
    """Refuse (one line, with the estimate) a graph of ``n`` vertices, ``m`` edges and ``feat``
    features per vertex that cannot fit in the memory left, before anything is allocated.

    ``fix`` says which parameters to lower (default: ``n``, ``m`` and ``feat``).
    """
    need = per_vertex * n + per_edge * m + 8 * n * max(feat, 0)
    if fix is None:
        names = ["n", "m"] + (["feat"] if feat else [])
        fix = "lower " + ", ".join(names[:-1]) + " or " + names[-1]
    check_memory(what, need, fix + ", or run on a machine with more memory")


def unique_edges(draw, n: int, m: int, rng: np.random.Generator, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Call ``draw(k) -> (src, dst)`` until ``m`` distinct undirected non-loop edges are collected.

    Returns ``(lo, hi)`` with ``lo < hi``, sorted; a uniformly random subset when a batch overshoots.
    """
    keys = unique_keys(lambda k: edge_keys(*draw(k), n), n, m, rng, what)
    return keys // n, keys % n


def unique_keys(draw_keys, n: int, m: int, rng: np.random.Generator, what: str) -> np.ndarray:
    """Call ``draw_keys(k)`` (the keys ``lo * n + hi``, ``lo < hi``, of the non-loop edges among
    ``k`` drawn ones; negative entries are skipped) until ``m`` distinct keys are collected; returns
    them sorted, a uniformly random subset when a batch overshoots (the same subset, for a seed, as
    ``keys[rng.permutation(K)[:m]]``)."""
    keys = np.empty(0, dtype=np.int64)
    yield_rate = 1.0  # new distinct edges per drawn edge in the last round
    for _ in range(MAX_ROUNDS):
        need = m - keys.size
        if need <= 0:
            break
        batch = min(int(need * 1.1 / max(yield_rate, 0.02)) + 1024, 4 * m + 1024)
        new = draw_keys(batch)
        new.sort()
        new = new[np.searchsorted(new, 0):]
        before = keys.size
        keys = _merge_unique(keys, new) if keys.size else new[:_dedup(new)]
        del new
        yield_rate = (keys.size - before) / batch
    else:
        raise NetweaveError(f"{what}: could not place {m} distinct edges on {n} vertices; lower m")
    if keys.size > m:
        chosen = np.zeros(keys.size, dtype=bool)
        chosen[rng.permutation(keys.size)[:m]] = True
        keys = keys[chosen]
    return keys


@numba.njit(cache=True)
def edge_keys(src, dst, n):  # pragma: no cover - compiled
    """``min * n + max`` of every edge ``src[i] - dst[i]`` that is not a self-loop, in draw order."""
    keys = np.empty(src.shape[0], np.int64)
    j = 0
    for i in range(src.shape[0]):
        a, b = np.int64(src[i]), np.int64(dst[i])
        if a != b:
            keys[j] = min(a, b) * n + max(a, b)
            j += 1
    return keys[:j]


@numba.njit(cache=True)
def _dedup(a):  # pragma: no cover - compiled
    """Move the distinct values of sorted ``a`` to its front; returns how many there are."""
    k = 0
    for i in range(a.shape[0]):
        if k == 0 or a[k - 1] != a[i]:
            a[k] = a[i]
            k += 1
    return k


@numba.njit(cache=True)
def _merge_unique(a, b):  # pragma: no cover - compiled
    """Sorted distinct values of two sorted int64 arrays (``a`` distinct, ``b`` may repeat)."""
    out = np.empty(a.shape[0] + b.shape[0], np.int64)
    i = j = k = 0
    while i < a.shape[0] or j < b.shape[0]:
        if j >= b.shape[0] or (i < a.shape[0] and a[i] <= b[j]):
            x = a[i]
            i += 1
        else:
            x = b[j]
            j += 1
        if k == 0 or out[k - 1] != x:
            out[k] = x
            k += 1
    return out[:k].copy()


@numba.njit(cache=True)
def _fill_csr(keys, n, indptr, indices):  # pragma: no cover - compiled
    # Keys ascend by (lo, hi), so lo is found by walking rows, not by dividing (a 64-bit division
    # per key costs more than the rest of the loop). Row v receives its smaller neighbours (keys
    # (u, v), u < v) before its larger ones (keys (v, w), which come later), each group ascending.
    lo = 0
    for key in keys:
        while key >= (lo + 1) * n:
            lo += 1
        indptr[lo + 1] += 1
        indptr[key - lo * n + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    pos = indptr[:-1].copy()
    lo = 0
    for key in keys:
        while key >= (lo + 1) * n:
            lo += 1
        hi = key - lo * n
        indices[pos[lo]] = hi
        pos[lo] += 1
        indices[pos[hi]] = lo
        pos[hi] += 1


def graph_from_keys(keys: np.ndarray, n: int, **node_data) -> Graph:
    """The graph of the sorted distinct undirected edge keys ``lo * n + hi`` (``lo < hi``): the
    same :class:`Graph` as :func:`from_edges` of those edges, without its copies and sorts."""
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(2 * keys.size, dtype=index_dtype(n))
    _fill_csr(keys, np.int64(n), indptr, indices)
    return Graph(indptr, indices, **node_data)


def merged_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted union of two sorted arrays of distinct edge keys."""
    return _merge_unique(a, b)


def node_data(n: int, feat: int, classes: int, rng: np.random.Generator,
              labels: np.ndarray | None = None, split=(0.6, 0.2)) -> dict:
    """Labels (uniform, or given), class-conditioned Gaussian float32 features and a random split.

    Features are ``centre[label] + noise`` with unit-variance centres and noise, so a model can
    learn the classes from them; without classes they are pure noise.
    """
    data: dict = {}
    if classes > 0:
        if labels is None:
            labels = rng.integers(0, classes, n)
        data["labels"] = labels.astype(np.int64)
        data["train_mask"], data["val_mask"], data["test_mask"] = random_split(
            n, *split, seed=int(rng.integers(2**31)))
    if feat > 0:
        x = rng.standard_normal((n, feat), dtype=np.float32)
        if classes > 0:
            _add_rows(x, rng.standard_normal((classes, feat), dtype=np.float32), data["labels"])
        data["features"] = x
    return data


@numba.njit(cache=True)
def _add_rows(x, centres, labels):  # pragma: no cover - compiled
    """``x += centres[labels]`` in place, without the ``(n, feat)`` temporary."""
    for i in range(x.shape[0]):
        x[i, :] += centres[labels[i], :]


def rmat(n: int, m: int, seed: int = 0, feat: int = 0, classes: int = 0,
         a: float = 0.57, b: float = 0.19, c: float = 0.19) -> Graph:
    """R-MAT graph (Chakrabarti et al. 2004) with ``n`` vertices and ``m`` undirected edges.

    Each edge picks one quadrant per level of the ``2^ceil(log2 n)`` adjacency matrix with
    probabilities ``(a, b, c, 1-a-b-c)`` (Graph500 defaults); ids ``>= n`` are discarded, and
    vertex ids are randomly permuted so the hubs are not all at small ids.
    """
    _check_size(n, m, "rmat")
    check_generator_memory(f"rmat:n={n},m={m}" + (f",feat={feat}" if feat else ""), n, m, feat)
    if min(a, b, c) < 0 or a + b + c >= 1:
        raise NetweaveError(f"rmat: probabilities a={a}, b={b}, c={c} must be non-negative and sum below 1")
    rng = np.random.default_rng(seed)
    levels = max(1, int(np.ceil(np.log2(n))))
    perm = rng.permutation(n)

    def draw(k):
        src = np.zeros(k, dtype=np.int64)
        dst = np.zeros(k, dtype=np.int64)
        for _ in range(levels):
            r = rng.random(k, dtype=np.float32)
            src = 2 * src + (r >= a + b)
            dst = 2 * dst + (((r >= a) & (r < a + b)) | (r >= a + b + c))
        ok = (src < n) & (dst < n)
        return perm[src[ok]], perm[dst[ok]]

    keys = unique_keys(lambda k: edge_keys(*draw(k), n), n, m, rng, "rmat")
    return graph_from_keys(keys, n, name=f"rmat-{n}-{m}", **node_data(n, feat, classes, rng))


def erdos_renyi(n: int, m: int, seed: int = 0, feat: int = 0, classes: int = 0) -> Graph:
    """G(n, m): ``m`` undirected edges chosen uniformly at random."""
    _check_size(n, m, "er")
    check_generator_memory(f"er:n={n},m={m}" + (f",feat={feat}" if feat else ""), n, m, feat)
    rng = np.random.default_rng(seed)
    keys = unique_keys(lambda k: edge_keys(rng.integers(0, n, k), rng.integers(0, n, k), n), n, m, rng, "er")
    return graph_from_keys(keys, n, name=f"er-{n}-{m}", **node_data(n, feat, classes, rng))


def star(n: int, seed: int = 0, feat: int = 0, classes: int = 0) -> Graph:
    """Vertex 0 joined to vertices ``1..n-1``."""
    _check_size(n, n - 1, "star")
    check_generator_memory(f"star:n={n}" + (f",feat={feat}" if feat else ""), n, n - 1, feat,
                           "lower n" + (" or feat" if feat else ""))
    leaves = np.arange(1, n)
    return from_edges(np.zeros_like(leaves), leaves, n, name=f"star-{n}",
                      **node_data(n, feat, classes, np.random.default_rng(seed)))


def ring(n: int, seed: int = 0, feat: int = 0, classes: int = 0) -> Graph:
    """Cycle ``0 - 1 - … - (n-1) - 0`` (a path for n = 2)."""
    if n < 2:
        raise NetweaveError(f"ring: n={n} must be at least 2")
    check_generator_memory(f"ring:n={n}" + (f",feat={feat}" if feat else ""), n, n, feat,
                           "lower n" + (" or feat" if feat else ""))
    ids = np.arange(n)
    return from_edges(ids, (ids + 1) % n, n, name=f"ring-{n}",
                      **node_data(n, feat, classes, np.random.default_rng(seed)))
