"""Hierarchical partitioning for two-level topologies (dgcl.txt §4.1).

DGCL partitions hierarchically "to prioritize communication reduction on slow links": first the
graph is cut across machines (the slow inter-machine network sees the fewest edges), then each
machine's part is cut across its GPUs. Both levels use METIS; the first level asks for part sizes
proportional to each machine's number of GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import NetweaveError
from ..graph import Graph
from ..graph.csr import induced_subgraph
from ..progress import stage
from .metis import metis_labels
from .partition import Partition, check_num_parts


def hierarchical_partition(graph: Graph, machines: Sequence[Sequence[int]], seed: int = 0) -> Partition:
    """Partition across machines, then across the workers of each machine.

    Args:
        graph: the graph.
        machines: for every machine, the ranks of its workers, e.g. ``[[0..7], [8..15]]`` for two
            DGX-1; together they must be ``0..k-1`` exactly once.
        seed: METIS seed (both levels).

    Returns:
        A :class:`Partition` whose part ids are worker ranks.
    """
    ranks = np.concatenate([np.asarray(m, dtype=np.int64) for m in machines]) if machines else np.array([])
    k = ranks.size
    if k == 0 or any(len(m) == 0 for m in machines) or not np.array_equal(np.sort(ranks), np.arange(k)):
        raise NetweaveError("hierarchical partitioning needs every worker rank 0..k-1 in exactly one non-empty machine")
    check_num_parts(k, graph.num_nodes)
    sizes = np.array([len(m) for m in machines], dtype=np.float64)
    parts = np.empty(graph.num_nodes, dtype=np.int32)
    with stage(f"hierarchical METIS: {len(machines)} machines, {k} workers"):
        machine_of = metis_labels(graph.indptr, graph.indices, len(machines), seed, sizes / sizes.sum())
        for m, workers in enumerate(machines):  # one METIS call per machine
            vertices = np.flatnonzero(machine_of == m)
            if vertices.size < len(workers):
                raise NetweaveError(f"machine {m} received {vertices.size} vertices for {len(workers)} workers; use a larger graph")
            sub_indptr, sub_indices = induced_subgraph(graph.indptr, graph.indices, vertices)
            local = metis_labels(sub_indptr, sub_indices, len(workers), seed)
            parts[vertices] = np.asarray(workers, dtype=np.int32)[local]
    return Partition(parts, k, "hierarchical")
