"""The ``Partition`` value: which worker owns each vertex."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..graph.npz_archive import NpzArchive
from ..errors import NetweaveError


@dataclass(frozen=True, eq=False)
class Partition:
    """A vertex → part assignment.

    Attributes:
        parts: ``(n,)`` int32, the owner (worker rank) of every vertex, in ``[0, num_parts)``.
        num_parts: number of parts (a part may be empty).
        method: how it was made (``metis``, ``metis32``, ``random``, ``range``, ``hierarchical``, ``file``).
    """

    parts: np.ndarray
    num_parts: int
    method: str = "file"

    def __post_init__(self):
        parts = np.asarray(self.parts)
        if parts.ndim != 1 or not np.issubdtype(parts.dtype, np.integer):
            raise NetweaveError("a partition is a 1-d integer array of part ids, one per vertex")
        if parts.size and (parts.min() < 0 or parts.max() >= self.num_parts):
            raise NetweaveError(f"part ids must lie in [0, {self.num_parts}); found {parts.min()}..{parts.max()}")
        object.__setattr__(self, "parts", parts.astype(np.int32, copy=False))

    @property
    def num_nodes(self) -> int:
        return int(self.parts.shape[0])

    def sizes(self) -> np.ndarray:
        """``(num_parts,)`` vertices per part."""
        return np.bincount(self.parts, minlength=self.num_parts)

    def check_matches(self, num_nodes: int, where: str = "partition") -> None:
        """Raise a clear error if the partition does not cover ``num_nodes`` vertices."""
        if self.num_nodes != num_nodes:
            raise NetweaveError(
                f"{where} has {self.num_nodes} vertices but the graph has {num_nodes}; "
                "partition the same dataset spec")

    def save(self, path: str | Path) -> None:
        """``.npz`` with ``parts`` (vertex → part), ``num_parts`` and ``method``."""
        np.savez_compressed(path, parts=self.parts, num_parts=self.num_parts, method=self.method)


def load_partition(path: str | Path, num_nodes: int | None = None, num_parts: int | None = None) -> Partition:
    """Read a partition ``.npz`` (only ``parts`` is required); when given, check that it covers
    ``num_nodes`` vertices and has ``num_parts`` parts (one per worker)."""
    with NpzArchive(path, allow_pickle=False) as z:
        if "parts" not in z:
            raise NetweaveError(f"{path}: no 'parts' array (keys: {', '.join(z.files)}); write it with `netweave partition --out`")
        parts = z["parts"]
        if parts.ndim != 1 or parts.dtype.kind not in "iu" or parts.size == 0 or parts.min() < 0:
            raise NetweaveError(f"{path}: 'parts' must be a non-empty 1-D array of non-negative integers (part of each vertex)")
        k = int(z["num_parts"]) if "num_parts" in z else int(parts.max()) + 1
        partition = Partition(parts, k, str(z["method"]) if "method" in z else "file")
    if num_nodes is not None:
        partition.check_matches(num_nodes, str(path))
    if num_parts is not None and partition.num_parts != num_parts:
        raise NetweaveError(f"{path} has {partition.num_parts} parts but there are {num_parts} workers; "
                            "partition into as many parts as workers")
    return partition


def check_num_parts(num_parts: int, num_nodes: int) -> None:
    """Reject fewer than one part or more parts than vertices."""
    if num_parts < 1:
        raise NetweaveError(f"--parts {num_parts}: need at least one part")
    if num_parts > num_nodes:
        raise NetweaveError(f"--parts {num_parts} exceeds the graph's {num_nodes} vertices; use at most {num_nodes}")
