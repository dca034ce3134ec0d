"""``graph_allgather``: DGCL's "graph Allgather" (dgcl.txt §4.2, §6) as a torch autograd function.

Forward: the plan's stages run in order, each batching every (sender, receiver) pair of the stage
into one message, and relayed vertices are forwarded from the buffer in later stages. The result
is the own + halo rows. Backward: stages run in reverse with send and receive swapped; received
gradients are added to the buffer (a relay adds what its subtree sent back before passing the
sum upstream). Each (stage, sub-stage) delivers at most one gradient per vertex (§6.2), so a plain
indexed add is safe. Works with any backend that supports point-to-point ops (gloo on CPU, NCCL
on GPU).

No per-call allocation (issue 20, goal 3): the ``(num_buffer, D)`` buffers come from a small pool
per (tables, width, dtype, device), and a pooled buffer is handed out again only when no tensor
outside the pool references its storage (a previous output, a view of it, autograd's saved
tensors, a gradient kept in ``.grad``). Gathered send rows and the inboxes of scattered receives
use one scratch tensor per pool that never leaves this module. The first stage sends straight
from ``x`` (the gradient in the backward) while the own rows are copied into the buffer, so that
copy overlaps the wire. Consecutive rows are sent and (forward) received as views, no gather.

``schedule``: ``"batch"`` posts all of a stage's receives, then all its sends, at once (gloo's
``batch_isend_irecv``; receives first, see :func:`_post`); ``"rounds"`` exchanges with one peer at
a time, round ``r`` sending to ``rank + r`` and receiving from ``rank - r`` (mod world), so each
rank has one flow in and one out.
Results are identical; which is faster depends on the network (BENCHMARKS.md, issue 20 goal 3).

``transport``: ``"auto"`` (the default) runs the exchange through shared memory when every rank
of a gloo group is a process on this host (same boot, same network, mount, IPC and pid
namespaces) and the tensors are on the CPU (:mod:`.shm_transport`: the buffers live in
``/dev/shm`` segments every rank has mapped, and each rank copies what it receives straight from
its senders' buffers: 0.3–0.6 × gloo's own exchange of the same messages on loopback, where the
process group's path is 1.1–3 ×), and through the process group otherwise (other hosts, ranks in
separate network namespaces, CUDA); ``"group"`` always uses the process group, ``"shm"`` shared
memory or an error. Every choice is made collectively, so all ranks take the same path in
every call. Not for concurrent calls on the same tables from several threads (the scratch is
shared); with shared memory, :func:`release_buffers` must be called on every rank at the same
point, as it sets up the next call's buffers collectively.
"""

from __future__ import annotations

import time
import weakref

import torch
import torch.distributed as dist

from .rank_tables import RankTables
from .shm_transport import ShmPool, shm_group

SCHEDULES = ("batch", "rounds")
TRANSPORTS = ("auto", "shm", "group")
POOL_SIZE = 4  # buffers kept per (tables, width, dtype, device); when all are in use, a new one replaces the oldest


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


def _storage_refs(t: torch.Tensor) -> int | None:
    """References to ``t``'s storage (None where this torch cannot tell: then nothing is reused)."""
    use_count = getattr(torch._C, "_storage_Use_Count", None)
    return None if use_count is None else use_count(t.untyped_storage()._cdata)


class _Layout:
    """What the tables imply, found once per tables: scratch rows, and whether each direction's
    first stage sends only rows its input holds (then it sends from the input, not the buffer)."""

    def __init__(self, tables: RankTables):
        def scratch_rows(stages, accumulate):
            most = 0
            for messages in stages:
                rows = sum(len(s) for _, s, _ in messages if len(s) and _as_range(s) is None)
                rows += sum(len(r) for _, _, r in messages if len(r) and (accumulate or _as_range(r) is None))
                most = max(most, rows)
            return most

        def first_within(stages, limit):
            return bool(stages) and all(int(s.max()) < limit for _, s, _ in stages[0] if len(s))

        self.scratch_rows = max(scratch_rows(tables.forward, False), scratch_rows(tables.backward, True))
        self.forward_from_input = first_within(tables.forward, tables.num_local)
        self.backward_from_input = first_within(tables.backward, tables.num_out)
        self.pools: dict[tuple, _Pool] = {}
        self.shm: dict[tuple, ShmPool | None] = {}  # (group state, width, dtype) -> shared buffers, None: not possible


class _Pool:
    """Buffers of one (tables, width, dtype, device) and the scratch of their stages."""

    def __init__(self, rows: int, width: int, scratch_rows: int, like: torch.Tensor):
        self.rows, self.width, self.like = rows, width, like
        self.kept: list[tuple[torch.Tensor, int]] = []  # (buffer, its storage refs when nothing else holds it)
        self.scratch = like.new_empty((scratch_rows, width))

    def buffer(self, reuse: bool) -> torch.Tensor:
        if reuse:
            for buf, idle in self.kept:
                if _storage_refs(buf) == idle:
                    return buf
        buf = self.like.new_empty((self.rows, self.width))
        idle = _storage_refs(buf) if reuse else None
        if idle is not None:  # the pool forgets its oldest buffer (still in use) when full
            self.kept = self.kept[max(0, len(self.kept) + 1 - POOL_SIZE):] + [(buf, idle)]
        return buf


_LAYOUTS: "weakref.WeakKeyDictionary[RankTables, _Layout]" = weakref.WeakKeyDictionary()


def _layout(tables: RankTables) -> _Layout:
    """The layout of ``tables``, made at its first call."""
    layout = _LAYOUTS.get(tables)
    if layout is None:
        layout = _LAYOUTS[tables] = _Layout(tables)
    return layout


def _pool(tables: RankTables, like: torch.Tensor) -> tuple[_Layout, _Pool]:
    layout = _layout(tables)
    key = (like.shape[1], like.dtype, like.device)
    pool = layout.pools.get(key)
    if pool is None:
        pool = layout.pools[key] = _Pool(tables.buffer_ids.size, like.shape[1], layout.scratch_rows,
                                         like.new_empty(0))
    return layout, pool


def release_buffers(tables: RankTables | None = None) -> None:
    """Drop the pooled buffers and scratch of ``tables`` (of every tables when None); with shared
    memory, on every rank at the same point (the next call sets them up collectively)."""
    if tables is None:
        _LAYOUTS.clear()
    else:
        _LAYOUTS.pop(tables, None)


def _rounds(messages, rank: int, world: int) -> list[list]:
    """The stage's messages as pairwise rounds: round ``r`` sends to ``rank + r`` and receives from
    ``rank - r``; every rank walks the rounds in the same order, so each send meets its receive."""
    by_peer = {peer: (s, r) for peer, s, r in messages}
    empty = messages[0][1][:0]
    out = []
    for r in range(1, world):
        to, frm = (rank + r) % world, (rank - r) % world
        send, recv = by_peer.get(to, (empty, empty))[0], by_peer.get(frm, (empty, empty))[1]
        if len(send) or len(recv):
            out.append([(to, send, empty), (frm, empty, recv)] if to != frm else [(to, send, recv)])
    return out


def _post(buffer, source, messages, accumulate, scratch, counter, group):
    """Post one batch's receives, then its sends; returns (requests, receipts to store after the wait).

    Receives go first: gloo's TCP pair is one connection per peer in both directions, and a
    receive is announced to the sender over it; posted after a large send to the same peer, the
    announcement waits behind that data and the peer's transfer starts only when ours is over
    (an all-to-all on the shaped namespace mesh took 2.1 s instead of 1.2 s)."""
    ops, receipts, used = [], [], 0
    for peer, _, recv_rows in messages:
        if not len(recv_rows):
            continue
        span = None if accumulate else _as_range(recv_rows)
        if span is not None:
            ops.append(dist.P2POp(dist.irecv, buffer.narrow(0, *span), peer, group))
            continue
        inbox = scratch.narrow(0, used, len(recv_rows))
        used += len(recv_rows)
        ops.append(dist.P2POp(dist.irecv, inbox, peer, group))
        receipts.append((torch.as_tensor(recv_rows, device=buffer.device), inbox))
    for peer, send_rows, _ in messages:
        if not len(send_rows):
            continue
        span = _as_range(send_rows)
        if span is not None:
            payload = source.narrow(0, *span)
        else:
            payload = scratch.narrow(0, used, len(send_rows))
            used += len(send_rows)
            torch.index_select(source, 0, torch.as_tensor(send_rows, device=source.device), out=payload)
        ops.append(dist.P2POp(dist.isend, payload, peer, group))
        if counter is not None:
            counter.bytes_sent += payload.numel() * payload.element_size()
    return (dist.batch_isend_irecv(ops) if ops else []), receipts


def _run_stages(buffer, source, fill, stages, accumulate, scratch, counter, group, schedule, rank) -> None:
    """Every stage in order. ``source`` (rows equal to the buffer's first rows) feeds the first
    stage's sends; ``fill()`` writes those rows into the buffer while that stage is on the wire."""
    world = dist.get_world_size(group) if schedule == "rounds" else 0
    for index, messages in enumerate(stages):
        t0 = time.perf_counter()
        batches = [messages] if schedule == "batch" else _rounds(messages, rank, world)
        for b, batch in enumerate(batches):
            first = index == 0 and b == 0
            requests, receipts = _post(buffer, source if index == 0 else buffer, batch, accumulate, scratch,
                                       counter, group)
            if first:
                fill()
            for request in requests:
                request.wait()
            for rows, inbox in receipts:
                if accumulate:
                    buffer.index_add_(0, rows, inbox)
                else:
                    buffer.index_copy_(0, rows, inbox)
        if index == 0 and not batches:
            fill()
        if counter is not None:
            counter.seconds += time.perf_counter() - t0
    if not stages:
        fill()


def _shm_pool(tables: RankTables, like: torch.Tensor, group, transport: str, reuse: bool):
    """The shared-memory pool for this call, or None for the process group's path. Every input
    to the choice is the same on every rank, and the set-ups it triggers are collective."""
    if transport == "group" or not reuse or not dist.is_initialized():
        if transport == "shm":
            raise RuntimeError("graph_allgather: transport='shm' needs an initialised process group and reuse=True")
        return None
    state = shm_group(group)
    pool = None
    if state is not None:
        layout = _layout(tables)
        key = (id(state), like.shape[1], like.dtype)
        if key not in layout.shm:
            layout.shm[key] = ShmPool.make(state, tables, like.shape[1], like.dtype, like.device.type == "cpu")
        pool = layout.shm[key]
    if pool is None and transport == "shm":
        raise RuntimeError("graph_allgather: transport='shm' is not possible here (ranks not on one host, "
                           "not CPU tensors, or not a gloo group)")
    return pool


def _shm_exchange(shm, tables, like, fill, direction, counter, group, schedule) -> torch.Tensor:
    """One call through shared memory: a free shared buffer, ``fill(buffer)``, then every rank reads
    what it receives from its peers' buffers. If some rank has no free shared buffer, every rank
    runs this call through the process group instead."""
    t0 = time.perf_counter()
    call, slot = shm.begin()
    if slot >= 0:
        buffer = shm.slots[slot][0]
    else:
        buffer = _pool(tables, like)[1].buffer(True)
    fill(buffer)
    shm.publish(call, 0)
    slots = shm.slots_of_all(call)
    try:
        if min(slots) >= 0:
            shm.run(buffer, call, slots, direction, direction == "backward", counter)
            if counter is not None:  # the waits and the own rows' copy too, as the other path's stages hold them
                counter.seconds += time.perf_counter() - t0
        else:
            _run_stages(buffer, buffer, lambda: None, getattr(tables, direction), direction == "backward",
                        _pool(tables, like)[1].scratch, counter, group, schedule, tables.rank)
    finally:
        shm.finish(call)
    return buffer


class _GraphAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, tables: RankTables, counter, group, schedule, reuse, transport):
        ctx.tables, ctx.counter, ctx.group, ctx.schedule, ctx.reuse = tables, counter, group, schedule, reuse
        ctx.transport = transport
        shm = _shm_pool(tables, x, group, transport, reuse)
        if shm is not None:
            def own(buffer):
                buffer.narrow(0, 0, tables.num_local).copy_(x)

            return _shm_exchange(shm, tables, x, own, "forward", counter, group, schedule)[: tables.num_out]
        layout, pool = _pool(tables, x)
        buffer = pool.buffer(reuse)  # every row past the own ones is received once: no zeroing
        source = x if layout.forward_from_input else buffer
        own = buffer.narrow(0, 0, tables.num_local)
        if source is buffer:
            own.copy_(x)

        def fill():
            if source is not buffer:
                own.copy_(x)

        _run_stages(buffer, source, fill, tables.forward, False, pool.scratch, counter, group, schedule,
                    tables.rank)
        return buffer[: tables.num_out]  # a view of a buffer no one else holds

    @staticmethod
    def backward(ctx, grad_out):
        tables = ctx.tables
        grad_out = grad_out.contiguous()
        none = (None,) * 6
        shm = _shm_pool(tables, grad_out, ctx.group, ctx.transport, ctx.reuse)
        if shm is not None:
            def gradients(buffer):
                buffer[: tables.num_out] = grad_out
                buffer[tables.num_out:] = 0

            return (_shm_exchange(shm, tables, grad_out, gradients, "backward", ctx.counter, ctx.group,
                                  ctx.schedule)[: tables.num_local], *none)
        layout, pool = _pool(tables, grad_out)
        buffer = pool.buffer(ctx.reuse)
        source = grad_out if layout.backward_from_input else buffer

        def fill():
            buffer[: tables.num_out] = grad_out
            buffer[tables.num_out:] = 0  # relay rows add what their subtrees send back

        if source is buffer:
            fill()
        _run_stages(buffer, source, fill if source is not buffer else (lambda: None), tables.backward, True,
                    pool.scratch, ctx.counter, ctx.group, ctx.schedule, tables.rank)
        return (buffer[: tables.num_local], *none)


def graph_allgather(x: torch.Tensor, tables: RankTables, counter: CommCounter | None = None,
                    group=None, *, schedule: str = "batch", reuse: bool = True,
                    transport: str = "auto") -> torch.Tensor:
    """Own + halo embeddings of this rank.

    Args:
        x: ``(num_local, D)`` embeddings of the rank's own vertices (ascending global id).
        tables: from :func:`~netweave.runtime.rank_tables.rank_tables` for this rank.
        counter: optional :class:`CommCounter` accumulating bytes sent and communication time.
        group: process group (default: the world).
        schedule: ``"batch"`` (all of a stage's transfers at once) or ``"rounds"`` (pairwise
            rounds, one peer in and one out at a time); same result.
        reuse: take buffers from the pool (only ones no live tensor references); False allocates
            a fresh buffer per call (and uses the process group).
        transport: ``"auto"`` (shared memory where every rank of a gloo group is on this host
            and the tensors are on the CPU, else the process group), ``"shm"`` (shared memory or
            an error), ``"group"`` (the process group's point-to-point ops, ``schedule`` applies).

    Returns:
        ``(num_local + num_halo, D)`` rows in the local numbering of ``G_d``.
    """
    if x.shape[0] != tables.num_local:
        raise ValueError(f"graph_allgather: {x.shape[0]} rows given, rank {tables.rank} owns {tables.num_local}")
    if schedule not in SCHEDULES:
        raise ValueError(f"graph_allgather: schedule {schedule!r} is not one of {SCHEDULES}")
    if transport not in TRANSPORTS:
        raise ValueError(f"graph_allgather: transport {transport!r} is not one of {TRANSPORTS}")
    return _GraphAllgather.apply(x.contiguous(), tables, counter, group, schedule, reuse, transport)
