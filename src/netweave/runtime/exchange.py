"""The embedding exchange a layer calls before its graph operation, in three flavours.

* ``plan`` — DGCL's graph allgather executing a P2P or SPST plan (:mod:`.graph_allgather`).
* ``allreduce`` — the baseline of PyG-style SPMD message passing: every rank writes its rows into
  a zero ``(N, D)`` matrix and all-reduces it, then reads its own + halo rows. The backward pass
  all-reduces the ``(N, D)`` gradient the same way.
* ``none`` — one worker: the local graph is the whole graph.

Every flavour maps ``(num_local, D)`` own rows to ``(num_local + num_halo, D)`` rows in the
local numbering of ``G_d`` and counts bytes and seconds in a :class:`CommCounter`.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.distributed as dist

from .graph_allgather import CommCounter, graph_allgather
from .rank_tables import RankTables, tables_on


def ring_allreduce_bytes(numel: int, element_size: int, world: int) -> int:
    """Bytes one rank sends in a ring all-reduce of ``numel`` elements: ``2 (P-1)/P`` of the tensor."""
    return 2 * (world - 1) * numel * element_size // world


def timed_all_reduce(tensor: torch.Tensor, counter: CommCounter) -> None:
    """Sum ``tensor`` over all ranks in place, counting ring all-reduce bytes and the time taken."""
    t0 = time.perf_counter()
    dist.all_reduce(tensor)
    counter.seconds += time.perf_counter() - t0
    counter.bytes_sent += ring_allreduce_bytes(tensor.numel(), tensor.element_size(), dist.get_world_size())


class _AllreduceGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, own, out_ids, num_nodes, counter):
        ctx.own, ctx.counter = own, counter
        full = x.new_zeros((num_nodes, x.shape[1]))
        full[own] = x
        timed_all_reduce(full, counter)
        ctx.out_ids, ctx.num_nodes = out_ids, num_nodes
        return full[out_ids]

    @staticmethod
    def backward(ctx, grad_out):
        full = grad_out.new_zeros((ctx.num_nodes, grad_out.shape[1]))
        full.index_add_(0, ctx.out_ids, grad_out)
        timed_all_reduce(full, ctx.counter)
        return full[ctx.own], None, None, None, None


class Exchange:
    """Own rows → own + halo rows for one rank; ``counter`` accumulates what it costs."""

    def __init__(self, mode: str, global_ids: np.ndarray, num_local: int, num_nodes: int,
                 tables: RankTables | None = None, device: str | torch.device = "cpu"):
        if mode not in ("plan", "allreduce", "none"):
            raise ValueError(f"unknown exchange {mode!r}")
        if mode == "plan" and tables is None:
            raise ValueError("a plan exchange needs the rank's tables")
        self.mode, self.num_nodes, self.num_local = mode, num_nodes, num_local
        self.tables = None if tables is None else tables_on(tables, device)
        self.out_ids = torch.from_numpy(np.asarray(global_ids, dtype=np.int64)).to(device)
        self.own = self.out_ids[:num_local]
        self.counter = CommCounter()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(num_local, D)`` → ``(num_local + num_halo, D)``."""
        if self.mode == "none":
            return x
        if self.mode == "plan":
            return graph_allgather(x, self.tables, self.counter)
        return _AllreduceGather.apply(x, self.own, self.out_ids, self.num_nodes, self.counter)


def allreduce_gradients(params: list[torch.nn.Parameter], counter: CommCounter) -> None:
    """Sum every parameter gradient over the ranks with one flat all-reduce (data-parallel sync)."""
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    timed_all_reduce(flat, counter)
    offset = 0
    for p, g in zip(params, grads):
        p.grad = flat[offset: offset + g.numel()].view_as(p).clone()
        offset += g.numel()
