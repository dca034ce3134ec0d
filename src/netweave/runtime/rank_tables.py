"""Per-rank execution tables of a plan, in the rank's local row numbering (no torch needed).

A rank's buffer holds, in order: its own vertices (ascending id), its halo (grouped by owner, as
in :class:`~netweave.partition.CommRelation`), then vertices it only relays for others. The
first ``num_local + num_halo`` rows are what a single-worker GNN on ``G_d`` consumes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import NetweaveError
from ..partition import CommRelation
from ..plan import GraphCommPlan, backward_substage_tables, forward_tables


@dataclass(frozen=True, eq=False)
class RankTables:
    """What one rank sends and receives, as buffer row indices.

    Attributes:
        rank: this worker.
        buffer_ids: ``(num_buffer,)`` global id of every buffer row.
        num_local, num_out: own rows; own + halo rows (the output of the allgather).
        forward: per stage (in order), a list of ``(peer, send_rows, recv_rows)``.
        backward: per (stage, sub-stage) in execution order, a list of ``(peer, send_rows, recv_rows)``;
            within one entry every received row is distinct, so gradients add without atomics.
    """

    rank: int
    buffer_ids: np.ndarray
    num_local: int
    num_out: int
    forward: list[list[tuple[int, np.ndarray, np.ndarray]]]
    backward: list[list[tuple[int, np.ndarray, np.ndarray]]]


def tables_on(tables: RankTables, device) -> RankTables:
    """``tables`` with every row array as an int64 torch tensor on ``device`` (converted once, not per call)."""
    import torch

    def move(stages):
        return [[(peer, torch.from_numpy(s).to(device), torch.from_numpy(r).to(device)) for peer, s, r in stage]
                for stage in stages]

    return replace(tables, forward=move(tables.forward), backward=move(tables.backward))


def rank_tables(plan: GraphCommPlan, comm: CommRelation, rank: int) -> RankTables:
    """Translate ``plan`` into buffer rows of ``rank`` (local, then halo, then relay-only vertices)."""
    if not np.array_equal(plan.parts, comm.parts):
        raise NetweaveError("the plan was made for another partition; re-plan with the same partition")
    out_ids = comm.global_ids(rank)
    mine = plan.hop_dst == rank
    relay = np.setdiff1d(plan.hop_vertex[mine], out_ids)
    buffer_ids = np.concatenate([out_ids, relay])
    order = np.argsort(buffer_ids, kind="stable")

    def rows(ids: np.ndarray) -> np.ndarray:
        pos = order[np.searchsorted(buffer_ids[order], ids)]
        if ids.size and not np.array_equal(buffer_ids[pos], ids):
            raise NetweaveError(f"rank {rank}: the plan moves vertices this rank never holds")
        return pos

    def grouped(tuples, key):
        groups: dict = {}
        for t in tuples:
            if t.worker == rank and (t.send.size or t.recv.size):
                groups.setdefault(key(t), []).append((t.peer, rows(t.send), rows(t.recv)))
        return [groups[k] for k in sorted(groups)]

    return RankTables(rank, buffer_ids, int(comm.local(rank).size), int(out_ids.size),
                      grouped(forward_tables(plan), lambda t: t.stage),
                      grouped(backward_substage_tables(plan), lambda t: (t.stage, t.substage)))
