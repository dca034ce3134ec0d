"""Vectorised CSR helpers shared by partitioning and local-graph construction."""

from __future__ import annotations

import numpy as np


def row_positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``indices`` of the entries of ``rows``, and the new row pointer.

    Returns ``(positions, new_indptr)`` so that ``indices[positions]`` lists the neighbours of
    ``rows[0]``, then ``rows[1]``, … and ``new_indptr`` (``(len(rows) + 1,)`` int64) delimits them.
    """
    rows = np.asarray(rows, dtype=np.int64)
    counts = indptr[rows + 1] - indptr[rows]
    new_indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    positions = np.arange(new_indptr[-1], dtype=np.int64) + np.repeat(indptr[rows] - new_indptr[:-1], counts)
    return positions, new_indptr


def induced_subgraph(indptr: np.ndarray, indices: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of the subgraph induced by sorted ``vertices``, renumbered 0..len-1."""
    n = indptr.shape[0] - 1
    new_id = np.full(n, -1, dtype=np.int64)
    new_id[vertices] = np.arange(vertices.size)
    positions, _ = row_positions(indptr, vertices)
    neighbours = new_id[indices[positions]]
    rows = np.repeat(np.arange(vertices.size), indptr[vertices + 1] - indptr[vertices])
    keep = neighbours >= 0
    sub_indptr = np.zeros(vertices.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=vertices.size), out=sub_indptr[1:])
    return sub_indptr, neighbours[keep].astype(indices.dtype)
