"""Traffic of one layer's propagation under the host-based and the strawman strategies.

Assumptions (switchgnn.txt §2.3, §3.1): all workers hang off one switch; a feature is
``feature_bytes`` (D values × 4 B); an aggregator holds one 128-byte chunk, so a destination vertex
occupies ``ceil(feature_bytes / 128)`` aggregators and the switch has ``memory // 128`` of them.

* ``host`` (BNS-GCN with p = 1): sender ``u`` sends one copy up and down per remote worker that
  owns a neighbour of ``u``; the destination host sums.
* ``straw`` (§2.3.2): the switch copies each arriving feature into the aggregators of its
  destinations, allocating one on first use. With no free aggregator the copy goes down to the
  destination's host unaggregated (one message per sender and worker). A per-vertex counter (switch
  metadata, not aggregator memory) remembers bypassed copies, so an aggregator opened later completes
  when ``received + bypassed == need``; it is then released and its partial sum goes down. The host
  adds partial sums and bypassed copies, so the result is exact. Unlimited memory is the ``UL`` case:
  every boundary vertex goes up once and every destination receives one sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import NetweaveError
from .boundary import BoundaryRelation

AGGREGATOR_BYTES = 128
# aggregator memory of a switch when nothing names one (switchgnn.txt §6 uses 10-100 MB); the one
# value that scenarios.defaults re-exports and every layer's default takes
SWITCH_MEMORY_BYTES = 100_000_000


@dataclass(frozen=True)
class Traffic:
    """Messages on every host link (one message = one feature of ``feature_bytes``).

    Attributes:
        up, down: ``(M,)`` messages each worker sends to / receives from the switch.
        unaggregated: copies the switch forwarded without aggregating (0 for ``host``: all are).
        peak_aggregators: most aggregators in use at once.
        sums: ``(n, D)`` delivered remote-neighbour sums when values were carried, else ``None``.
    """

    up: np.ndarray
    down: np.ndarray
    unaggregated: int
    peak_aggregators: int
    feature_bytes: int
    sums: np.ndarray | None = None

    @property
    def traffic_bytes(self) -> int:
        """Bytes over all host links, both directions."""
        return int(self.up.sum() + self.down.sum()) * self.feature_bytes


def host_traffic(rel: BoundaryRelation, feature_bytes: int, values: np.ndarray | None = None) -> Traffic:
    """Host-based multicast and aggregation; ``values`` ``(n, D)`` are carried when given."""
    u, w = rel.sender_worker_pairs()
    m = rel.num_workers
    sums = None
    if values is not None:  # host w adds the copy of u into every v of w with u in N(v)
        sums = np.zeros_like(values, dtype=np.float64)
        np.add.at(sums, rel.dst, values[rel.senders()])
    return Traffic(np.bincount(rel.parts[u], minlength=m), np.bincount(w, minlength=m), int(u.size), 0,
                   feature_bytes, sums)


@numba.njit(cache=True)
def _straw(order, send_ptr, dst, need, parts, m, capacity, chunks, values, sums):
    n = need.size
    has = np.zeros(n, dtype=np.bool_)
    received = np.zeros(n, dtype=np.int64)
    bypassed = np.zeros(n, dtype=np.int64)
    up = np.zeros(m, dtype=np.int64)
    down = np.zeros(m, dtype=np.int64)
    stamp = np.full(m, -1, dtype=np.int64)  # last sender that bypassed to each worker
    agg = np.zeros((n, values.shape[1]))
    free, peak, unaggregated = capacity, 0, 0
    for u in order:
        up[parts[u]] += 1
        for e in range(send_ptr[u], send_ptr[u + 1]):
            v = dst[e]
            if not has[v] and received[v] == 0 and free >= chunks:
                has[v] = True
                free -= chunks
                peak = max(peak, capacity - free)
            if has[v]:
                received[v] += 1
                agg[v] += values[u]
                if received[v] + bypassed[v] == need[v]:  # complete: release, send the sum down
                    has[v] = False
                    free += chunks
                    down[parts[v]] += 1
                    sums[v] += agg[v]
            else:
                bypassed[v] += 1
                sums[v] += values[u]
                w = parts[v]
                if stamp[w] != u:
                    stamp[w] = u
                    down[w] += 1
                    unaggregated += 1
    return up, down, unaggregated, peak


def straw_traffic(rel: BoundaryRelation, feature_bytes: int, memory_bytes: int | None, order: np.ndarray,
                  values: np.ndarray | None = None) -> Traffic:
    """The strawman with ``memory_bytes`` of aggregators (``None``: unlimited, the UL case), senders
    arriving in ``order`` (boundary vertices; see :func:`interleave`); ``values`` carried when given."""
    if feature_bytes < 1:
        raise NetweaveError(f"feature size {feature_bytes} B must be positive")
    chunks = -(-feature_bytes // AGGREGATOR_BYTES)
    capacity = np.iinfo(np.int64).max // 2 if memory_bytes is None else int(memory_bytes) // AGGREGATOR_BYTES
    if capacity < 0:
        raise NetweaveError(f"switch memory {memory_bytes} B must not be negative")
    carried = np.zeros((rel.parts.size, 0)) if values is None else np.asarray(values, dtype=np.float64)
    sums = np.zeros_like(carried)
    up, down, unaggregated, peak = _straw(np.asarray(order, dtype=np.int64), rel.send_ptr, rel.dst, rel.need,
                                          rel.parts, rel.num_workers, capacity, chunks, carried, sums)
    return Traffic(up, down, int(unaggregated), int(peak), feature_bytes, None if values is None else sums)


def interleave(rel: BoundaryRelation, orders: list[np.ndarray]) -> np.ndarray:
    """One arrival sequence from per-worker sending orders: all workers send at the same rate, so
    the ``i``-th vertex of every worker arrives before the ``(i+1)``-th of any (ties by worker)."""
    if len(orders) != rel.num_workers:
        raise NetweaveError(f"{len(orders)} orders for {rel.num_workers} workers")
    rank = np.concatenate([np.arange(o.size) for o in orders])
    worker = np.concatenate([np.full(o.size, w) for w, o in enumerate(orders)])
    seq = np.concatenate(orders).astype(np.int64)
    return seq[np.lexsort((worker, rank))]


def random_orders(rel: BoundaryRelation, seed: int) -> list[np.ndarray]:
    """Each worker's boundary vertices in a random order (the strawman's best-effort upload)."""
    rng = np.random.default_rng(seed)
    boundary = rel.boundary()
    owner = rel.parts[boundary]
    return [rng.permutation(boundary[owner == w]) for w in range(rel.num_workers)]
