"""The communication relation of a partition: who must send which vertices to whom.

For one GNN layer, worker ``j`` needs the embedding of every vertex ``u`` owned by another worker
``i`` that has a neighbour on ``j`` (dgcl.txt §5: the "graph allgather"). ``send(i, j)`` is that
sorted set; the *halo* of ``j`` is the union over ``i`` of ``send(i, j)`` (disjoint, as each vertex
has one owner). A worker's local numbering puts its own vertices first (ascending global id), then
its halo grouped by owner rank and ascending id — the order in which messages arrive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import Graph
from ..graph.csr import row_positions
from ..errors import NetweaveError
from ..graph.graph import sorted_unique
from ..graph.memory import check_memory
from .partition import Partition


@dataclass(frozen=True, eq=False)
class LocalGraph:
    """The graph ``G_d`` a single worker computes on.

    Attributes:
        global_ids: ``(num_local + num_halo,)`` global id of every local index.
        num_local: the first ``num_local`` entries are the worker's own vertices.
        indptr: ``(num_local + 1,)`` CSR rows of the own vertices only.
        indices: neighbours of the own vertices in local numbering (own or halo).
    """

    global_ids: np.ndarray
    num_local: int
    indptr: np.ndarray
    indices: np.ndarray

    @property
    def num_halo(self) -> int:
        return int(self.global_ids.shape[0] - self.num_local)


@dataclass(frozen=True, eq=False)
class CommRelation:
    """Send sets for every ordered worker pair of a partition.

    Attributes:
        parts: ``(n,)`` owner of every vertex.
        num_parts: ``k``.
        send_ptr: ``(k*k + 1,)`` offsets: pair ``(i, j)`` owns ``send_ids[send_ptr[i*k+j] : send_ptr[i*k+j+1]]``.
        send_ids: ``(S,)`` int64 global vertex ids, sorted within each pair.
        local_ptr: ``(k + 1,)`` offsets into ``local_order``.
        local_order: ``(n,)`` vertices sorted by (owner, id).
    """

    parts: np.ndarray
    num_parts: int
    send_ptr: np.ndarray
    send_ids: np.ndarray
    local_ptr: np.ndarray
    local_order: np.ndarray

    def send(self, i: int, j: int) -> np.ndarray:
        """Sorted global ids that worker ``i`` must send to worker ``j`` (empty when ``i == j``)."""
        p = i * self.num_parts + j
        return self.send_ids[self.send_ptr[p]:self.send_ptr[p + 1]]

    def local(self, j: int) -> np.ndarray:
        """Sorted global ids owned by worker ``j``."""
        return self.local_order[self.local_ptr[j]:self.local_ptr[j + 1]]

    def halo(self, j: int) -> np.ndarray:
        """Remote vertices worker ``j`` needs, grouped by owner rank, ascending within an owner."""
        k = self.num_parts
        return np.concatenate([self.send(i, j) for i in range(k)]) if k else self.send_ids[:0]

    def global_ids(self, j: int) -> np.ndarray:
        """Local numbering of worker ``j``: own vertices, then halo."""
        return np.concatenate([self.local(j), self.halo(j)])

    def send_pairs(self) -> np.ndarray:
        """``(S,)`` pair id ``i*k + j`` of every entry of ``send_ids``."""
        return np.repeat(np.arange(self.num_parts ** 2), np.diff(self.send_ptr))

    def volume(self) -> np.ndarray:
        """``(k, k)`` int64: number of vertices ``i`` sends to ``j``."""
        return np.diff(self.send_ptr).reshape(self.num_parts, self.num_parts)

    def needers(self) -> np.ndarray:
        """``(n,)`` int64: number of other workers that need each vertex."""
        return np.bincount(self.send_ids, minlength=self.parts.shape[0])

    def local_graph(self, graph: Graph, j: int) -> LocalGraph:
        """``G_d`` of worker ``j``: own rows, neighbours renumbered locally (own first, then halo)."""
        ids = self.global_ids(j)
        own = self.local(j)
        to_local = np.full(graph.num_nodes, -1, dtype=np.int64)
        to_local[ids] = np.arange(ids.size)
        positions, indptr = row_positions(graph.indptr, own)
        return LocalGraph(ids, int(own.size), indptr, to_local[graph.indices[positions]])


def comm_relation(graph: Graph, partition: Partition) -> CommRelation:
    """Build the :class:`CommRelation` of ``partition`` on ``graph`` (vectorised over edges)."""
    partition.check_matches(graph.num_nodes)
    n, k = graph.num_nodes, partition.num_parts
    if k > max(n, 1):
        raise NetweaveError(f"{k} parts for a graph of {n} vertices: a partition has at most one part per vertex")
    check_memory(f"the communication relation of {k:,} parts", 16 * (k * k + 1),
                 "use fewer parts (its pair offsets grow with parts²)")
    parts = partition.parts.astype(np.int64)
    src = graph.edge_sources().astype(np.int64)
    owner, needer = parts[src], parts[graph.indices]
    cross = owner != needer
    # One key per (owner, needer, vertex); sorting orders by pair, then by vertex id.
    keys = sorted_unique((owner[cross] * k + needer[cross]) * n + src[cross])
    pair, send_ids = np.divmod(keys, n)
    send_ptr = np.searchsorted(pair, np.arange(k * k + 1))
    local_order = np.argsort(parts, kind="stable")
    local_ptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(parts, minlength=k), out=local_ptr[1:])
    return CommRelation(partition.parts, k, send_ptr, send_ids, local_ptr, local_order)
