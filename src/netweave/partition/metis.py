"""METIS k-way partitioning (vertex-balanced, minimum edge cut) through pymetis."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pymetis

from ..graph import Graph
from ..progress import stage
from .partition import Partition, check_num_parts


def metis_labels(indptr: np.ndarray, indices: np.ndarray, num_parts: int, seed: int = 0,
                 target_weights: Sequence[float] | None = None,
                 vertex_weights: np.ndarray | None = None) -> np.ndarray:
    """``(n,)`` int32 METIS part of every vertex of a CSR graph (``num_parts >= 1``).

    ``target_weights`` (summing to 1) asks for unequal part sizes, e.g. machines with different
    numbers of GPUs; ``vertex_weights`` (``(n,)`` non-negative ints) balances parts by weight
    instead of vertex count.
    """
    n = indptr.shape[0] - 1
    if num_parts == 1 or n == 0:
        return np.zeros(n, dtype=np.int32)
    adjacency = pymetis.CSRAdjacency(indptr.astype(np.int32), indices.astype(np.int32))
    _, membership = pymetis.part_graph(
        num_parts, adjacency=adjacency, options=pymetis.Options(seed=int(seed)),
        tpwgts=list(target_weights) if target_weights is not None else None,
        vweights=None if vertex_weights is None else np.asarray(vertex_weights, dtype=np.int32))
    return np.asarray(membership, dtype=np.int32)


def metis_partition(graph: Graph, num_parts: int, seed: int = 0) -> Partition:
    """METIS partition of ``graph`` into ``num_parts`` parts; deterministic for ``seed``."""
    check_num_parts(num_parts, graph.num_nodes)
    with stage(f"METIS into {num_parts} parts"):
        parts = metis_labels(graph.indptr, graph.indices, num_parts, seed)
    return Partition(parts, num_parts, "metis")
