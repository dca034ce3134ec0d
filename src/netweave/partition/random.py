"""Balanced random partitioning: a seeded permutation dealt round-robin to the parts."""

from __future__ import annotations

import numpy as np

from ..graph import Graph
from .partition import Partition, check_num_parts


def random_partition(graph: Graph, num_parts: int, seed: int = 0) -> Partition:
    """Every part gets ``floor(n/k)`` or ``ceil(n/k)`` uniformly random vertices."""
    check_num_parts(num_parts, graph.num_nodes)
    n = graph.num_nodes
    parts = np.empty(n, dtype=np.int32)
    parts[np.random.default_rng(seed).permutation(n)] = np.arange(n) % num_parts
    return Partition(parts, num_parts, "random")
