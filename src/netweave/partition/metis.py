"""METIS k-way partitioning (vertex-balanced, minimum edge cut) through pymetis.

METIS reads the graph's CSR in place when it is of METIS's index type (``idx_t``: 64-bit in the
pymetis wheels), so the arrays are handed over in that type: ``indptr`` (int64 already) as is, the
int32 ``indices`` widened once (pymetis would otherwise copy them itself, after our own copy). The
graph is symmetric already; nothing else is built. METIS itself then needs about 55 bytes per
directed edge at its peak (coarsened graphs with edge weights). METIS reads the arrays without
bounds checks, so their bounds are checked first (every loaded graph has been checked already; this
is the last line of defence against an out-of-bounds read in C).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pymetis
from pymetis._internal import _idx_type_width

from ..graph import Graph
from ..graph.validate import check_csr_bounds
from ..progress import stage
from .metis32 import metis32_labels
from .partition import Partition, check_num_parts


def metis_labels(indptr: np.ndarray, indices: np.ndarray, num_parts: int, seed: int = 0,
                 target_weights: Sequence[float] | None = None,
                 vertex_weights: np.ndarray | None = None, bits: int = 64) -> np.ndarray:
    """``(n,)`` int32 METIS part of every vertex of a CSR graph (``num_parts >= 1``).

    ``target_weights`` (summing to 1) asks for unequal part sizes, e.g. machines with different
    numbers of GPUs; ``vertex_weights`` (``(n,)`` non-negative ints) balances parts by weight
    instead of vertex count. ``bits`` 64 is pymetis's METIS; 32 the system's 32-bit METIS
    (:mod:`~netweave.partition.metis32`: half the memory, other partitions for the same seed).
    """
    if bits == 32:
        return metis32_labels(indptr, indices, num_parts, seed, target_weights, vertex_weights)
    check_csr_bounds(indptr, indices, "METIS's input", vertex_weights, target_weights, num_parts)  # C reads them unchecked
    n = indptr.shape[0] - 1
    if num_parts == 1 or n == 0:
        return np.zeros(n, dtype=np.int32)
    idx = metis_index_dtype()
    adjacency = pymetis.CSRAdjacency(np.asarray(indptr, dtype=idx), np.asarray(indices, dtype=idx))
    _, membership = pymetis.part_graph(
        num_parts, adjacency=adjacency, options=pymetis.Options(seed=int(seed)),
        tpwgts=list(target_weights) if target_weights is not None else None,
        vweights=None if vertex_weights is None else np.asarray(vertex_weights, dtype=idx))
    del adjacency
    return np.asarray(membership, dtype=np.int32)


def metis_index_dtype() -> type:
    """numpy type of METIS's ``idx_t`` in the installed pymetis: arrays of it are not copied."""
    return np.int64 if _idx_type_width() == 64 else np.int32


def metis_partition(graph: Graph, num_parts: int, seed: int = 0, bits: int = 64) -> Partition:
    """METIS partition of ``graph`` into ``num_parts`` parts; deterministic for ``seed``.
    ``bits`` 32: the system's 32-bit METIS, method ``metis32`` (see :func:`metis_labels`)."""
    check_num_parts(num_parts, graph.num_nodes)
    name = "metis" if bits == 64 else f"metis{bits}"
    with stage(f"METIS into {num_parts} parts" + ("" if bits == 64 else f" ({bits}-bit)")):
        parts = metis_labels(graph.indptr, graph.indices, num_parts, seed, bits=bits)
    return Partition(parts, num_parts, name)
