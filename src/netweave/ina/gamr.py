"""GAMR: graph-aware multicast reordering (switchgnn.txt §3.2.2).

A priority BFS over the graph: dequeue the enqueued vertex of highest degree, ties broken by
enqueue order; each vertex is enqueued once; when the queue empties, restart from the unvisited
vertex of highest degree (ties by id). High-degree vertices go first so that their aggregators
fill early and complete gently as their low-degree neighbours arrive; neighbours go close together
so that the aggregators they share complete soon after they open.
"""

from __future__ import annotations

import heapq

import numba
import numpy as np

from ..errors import NetweaveError


@numba.njit(cache=True)
def _gamr(indptr, indices, degree, start, by_degree):
    n = degree.size
    top = degree.max() if n else 0
    enqueued = np.zeros(n, dtype=np.bool_)
    vertex_of = np.empty(n, dtype=np.int64)  # enqueue counter -> vertex
    order = np.empty(n, dtype=np.int64)
    heap = [np.int64(0)]  # key (top - degree) * (n + 1) + counter: highest degree, then earliest
    heap.pop()
    counter, filled, scan, root = 0, 0, 0, start
    while filled < n:
        if root < 0:  # restart from the unvisited vertex of highest degree
            while enqueued[by_degree[scan]]:
                scan += 1
            root = by_degree[scan]
        enqueued[root] = True
        vertex_of[counter] = root
        heapq.heappush(heap, (top - degree[root]) * (n + 1) + counter)
        counter += 1
        while heap:
            v = vertex_of[heapq.heappop(heap) % (n + 1)]
            order[filled] = v
            filled += 1
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                if not enqueued[u]:
                    enqueued[u] = True
                    vertex_of[counter] = u
                    heapq.heappush(heap, (top - degree[u]) * (n + 1) + counter)
                    counter += 1
        root = -1
    return order


def gamr_order(indptr: np.ndarray, indices: np.ndarray, start: int | None = None,
               seed: int | None = None) -> np.ndarray:
    """The GAMR sending order of the ``n`` vertices of a CSR graph (``indptr`` ``(n+1,)``, ``indices``).

    The BFS starts at ``start`` if given, else at a vertex drawn with ``seed`` if given (the paper
    starts "from a randomly selected vertex"), else at the vertex of highest degree (the root the
    §3.2.2 star analysis assumes). Returns ``(n,)`` int64, a permutation of ``0..n-1``.
    """
    n = indptr.size - 1
    if n < 0 or indptr[0] != 0 or indptr[-1] != indices.size or (indices.size and not 0 <= indices.min() <= indices.max() < n):
        raise NetweaveError("gamr_order needs a CSR graph: indptr from 0 to len(indices), indices in 0..n-1")
    degree = np.diff(indptr).astype(np.int64)
    if start is None:
        start = int(np.random.default_rng(seed).integers(n)) if seed is not None and n else -1
    elif not 0 <= start < n:
        raise NetweaveError(f"start vertex {start} is not in 0..{n - 1}")
    by_degree = np.argsort(-degree, kind="stable")
    return _gamr(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64), degree, int(start), by_degree)
