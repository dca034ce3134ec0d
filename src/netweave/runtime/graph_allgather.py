"""``graph_allgather``: DGCL's "graph Allgather" (dgcl.txt §4.2, §6) as a torch autograd function.

Forward: the rank's local embeddings go into a buffer; the plan's stages run in order, each
batching every (sender, receiver) pair of the stage into one message (``batch_isend_irecv``), and
relayed vertices are forwarded from the buffer in later stages. The result is the own + halo rows.
Backward: stages run in reverse with send and receive swapped; received gradients are added to the
buffer (a relay adds what its subtree sent back before passing the sum upstream). Each
(stage, sub-stage) delivers at most one gradient per vertex (§6.2), so a plain indexed add is safe.
Works with any backend that supports point-to-point ops (gloo on CPU, NCCL on GPU).
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from .rank_tables import RankTables


class CommCounter:
    """Bytes this rank sent and seconds it spent in communication."""

    def __init__(self):
        self.bytes_sent = 0
        self.seconds = 0.0

    def reset(self):
        self.bytes_sent, self.seconds = 0, 0.0


def _as_range(rows) -> tuple[int, int] | None:
    """``(start, length)`` when ``rows`` (an index tensor of the tables) are consecutive ascending
    buffer rows, else None; found once per tensor and remembered on it."""
    found = getattr(rows, "_netweave_range", False)
    if found is False:
        found = None
        if len(rows) and isinstance(rows, torch.Tensor):
            first = int(rows[0])
            if bool(torch.equal(rows, torch.arange(first, first + len(rows), device=rows.device, dtype=rows.dtype))):
                found = (first, len(rows))
        try:
            rows._netweave_range = found
        except AttributeError:  # numpy rows (tables not moved to a device): checked every call
            pass
    return found


def _run_stage(buffer: torch.Tensor, messages, accumulate: bool, counter: CommCounter | None, group) -> None:
    """One stage: post every send and receive of this rank, wait, then store (or add) receipts.

    Consecutive rows are sent from, and (forward) received into, the buffer itself: no gather,
    no scatter, no allocation; other rows are gathered into one contiguous message."""
    t0 = time.perf_counter()
    ops, receipts = [], []
    for peer, send_rows, recv_rows in messages:
        if len(send_rows):
            span = _as_range(send_rows)
            if span is not None:
                payload = buffer.narrow(0, *span)
            else:
                payload = buffer.index_select(0, torch.as_tensor(send_rows, device=buffer.device))
            ops.append(dist.P2POp(dist.isend, payload, peer, group))
            if counter is not None:
                counter.bytes_sent += payload.numel() * payload.element_size()
        if len(recv_rows):
            span = None if accumulate else _as_range(recv_rows)
            if span is not None:
                ops.append(dist.P2POp(dist.irecv, buffer.narrow(0, *span), peer, group))
                continue
            inbox = buffer.new_empty((len(recv_rows), buffer.shape[1]))
            ops.append(dist.P2POp(dist.irecv, inbox, peer, group))
            receipts.append((torch.as_tensor(recv_rows, device=buffer.device), inbox))
    if ops:
        for request in dist.batch_isend_irecv(ops):
            request.wait()
    for rows, inbox in receipts:
        if accumulate:
            buffer.index_add_(0, rows, inbox)
        else:
            buffer.index_copy_(0, rows, inbox)
    if counter is not None:
        counter.seconds += time.perf_counter() - t0


class _GraphAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, tables: RankTables, counter, group):
        ctx.tables, ctx.counter, ctx.group = tables, counter, group
        buffer = x.new_empty((tables.buffer_ids.size, x.shape[1]))  # every other row is received once
        buffer[: tables.num_local] = x
        for messages in tables.forward:
            _run_stage(buffer, messages, False, counter, group)
        return buffer[: tables.num_out]  # a view of this call's own buffer: nothing else holds it

    @staticmethod
    def backward(ctx, grad_out):
        tables = ctx.tables
        buffer = grad_out.new_empty((tables.buffer_ids.size, grad_out.shape[1]))
        buffer[: tables.num_out] = grad_out
        buffer[tables.num_out:] = 0  # relay rows add what their subtrees send back
        for messages in tables.backward:
            _run_stage(buffer, messages, True, ctx.counter, ctx.group)
        return buffer[: tables.num_local], None, None, None


def graph_allgather(x: torch.Tensor, tables: RankTables, counter: CommCounter | None = None,
                    group=None) -> torch.Tensor:
    """Own + halo embeddings of this rank.

    Args:
        x: ``(num_local, D)`` embeddings of the rank's own vertices (ascending global id).
        tables: from :func:`~netweave.runtime.rank_tables.rank_tables` for this rank.
        counter: optional :class:`CommCounter` accumulating bytes sent and communication time.
        group: process group (default: the world).

    Returns:
        ``(num_local + num_halo, D)`` rows in the local numbering of ``G_d``.
    """
    if x.shape[0] != tables.num_local:
        raise ValueError(f"graph_allgather: {x.shape[0]} rows given, rank {tables.rank} owns {tables.num_local}")
    return _GraphAllgather.apply(x, tables, counter, group)
