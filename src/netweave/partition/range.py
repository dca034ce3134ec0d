"""MGG's edge-balanced range split (mgg.txt §4, Algorithm 1, "range-constrained binary search").

Each part is a contiguous range of vertex ids; split points are chosen on the CSR row pointer so
that every part holds about ``ceil(nnz / k)`` edge entries. The paper's ``binSearch`` looks for the
last row whose pointer does not exceed ``nPtr[lastPos] + ePerGPU``; we find exactly that row with
``np.searchsorted`` (the pseudo-code's halving on pointer values is not guaranteed to terminate),
and additionally keep every part non-empty when ``k <= n`` so each GPU has a range.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph
from .partition import Partition, check_num_parts


def range_split_points(indptr: np.ndarray, num_parts: int) -> np.ndarray:
    """``(num_parts + 1,)`` vertex ids ``b`` such that part ``p`` owns ``[b[p], b[p+1])`` (Alg. 1)."""
    n = indptr.shape[0] - 1
    e_per_gpu = (int(indptr[-1]) + num_parts - 1) // num_parts  # Alg. 1 line 3
    bounds = np.zeros(num_parts + 1, dtype=np.int64)
    last = 0
    for s in range(num_parts):  # one binary search per GPU (k iterations, not edges)
        target = min(int(indptr[last]) + e_per_gpu, int(indptr[-1]))  # line 13
        nid = int(np.searchsorted(indptr, target, side="right")) - 1  # last row with nPtr <= target
        nid = min(max(nid, last + 1), n - (num_parts - 1 - s))  # non-empty ranges
        bounds[s + 1] = last = nid
    bounds[-1] = n
    return bounds


def range_partition(graph: Graph, num_parts: int) -> Partition:
    """Contiguous vertex ranges with balanced edge counts (deterministic; no seed)."""
    check_num_parts(num_parts, graph.num_nodes)
    bounds = range_split_points(graph.indptr, num_parts)
    parts = np.repeat(np.arange(num_parts, dtype=np.int32), np.diff(bounds))
    return Partition(parts, num_parts, "range")
