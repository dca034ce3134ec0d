"""The boundary dependency relation of one GNN layer's propagation (switchgnn.txt §2.3, §3.3).

M workers each own a partition. For one layer, every boundary vertex ``u`` must reach every
remote worker that owns a neighbour of ``u``, and every destination vertex ``v`` needs the sum of
its *remote* neighbours' features (its local neighbours are summed at home). With GCN-style
normalised sums, ``Σ_u h_u / sqrt(d_u d_v)``, the sender scales ``h_u`` by ``1/sqrt(d_u)`` and the
receiver the sum by ``1/sqrt(d_v)``, so the switch only adds plain vectors: the propagation is
aggregatable in the network.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import Graph
from ..partition import Partition


@dataclass(frozen=True, eq=False)
class BoundaryRelation:
    """Cross-partition edges, grouped by sender.

    Attributes:
        parts: ``(n,)`` owner of every vertex.
        num_workers: ``M``.
        send_ptr: ``(n + 1,)`` CSR over senders: ``u`` feeds destinations ``dst[send_ptr[u]:send_ptr[u+1]]``.
        dst: ``(C,)`` destination vertices (on another worker than their sender), per sender by
            (owner, id): the order in which a switch walks a multicast's destinations.
        need: ``(n,)`` number of remote neighbours of every vertex (0 for non-destinations).
    """

    parts: np.ndarray
    num_workers: int
    send_ptr: np.ndarray
    dst: np.ndarray
    need: np.ndarray

    @property
    def num_cross_edges(self) -> int:
        return int(self.dst.size)

    def boundary(self) -> np.ndarray:
        """Vertices with at least one remote neighbour (they upload)."""
        return np.flatnonzero(np.diff(self.send_ptr) > 0)

    def destinations(self) -> np.ndarray:
        """Vertices that need a remote sum."""
        return np.flatnonzero(self.need > 0)

    def senders(self) -> np.ndarray:
        """``(C,)`` the sender of every cross edge (edge ``e`` is ``senders()[e] -> dst[e]``)."""
        return np.repeat(np.arange(self.parts.size, dtype=np.int64), np.diff(self.send_ptr))

    def subset(self, keep: np.ndarray) -> "BoundaryRelation":
        """The relation of the cross edges where ``keep`` ``(C,)`` is true (same vertices and workers)."""
        sender = self.senders()[keep]
        send_ptr = np.zeros(self.parts.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(sender, minlength=self.parts.size), out=send_ptr[1:])
        dst = self.dst[keep]
        return BoundaryRelation(self.parts, self.num_workers, send_ptr, dst, np.bincount(dst, minlength=self.parts.size))

    def sender_worker_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct ``(u, w)``: sender ``u`` has a neighbour on worker ``w`` (one host-based copy each)."""
        key = self.senders() * self.num_workers + self.parts[self.dst]  # sorted: edges go by (sender, owner)
        if key.size:
            key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        return key // self.num_workers, key % self.num_workers


def boundary_relation(graph: Graph, partition: Partition) -> BoundaryRelation:
    """The :class:`BoundaryRelation` of ``partition`` on ``graph`` (vectorised over edges)."""
    partition.check_matches(graph.num_nodes)
    parts = partition.parts.astype(np.int64)
    src = graph.edge_sources().astype(np.int64)
    dst = graph.indices.astype(np.int64)
    cross = parts[src] != parts[dst]
    n, m = graph.num_nodes, partition.num_parts
    # one sort of a combined key orders the cross edges by (sender, owner of dst, dst)
    key = np.sort((src[cross] * m + parts[dst[cross]]) * n + dst[cross])
    src, dst = key // (m * n), key % n
    send_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=send_ptr[1:])
    need = np.bincount(dst, minlength=n)
    return BoundaryRelation(parts, m, send_ptr, dst, need)
