"""Statistics of a partition and its communication relation."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..graph import Graph
from .comm_relation import CommRelation
from .partition import Partition


@dataclass(frozen=True, kw_only=True)
class PartitionStats:
    """What :func:`partition_stats` measures (see there); ``part_sizes`` and ``halo_sizes`` are
    per part: own vertices, and halo vertices (copies received)."""

    num_parts: int
    method: str
    edge_cut: int
    edge_cut_fraction: float
    vertex_balance: float
    edge_balance: float
    boundary_vertices: int
    halo_vertices_total: int
    replication_factor: float
    feature_bytes: int
    host_exchange_bytes: int
    part_sizes: list[int]
    halo_sizes: list[int]

    def summary(self) -> dict:
        return asdict(self)


def partition_stats(graph: Graph, partition: Partition, comm: CommRelation, feature_bytes: int) -> PartitionStats:
    """Edge cut, balance, boundary vertices, replication and the host-based exchange volume.

    * ``edge_cut``: undirected edges whose endpoints have different owners.
    * ``vertex_balance`` / ``edge_balance``: largest part over the mean part, by vertices and by
      edge entries (sum of degrees).
    * ``boundary_vertices``: vertices with at least one neighbour on another worker.
    * ``replication_factor``: (own + halo vertices over all workers) / n, for one hop.
    * ``host_exchange_bytes``: ``Σ_u |{workers needing u}| × feature_bytes`` — what a host-based
      exchange (every copy sent separately) moves per layer.
    """
    k, n = partition.num_parts, graph.num_nodes
    sizes = partition.sizes()
    edge_load = np.bincount(partition.parts, weights=graph.degrees, minlength=k)
    owner = partition.parts[graph.edge_sources()]
    cut = int((owner != partition.parts[graph.indices]).sum() // 2)
    halo = comm.volume().sum(axis=0)
    total_copies = int(comm.send_ids.size)
    return PartitionStats(
        num_parts=k, method=partition.method, edge_cut=cut, edge_cut_fraction=cut / max(graph.num_edges, 1),
        vertex_balance=float(sizes.max() / (n / k)), edge_balance=float(edge_load.max() / max(edge_load.mean(), 1e-12)),
        boundary_vertices=int((comm.needers() > 0).sum()), halo_vertices_total=total_copies,
        replication_factor=(n + total_copies) / max(n, 1), feature_bytes=int(feature_bytes),
        host_exchange_bytes=total_copies * int(feature_bytes), part_sizes=sizes.tolist(), halo_sizes=halo.tolist())
