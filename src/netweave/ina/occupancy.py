"""The switch's aggregators replayed under an arrival order: peak occupancy and per-host messages.

Beyond the paper: SwitchGNN sizes a block by its total destination demand (§3.3), but under GAMR
order (§3.2.2) a destination's aggregator is open only from its first to its last contribution,
so far fewer aggregators are alive at once. This module computes that occupancy exactly, for
block sizing (:func:`edge_set_peak`) and, through :func:`~netweave.ina.replay.plan_replay`, for
the cost model that picks a blocking (:mod:`~netweave.ina.choose`).

The arrival model is :func:`~netweave.ina.strategies.interleave`'s: all workers send at the same
rate, so the ``i``-th unit of every worker arrives before the ``(i+1)``-th of any (ties by worker).
A switch holds ``capacity`` 128-byte aggregators; a destination takes ``chunks`` of them from its
first aggregated contribution until all ``need`` edges of its block arrived, exactly as
:func:`~netweave.ina.strategies.straw_traffic` and the simulator's switch do (best effort: with no
free aggregator a contribution bypasses, one copy per (unit, destination worker)).
"""

from __future__ import annotations


import numba
import numpy as np

from ..graph.counting import compact_ids, counting_lexsort

UNLIMITED = np.iinfo(np.int64).max // 4


@numba.njit(cache=True)
def replay_arrivals(arrival, arrival_ptr, unit_lo, unit_hi, unit_to, unit_worker, unit_time, dest, need, owner, m, capacity,
            chunks, num_dest, down_time, forward):
    """Blocks ``b`` replay units ``arrival[arrival_ptr[b]:arrival_ptr[b+1]]`` on fresh aggregators.

    Unit ``u`` carries edges ``unit_lo[u]:unit_hi[u]`` to compact destinations ``dest[e]`` (``need[e]``:
    the destination's edges in the block; ``owner[e]``: its worker); ``unit_to[u] >= 0`` is a host
    unicast (no aggregation); an edge with ``forward[e]`` is never aggregated. It reaches the switch ``unit_time[u]`` seconds into its block; every
    message down to host ``w`` then queues on ``w``'s link for ``down_time[w]`` seconds. Returns
    ``up, down (B, M)`` messages, ``peak (B,)`` aggregators, ``unaggregated (B,)`` messages and
    ``drained (B, M)``, when the block's last message down to each host has left the switch (s,
    block-relative; 0 for none).
    """
    nb = arrival_ptr.size - 1
    up = np.zeros((nb, m), dtype=np.int64)
    down = np.zeros((nb, m), dtype=np.int64)
    peak = np.zeros(nb, dtype=np.int64)
    unagg = np.zeros(nb, dtype=np.int64)
    drained = np.zeros((nb, m))
    has = np.zeros(num_dest, dtype=np.bool_)
    received = np.zeros(num_dest, dtype=np.int64)
    bypassed = np.zeros(num_dest, dtype=np.int64)
    stamp = np.full(m, -1, dtype=np.int64)
    free_at = np.zeros(m)
    for b in range(nb):
        free = capacity
        free_at[:] = 0.0
        for i in range(arrival_ptr[b], arrival_ptr[b + 1]):
            u = arrival[i]
            t = unit_time[u]
            up[b, unit_worker[u]] += 1
            if unit_to[u] >= 0:
                down[b, unit_to[u]] += 1
                free_at[unit_to[u]] = max(free_at[unit_to[u]], t) + down_time[unit_to[u]]
                unagg[b] += 1
                continue
            for e in range(unit_lo[u], unit_hi[u]):
                v = dest[e]
                if not has[v] and received[v] == 0 and free >= chunks and not forward[e]:
                    has[v] = True
                    free -= chunks
                    peak[b] = max(peak[b], capacity - free)
                if has[v]:
                    received[v] += 1
                    if received[v] + bypassed[v] == need[e]:
                        has[v] = False
                        free += chunks
                        down[b, owner[e]] += 1
                        free_at[owner[e]] = max(free_at[owner[e]], t) + down_time[owner[e]]
                else:
                    bypassed[v] += 1
                    w = owner[e]
                    if stamp[w] != u:
                        stamp[w] = u
                        down[b, w] += 1
                        free_at[w] = max(free_at[w], t) + down_time[w]
                        unagg[b] += 1
        for i in range(arrival_ptr[b], arrival_ptr[b + 1]):  # fresh state for the next block
            u = arrival[i]
            for e in range(unit_lo[u], unit_hi[u]):
                v = dest[e]
                has[v] = False
                received[v] = 0
                bypassed[v] = 0
        stamp[:] = -1
        drained[b] = free_at
    return up, down, peak, unagg, drained


def interleaved(worker: np.ndarray, rank: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
    """Indices of units sorted into arrival order: by ``group`` (the block), then by ``rank`` in its
    worker's sequence, then by ``worker``."""
    keys = (worker, rank) if group is None else (worker, rank, group)
    if rank.dtype.kind == "f":
        return np.lexsort(keys)
    return counting_lexsort(keys)


def worker_rank(worker: np.ndarray, position: np.ndarray) -> np.ndarray:
    """``(U,)`` each unit's place in its worker's sending sequence, the worker sending by ascending
    ``position`` (ties by index)."""
    by = np.lexsort((position, worker)) if position.dtype.kind == "f" else counting_lexsort((position, worker))
    first = np.zeros(int(worker.max(initial=-1)) + 2, dtype=np.int64)  # each worker's first place in ``by``
    np.cumsum(np.bincount(worker, minlength=first.size - 1), out=first[1:])
    rank = np.empty(worker.size, dtype=np.int64)
    rank[by] = np.arange(worker.size) - first[worker[by]]
    return rank


def edge_set_peak(sender: np.ndarray, dst: np.ndarray, parts: np.ndarray, position: np.ndarray, chunks: int) -> int:
    """Most aggregators open at once when the edges ``sender -> dst`` go up as one block, every
    worker sending its senders by ascending ``position`` ``(E,)`` (one multicast unit per sender),
    interleaved, on a switch with unlimited memory."""
    if sender.size == 0:
        return 0
    n, m = parts.size, int(parts.max()) + 1
    key = (sender * m + parts[dst]) * n + dst  # a multicast walks its destinations by (owner, id), as the switch does
    if np.any(key[1:] < key[:-1]):  # not in a relation's (sender, owner, dst) order yet
        order = np.argsort(key)
        sender, dst, position = sender[order], dst[order], position[order]
    del key
    starts = np.flatnonzero(np.r_[True, sender[1:] != sender[:-1]])
    lo, hi = starts, np.append(starts[1:], sender.size)
    worker = parts[sender[lo]]
    rank = worker_rank(worker, position[lo])
    arrival = interleaved(worker, rank)
    dest_ids, place = compact_ids(n, dst)
    dest = place[dst]
    need = np.bincount(dest, minlength=dest_ids.size)[dest]
    peak = replay_arrivals(arrival, np.array([0, lo.size], dtype=np.int64), lo, hi, np.full(lo.size, -1, np.int64), worker,
                   np.zeros(lo.size), dest, need, parts[dst], m, UNLIMITED, chunks, dest_ids.size, np.zeros(m),
                   np.zeros(dst.size, dtype=np.bool_))[2]
    return int(peak[0])
