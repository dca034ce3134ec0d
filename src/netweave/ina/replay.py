"""A whole :class:`~netweave.ina.plan.InaPlan` replayed on one switch (:func:`plan_replay`): per block
the peak of open aggregators and the messages on every host link, under the interleaved arrival
order of :mod:`.occupancy`; the cost model that picks a blocking (:mod:`.choose`) prices plans with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.counting import compact_ids
from .occupancy import UNLIMITED, interleaved, replay_arrivals
from .layer_plan import InaPlan


@dataclass(frozen=True, eq=False)
class Replay:
    """Per block ``b`` and worker ``h``: ``up``/``down`` ``(B, M)`` messages on the host links;
    ``peak_aggregators`` ``(B,)`` most aggregators open at once; ``unaggregated`` ``(B,)``;
    ``drained_s`` ``(B, M)`` when the switch has sent the block's last message down to each host
    (block-relative; zeros unless rates were given)."""

    up: np.ndarray
    down: np.ndarray
    peak_aggregators: np.ndarray
    unaggregated: np.ndarray
    drained_s: np.ndarray

    @property
    def messages(self) -> int:
        return int(self.up.sum() + self.down.sum())


def plan_replay(plan: InaPlan, capacity: int | None = None, up_rate: np.ndarray | None = None,
                down_rate: np.ndarray | None = None) -> Replay:
    """Replay every block of ``plan`` on one switch of ``capacity`` aggregators (``None``: unlimited);
    workers send their units of a block in the plan's order, interleaved. With ``up_rate`` and
    ``down_rate`` ``(M,)`` (bytes/s), unit ``i`` of a worker reaches the switch when its NIC has sent
    ``i + 1`` messages, and messages down queue on their host's link (``drained_s``)."""
    m, nb = plan.num_workers, plan.num_blocks
    chunks = -(-plan.feature_bytes // 128)
    counts = np.diff(plan.unit_ptr)
    key = np.repeat(np.arange(m * nb), counts)
    rank = np.arange(plan.num_units) - np.repeat(plan.unit_ptr[:-1], counts)
    arrival_ptr = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(np.bincount(key % nb, minlength=nb), out=arrival_ptr[1:])
    sizes = (plan.dest_hi - plan.dest_lo)[np.argsort(plan.dest_lo)]  # the ranges tile ``in_edges``
    need = np.empty(plan.dst.size, dtype=np.int64)
    need[plan.in_edges] = np.repeat(sizes, sizes)
    dest_ids, place = compact_ids(plan.parts.size, plan.dst)
    dest = place[plan.dst]
    worker = key // nb
    up_s = np.zeros(m) if up_rate is None else plan.feature_bytes / np.asarray(up_rate, dtype=float)
    down_s = np.zeros(m) if down_rate is None else plan.feature_bytes / np.asarray(down_rate, dtype=float)
    at = (rank + 1) * up_s[worker]
    same_rate = np.all(up_s == up_s[0])  # then arrival times are in the order of the ranks
    arrival = interleaved(worker, rank if same_rate else at, key % nb)
    return Replay(*replay_arrivals(arrival, arrival_ptr, plan.unit_lo, plan.unit_hi, plan.unit_to, worker, at,
                           dest, need, plan.parts[plan.dst], m, UNLIMITED if capacity is None else int(capacity), chunks,
                           dest_ids.size, down_s,
                           np.zeros(plan.dst.size, bool) if plan.forward is None else plan.forward[plan.dst]))
