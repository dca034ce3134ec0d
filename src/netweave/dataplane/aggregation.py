"""The two-map aggregation state machine of PAHInA's aggregation service (pahina.txt §IV-B, Figure 3b).

Keyed by ``(epoch_id, tensor_id, precision)`` (precisions never mix: hierarchical aggregation):
- the *state map* holds the bitmap of workers seen (``Wor_list``) and the timer deadline;
- the *data map* holds the running fixed-point sum, exact in int64 (saturated to the precision's
  container — int16, int32, int64 — once the sum is complete: order-independent, see :mod:`.fixedpoint`).

The first packet of a key seeds both maps (a key already completed in the current or the previous
epoch is not restarted: its late duplicates and resends are rejected, and its result is kept so it
can be sent again if the PS asks — a two-epoch window of finished tasks). A later packet from a worker already in the bitmap is a
duplicate and is rejected. The packet that fills the bitmap is the last: it carries the result on
and both entries are freed. A per-key timer that expires names the workers still missing, so that
they can be NACKed and resend; the timer is then re-armed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import fixedpoint

Key = tuple[int, int, str]


@dataclass
class Counters:
    accepted: int = 0
    duplicates: int = 0
    results: int = 0
    saturated: int = 0
    mismatched: int = 0
    unknown_workers: int = 0


@dataclass
class AggregationState:
    """Aggregates the DATA packets of ``workers`` (``wor_id`` -> precision) for one aggregator; a
    (tensor, precision) completes when every worker of that precision has contributed."""

    workers: dict[int, str]
    timeout_s: float = 0.05
    state: dict[Key, tuple[int, float]] = field(default_factory=dict)  # key -> (bitmap, deadline)
    data: dict[Key, np.ndarray] = field(default_factory=dict)  # int64 running sums
    completed: dict[Key, tuple[np.ndarray, bool]] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)

    def __post_init__(self):
        self._newest_epoch = -1
        self.bit = {w: 1 << i for i, w in enumerate(sorted(self.workers))}
        self.full: dict[str, int] = {}
        for w, p in self.workers.items():
            self.full[p] = self.full.get(p, 0) | self.bit[w]

    def accept(self, wor_id: int, epoch: int, tensor: int, precision: str, values: np.ndarray,
               now: float) -> tuple[np.ndarray, bool] | None:
        """One DATA packet; returns ``(sum in the precision's container, saturated)`` when it was the
        last one, else None."""
        if self.workers.get(wor_id) != precision:  # not ours, or not at the precision it was assigned
            self.counters.unknown_workers += 1
            return None
        key = (epoch, tensor, precision)
        if key in self.completed:
            self.counters.duplicates += 1
            return None
        if key not in self.state:  # first packet: seed both maps and start the timer
            self.state[key] = (self.bit[wor_id], now + self.timeout_s)
            self.data[key] = values.astype(np.int64)
        else:
            bitmap, deadline = self.state[key]
            if bitmap & self.bit[wor_id]:
                self.counters.duplicates += 1
                return None
            if values.size != self.data[key].size:
                self.counters.mismatched += 1
                return None
            self.data[key] = fixedpoint.accumulate(self.data[key], values)
            self.state[key] = (bitmap | self.bit[wor_id], deadline)
        self.counters.accepted += 1
        if self.state[key][0] == self.full[precision]:  # the last packet carries the result; free both entries
            del self.state[key]
            total, sat = fixedpoint.saturate(self.data.pop(key), precision)
            saturated = sat > 0
            self.counters.saturated += sat
            if epoch > self._newest_epoch:  # a new epoch: forget what finished two epochs ago (once, not per key)
                self._newest_epoch = epoch
                self.completed = {k: v for k, v in self.completed.items() if k[0] >= epoch - 1}
            self.completed[key] = (total, saturated)
            self.counters.results += 1
            return total, saturated
        return None

    def expired(self, now: float) -> list[tuple[Key, list[int]]]:
        """Keys whose timer ran out, with their missing workers; their timers are re-armed."""
        out = []
        for key, (bitmap, deadline) in list(self.state.items()):
            if now >= deadline:
                out.append((key, [w for w, b in self.bit.items() if self.full[key[2]] & b and not bitmap & b]))
                self.state[key] = (bitmap, now + self.timeout_s)
        return out
