"""Paths through a topology: fewest hops, widest (largest bottleneck bandwidth), and all shortest
up-down paths of a Clos network.

A path is a list of node names from source to destination. By default a path never *transits* a
worker (GPU or host): relaying through another worker is a planning decision (DGCL's forwarding),
not part of a physical path. Pass ``via_workers=True`` to allow it.
"""

from __future__ import annotations

import heapq
from collections import deque

import numba
import numpy as np

from ..errors import NetweaveError
from .topology import Topology


def _may_transit(topo: Topology, v: int, dst: int, via_workers: bool) -> bool:
    return v == dst or via_workers or not topo.nodes[v].is_worker


def hop_distances(topo: Topology, src: str, via_workers: bool = False) -> dict[str, int]:
    """Fewest hops from ``src`` to every reachable node (BFS)."""
    s = topo.index[topo.node(src).name]
    dist = {s: 0}
    queue = deque([s])
    while queue:
        u = queue.popleft()
        if u != s and not via_workers and topo.nodes[u].is_worker:
            continue  # reached, but no transit through it
        for v, _ in topo.adjacency[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return {topo.nodes[i].name: d for i, d in dist.items()}


def all_shortest_paths(topo: Topology, src: str, dst: str, via_workers: bool = False) -> list[list[str]]:
    """Every fewest-hop path from ``src`` to ``dst``, in lexicographic order of node indices."""
    s, t = topo.index[topo.node(src).name], topo.index[topo.node(dst).name]
    if s == t:
        return [[src]]
    # Distances to t (BFS backwards); a path follows strictly decreasing distance.
    dist = {t: 0}
    queue = deque([t])
    while queue:
        u = queue.popleft()
        for v, _ in topo.adjacency[u]:
            if v not in dist and (v == s or _may_transit(topo, v, t, via_workers)):
                dist[v] = dist[u] + 1
                if v != s:
                    queue.append(v)
    if s not in dist:
        raise NetweaveError(f"no path from {src} to {dst}" + ("" if via_workers else " that avoids transiting other workers"))
    paths, stack = [], [(s, [s])]
    while stack:
        u, path = stack.pop()
        if u == t:
            paths.append([topo.nodes[i].name for i in path])
            continue
        nxt = sorted({v for v, _ in topo.adjacency[u] if dist.get(v, -1) == dist[u] - 1}, reverse=True)
        stack.extend((v, path + [v]) for v in nxt)
    return paths


def shortest_path(topo: Topology, src: str, dst: str, via_workers: bool = False) -> list[str]:
    """One fewest-hop path (the first in :func:`all_shortest_paths` order)."""
    return all_shortest_paths(topo, src, dst, via_workers)[0]


def path_links(topo: Topology, path: list[str]) -> list[int]:
    """Link indices along a node path."""
    out = []
    for a, b in zip(path, path[1:]):
        e = topo.link_between(a, b)
        if e is None:
            raise NetweaveError(f"{a} and {b} are adjacent in the path but not linked")
        out.append(e)
    return out


def bottleneck_gbps(topo: Topology, path: list[str]) -> float:
    """Smallest link bandwidth along ``path`` (inf for a single node)."""
    return min((topo.links[e].gbps for e in path_links(topo, path)), default=float("inf"))


def _widest(topo: Topology, src: str, via_workers: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Modified Dijkstra on the key ``(-bottleneck, hops)`` from ``src`` (numba): the parent of every
    node (-1 the source, -2 unreached) and minus its path's bottleneck. Workers other than ``src``
    end paths but are not transited unless ``via_workers``."""
    indptr, nbr, gbps, worker = _csr(topo)
    mask = np.zeros_like(worker) if via_workers else worker
    return _widest_kernel(indptr, nbr, gbps, mask, topo.index[topo.node(src).name])


def _trace(topo: Topology, parent: np.ndarray, t: int) -> list[str]:
    path = [int(t)]
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    return [topo.nodes[i].name for i in reversed(path)]


def widest_path(topo: Topology, src: str, dst: str, via_workers: bool = False) -> list[str]:
    """The path with the largest bottleneck bandwidth; ties go to fewer hops, then lower indices."""
    t = topo.index[topo.node(dst).name]
    parent, _ = _widest(topo, src, via_workers)
    if parent[t] == -2:
        raise NetweaveError(f"no path from {src} to {dst}" + ("" if via_workers else " that avoids transiting other workers"))
    return _trace(topo, parent, t)


def widest_tree(topo: Topology, src: str) -> dict[str, list[str]]:
    """Widest paths from ``src`` to every node (same keys and ties as :func:`widest_path`); workers
    other than ``src`` end paths but are never transited. Returns node name -> path."""
    return widest_tree_widths(topo, src)[0]


def widest_tree_widths(topo: Topology, src: str) -> tuple[dict[str, list[str]], dict[str, float]]:
    """:func:`widest_tree` and the bottleneck (Gb/s) of every path."""
    parent, width = _widest(topo, src)
    reached = np.flatnonzero(parent >= -1)
    return {topo.nodes[t].name: _trace(topo, parent, t) for t in reached}, \
        {topo.nodes[t].name: float(-width[t]) for t in reached}


def _csr(topo: Topology):
    """The adjacency as CSR arrays (cached on the topology): neighbours in adjacency order, link Gb/s."""
    cached = getattr(topo, "_widest_csr", None)
    if cached is None:
        counts = [len(a) for a in topo.adjacency]
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        nbr = np.array([v for a in topo.adjacency for v, _ in a], dtype=np.int64)
        gbps = np.array([topo.links[e].gbps for a in topo.adjacency for _, e in a], dtype=np.float64)
        worker = np.array([n.is_worker for n in topo.nodes], dtype=np.bool_)
        cached = (indptr, nbr, gbps, worker)
        topo._widest_csr = cached
    return cached


@numba.njit(cache=True)
def _widest_kernel(indptr, nbr, gbps, worker, s):
    """The search of :func:`_widest`; ``worker[u]``: ``u`` may end a path but not be transited."""
    n = indptr.size - 1
    width = np.full(n, np.inf)  # stores -bottleneck, like the Python key
    hops = np.zeros(n, dtype=np.int64)
    parent = np.full(n, -2, dtype=np.int64)
    width[s] = -np.inf
    parent[s] = -1
    heap = [(-np.inf, np.int64(0), np.int64(s))]
    while heap:
        w, h, u = heapq.heappop(heap)
        if w != width[u] or h != hops[u]:
            continue
        if u != s and worker[u]:
            continue
        for k in range(indptr[u], indptr[u + 1]):
            v = nbr[k]
            key_w = max(w, -gbps[k])
            if parent[v] == -2 or key_w < width[v] or (key_w == width[v] and h + 1 < hops[v]):
                width[v], hops[v], parent[v] = key_w, h + 1, u
                heapq.heappush(heap, (key_w, h + 1, v))
    return parent, width


def widest_shortest_path(topo: Topology, src: str, dst: str, via_workers: bool = False) -> list[str]:
    """Among the fewest-hop paths, the one with the largest bottleneck (first on ties)."""
    paths = all_shortest_paths(topo, src, dst, via_workers)
    return max(paths, key=lambda p: bottleneck_gbps(topo, p))


def clos_tiers(topo: Topology) -> dict[str, int]:
    """Tier of every node: its ``tier`` attribute, else hops from the nearest host (hosts are 0)."""
    tiers = {n.name: n.tier for n in topo.nodes if n.tier is not None}
    if len(tiers) == len(topo.nodes):
        return tiers
    dist = {i: 0 for i, n in enumerate(topo.nodes) if n.kind == "host"}
    queue = deque(dist)
    while queue:
        u = queue.popleft()
        for v, _ in topo.adjacency[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return {n.name: tiers.get(n.name, dist.get(i, -1)) for i, n in enumerate(topo.nodes)}


def updown_paths(topo: Topology, src: str, dst: str) -> list[list[str]]:
    """All shortest up-down paths from ``src`` to ``dst`` in a Clos network.

    An up-down path climbs tiers strictly, then descends strictly (never down then up again),
    which is the loop-free routing rule that ARO's unfolding follows (aro.txt §III-A).
    """
    tiers = clos_tiers(topo)
    paths = [p for p in all_shortest_paths(topo, src, dst) if _is_updown([tiers[v] for v in p])]
    if not paths:
        raise NetweaveError(f"no shortest up-down path from {src} to {dst}; is {topo.name!r} a Clos network?")
    return paths


def _is_updown(levels: list[int]) -> bool:
    steps = [b - a for a, b in zip(levels, levels[1:])]
    if any(d == 0 for d in steps):
        return False
    turned = False
    for d in steps:
        if d < 0:
            turned = True
        elif turned:
            return False
    return True
