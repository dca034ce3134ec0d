"""The ``GraphCommPlan`` artefact: one row per hop of the graph allgather.

A hop ``(stage, src, dst, vertex)`` says that in ``stage`` worker ``src`` sends the embedding of
``vertex`` to worker ``dst``. Stage-1 hops leave the vertex's owner; a worker forwards in stage k
only what it had before k; the hops of one vertex form a tree rooted at its owner (dgcl.txt §5.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..graph.npz_archive import NpzArchive
from ..errors import NetweaveError


@dataclass(frozen=True, eq=False)
class GraphCommPlan:
    """A communication plan for one GNN layer's embedding exchange.

    Attributes:
        hop_stage: ``(H,)`` int16 stage of each hop, from 1.
        hop_src, hop_dst: ``(H,)`` int32 worker ranks.
        hop_vertex: ``(H,)`` int64 global vertex ids.
        parts: ``(n,)`` int32 owner of every vertex.
        feature_bytes: bytes of one vertex embedding.
        workers: worker names in rank order.
        planner: ``p2p`` or ``spst``.
    """

    hop_stage: np.ndarray
    hop_src: np.ndarray
    hop_dst: np.ndarray
    hop_vertex: np.ndarray
    parts: np.ndarray
    feature_bytes: int
    workers: tuple[str, ...]
    planner: str = ""

    @classmethod
    def from_hops(cls, stage, src, dst, vertex, parts, feature_bytes, workers, planner) -> "GraphCommPlan":
        """Build a plan with hops sorted by (stage, src, dst, vertex)."""
        order = np.lexsort((vertex, dst, src, stage))
        return cls(np.asarray(stage, np.int16)[order], np.asarray(src, np.int32)[order],
                   np.asarray(dst, np.int32)[order], np.asarray(vertex, np.int64)[order],
                   np.asarray(parts, np.int32), int(feature_bytes), tuple(workers), planner)

    @property
    def num_hops(self) -> int:
        return int(self.hop_stage.shape[0])

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    @property
    def num_stages(self) -> int:
        return int(self.hop_stage.max()) if self.num_hops else 0

    def save(self, path: str | Path) -> None:
        """The plan ``.npz`` of docs/formats.md: hop arrays, ``parts``, ``feature_bytes``, ``workers``."""
        np.savez_compressed(path, hop_stage=self.hop_stage, hop_src=self.hop_src, hop_dst=self.hop_dst,
                            hop_vertex=self.hop_vertex, parts=self.parts, feature_bytes=self.feature_bytes,
                            workers=np.array(self.workers), planner=self.planner)


def load_plan(path: str | Path) -> GraphCommPlan:
    """Read a plan ``.npz`` written by :meth:`GraphCommPlan.save` (without pickle); a file that is
    not one — truncated, another archive, arrays of the wrong kind — is one :class:`NetweaveError`."""
    keys = ("hop_stage", "hop_src", "hop_dst", "hop_vertex", "parts", "feature_bytes", "workers")
    with NpzArchive(path, allow_pickle=False) as z:
        missing = [k for k in keys if k not in z]
        if missing:
            raise NetweaveError(f"{path}: not a netweave plan (missing {', '.join(missing)}); write one with `netweave plan --out`")
        hops = [z[k] for k in keys[:5]]
        if any(a.ndim != 1 or a.dtype.kind not in "iu" for a in hops) or len({a.shape[0] for a in hops[:4]}) != 1:
            raise NetweaveError(f"{path}: hop arrays and parts must be 1-D integer arrays, the hop arrays of one length")
        fb, workers = z["feature_bytes"], z["workers"]
        if fb.ndim != 0 or fb.dtype.kind not in "iu" or int(fb) < 1 or workers.ndim != 1 or workers.dtype.kind != "U":
            raise NetweaveError(f"{path}: feature_bytes must be a positive integer and workers a list of names")
        n, w = hops[4].shape[0], workers.shape[0]
        if not 1 <= w <= max(n, 1):
            raise NetweaveError(f"{path}: {w:,} workers for a partition of {n:,} vertices; a plan has at least one "
                                "worker and at most one per vertex")
        stage = compact_stages(hops[0], path)
        return GraphCommPlan(stage, *hops[1:], int(fb), tuple(str(w) for w in workers),
                             str(z["planner"]) if "planner" in z else "")


def compact_stages(stage: np.ndarray, where) -> np.ndarray:
    """``(H,)`` stage numbers renumbered 1, 2, … in their order (a saved plan may skip numbers: its
    stages 1 and 2⁴⁰ are stages 1 and 2, and nothing is sized by the largest number). Stages below 1
    are left for the validator to name."""
    stage = np.asarray(stage, dtype=np.int64)
    if stage.size == 0 or stage.min() < 1:
        return stage.astype(np.int16) if stage.size == 0 or stage.max() <= np.iinfo(np.int16).max else stage
    distinct, dense = np.unique(stage, return_inverse=True)
    if distinct.size > np.iinfo(np.int16).max:
        raise NetweaveError(f"{where}: {distinct.size:,} stages; a plan has at most {np.iinfo(np.int16).max:,}")
    return (dense + 1).astype(np.int16)
