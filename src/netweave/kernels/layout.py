"""MGG's workload layout (mgg.txt §4–§5): who aggregates what, from where, in which order.

- **Rows (graph partition, "GP").** GPU ``g`` aggregates the rows of a contiguous vertex range, cut by
  the edge-balanced range split (Algorithm 1, :func:`~netweave.partition.range.range_split_points`).
- **Node embeddings ("NE").** They are sharded in *equal* ranges of ``ceil(n / G)`` rows (Figure 4).
  A neighbour is *local* when its embedding lives in the GPU's own shard, *remote* otherwise. The
  address translation is ``u -> (u // shard, u % shard)``.
- **Local and remote CSRs.** Each row's neighbours split into a local and a remote CSR (Step-2 of
  §4). Each row's list is cut into *neighbour partitions* of at most ``ps`` entries: LNPs and RNPs.
- **Warps.** Warp ``w`` takes LNPs ``[w·dist, (w+1)·dist)`` and the RNPs of the same range, so every
  warp interleaves ``dist`` local and ``dist`` remote partitions (§5.1, Figure 5). Warps go
  ``wpb`` to a block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..partition.range import range_split_points


@dataclass(frozen=True)
class Config:
    """``ps`` neighbours per partition, interleaving distance ``dist``, warps per block ``wpb``."""

    ps: int = 1
    dist: int = 1
    wpb: int = 1

    def check(self) -> None:
        if not (1 <= self.ps <= 32 and 1 <= self.dist <= 16 and 1 <= self.wpb <= 16):
            raise NetweaveError(f"{self}: need ps in 1..32, dist in 1..16, wpb in 1..16 (§6)")


@dataclass(frozen=True, eq=False)
class GPUWork:
    """The workload of one GPU.

    Attributes:
        rows: ``(lo, hi)``, the global row range it aggregates.
        local_ptr, local_idx: CSR over its rows of the neighbours whose embeddings are in its own
            shard, as offsets into that shard.
        remote_ptr, remote_owner, remote_off: CSR of the other neighbours, translated to
            ``(owner GPU, offset in the owner's shard)``.
        lnp, rnp: ``(P, 3)`` neighbour partitions ``(row, start, end)``. ``row`` is local to ``rows``,
            and ``start``/``end`` index the local or remote CSR.
    """

    gpu: int
    rows: tuple[int, int]
    local_ptr: np.ndarray
    local_idx: np.ndarray
    remote_ptr: np.ndarray
    remote_owner: np.ndarray
    remote_off: np.ndarray
    lnp: np.ndarray
    rnp: np.ndarray

    def warps(self, dist: int) -> int:
        """Eq. 2: ``numWarps = ceil(max(local, remote) / dist)``."""
        return -(-max(len(self.lnp), len(self.rnp)) // dist)

    def warp_partitions(self, warp: int, dist: int) -> tuple[np.ndarray, np.ndarray]:
        """The LNPs and RNPs that ``warp`` processes, in interleaved order."""
        return self.lnp[warp * dist:(warp + 1) * dist], self.rnp[warp * dist:(warp + 1) * dist]


@dataclass(frozen=True, eq=False)
class Layout:
    num_nodes: int
    shard: int  # embedding rows per GPU (the last shard may be shorter)
    bounds: np.ndarray  # (G+1,) row split points
    gpus: tuple[GPUWork, ...]
    config: Config

    def translate(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global vertex ids to ``(owner GPU, offset in its shard)``."""
        return u // self.shard, u % self.shard


def _partitions(ptr: np.ndarray, ps: int) -> np.ndarray:
    """Cut every row's neighbour list ``[ptr[r], ptr[r+1])`` into pieces of at most ``ps``: ``(P, 3)``."""
    length = np.diff(ptr)
    pieces = -(-length // ps)
    row = np.repeat(np.arange(length.size), pieces)
    k = np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    start = ptr[row] + k * ps
    return np.column_stack([row, start, np.minimum(start + ps, ptr[row + 1])]).astype(np.int64)


def mgg_layout(indptr: np.ndarray, indices: np.ndarray, gpus: int, config: Config = Config()) -> Layout:
    """The MGG layout of a CSR graph (row ``v`` aggregates ``indices[indptr[v]:indptr[v+1]]``) on ``gpus`` GPUs."""
    config.check()
    n = indptr.size - 1
    if not 1 <= gpus <= max(n, 1):
        raise NetweaveError(f"{gpus} GPUs for {n} vertices: need 1 ≤ GPUs ≤ vertices")
    bounds = range_split_points(indptr, gpus)
    shard = -(-n // gpus)
    work = []
    for g in range(gpus):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        nbr = indices[indptr[lo]:indptr[hi]].astype(np.int64)
        row = np.repeat(np.arange(hi - lo), np.diff(indptr[lo:hi + 1]))
        owner = nbr // shard
        local = owner == g
        lptr = np.concatenate([[0], np.cumsum(np.bincount(row[local], minlength=hi - lo))]).astype(np.int64)
        rptr = np.concatenate([[0], np.cumsum(np.bincount(row[~local], minlength=hi - lo))]).astype(np.int64)
        work.append(GPUWork(g, (lo, hi), lptr, nbr[local] - g * shard, rptr, owner[~local], nbr[~local] % shard,
                            _partitions(lptr, config.ps), _partitions(rptr, config.ps)))
    return Layout(n, shard, bounds, tuple(work), config)


def shard_embeddings(x: np.ndarray, layout: Layout) -> list[np.ndarray]:
    """Split ``(n, D)`` embeddings into the per-GPU equal shards of Figure 4."""
    return [x[g * layout.shard:(g + 1) * layout.shard] for g in range(len(layout.gpus))]
