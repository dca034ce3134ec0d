"""Host all-reduce, the baseline every in-network aggregation is measured against (issue 31):
what users run without a programmable switch, on the same topology.

* **Ring** (Patarasuk and Yuan, JPDC 2009; gloo's and NCCL's ring): workers in a ring, ranks in
  order; a reduce-scatter and an all-gather of ``N − 1`` steps each, every step moving ``S / N`` bytes
  from each rank to the next, so every directed ring edge carries ``2 (N − 1) / N · S`` bytes
  (:func:`ring_edge_bytes`). On a topology each ring edge is the shortest path between two
  consecutive ranks, and edges that share a link share its rate.
* **Tree** (a binomial reduce, then a broadcast: MPI's and gloo's tree): every tree edge carries
  ``S`` up and ``S`` down.

:func:`link_bytes` gives the bytes each directed link carries in one all-reduce; its busiest link,
at its rate, is the all-reduce's time when the network bounds it (:func:`allreduce_time_s`: a
lower bound, reached by a pipelined implementation on full-duplex links; the ring's ``2 (N − 1)``
latency terms are left out).
"""

from __future__ import annotations

from ..errors import NetweaveError
from ..topology import Topology
from ..topology.paths import shortest_path

KINDS = ("ring", "tree")


def ring_edge_bytes(workers: int, size_bytes: float) -> float:
    """Bytes each rank sends to the next in one ring all-reduce of ``size_bytes``."""
    return 2 * (workers - 1) * size_bytes / workers


def _edges(kind: str, workers: list[str]) -> list[tuple[str, str, float]]:
    """(from, to, share of S) of every logical transfer of one all-reduce."""
    n = len(workers)
    if kind == "ring":
        share = 2 * (n - 1) / n
        return [(workers[i], workers[(i + 1) % n], share) for i in range(n)] if n > 1 else []
    if kind == "tree":  # binomial tree rooted at rank 0: rank i's parent clears its lowest set bit
        out = []
        for i in range(1, n):
            parent = workers[i & (i - 1)]
            out += [(workers[i], parent, 1.0), (parent, workers[i], 1.0)]
        return out
    raise NetweaveError(f"unknown all-reduce {kind!r}; use one of {', '.join(KINDS)}")


def link_bytes(topo: Topology, workers: list[str], size_bytes: float, kind: str = "ring") -> dict[tuple[str, str], float]:
    """Bytes each directed link ``(a, b)`` carries in one all-reduce of ``size_bytes`` among
    ``workers`` (rank order) over the topology's shortest paths."""
    out: dict[tuple[str, str], float] = {}
    for src, dst, share in _edges(kind, workers):
        path = shortest_path(topo, src, dst)
        for a, b in zip(path, path[1:]):
            out[a, b] = out.get((a, b), 0.0) + share * size_bytes
    return out


def allreduce_time_s(topo: Topology, workers: list[str], size_bytes: float, kind: str = "ring",
                     scale: float = 1.0) -> float:
    """The network's bound on one all-reduce: its busiest directed link's bytes at that link's rate
    (× ``scale``)."""
    loads = link_bytes(topo, workers, size_bytes, kind)
    if not loads:
        return 0.0
    return max(load * 8 / (topo.links[topo.link_between(a, b)].gbps * scale * 1e9) for (a, b), load in loads.items())
