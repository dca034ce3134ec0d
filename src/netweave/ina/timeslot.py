"""The time-slot model of SwitchGNN's multicast ordering (switchgnn.txt §3.2.1, equations 3–6).

``n`` vertices reach the switch in a sequence ``S``, ``k`` per time slot (eq. 3: vertex at 0-based
position ``i`` arrives in slot ``i // k + 1``). Each aggregator collects the features of a fixed set
of senders and completes in the slot its last sender arrives; ``f(t)`` counts the aggregators
completing in slot ``t`` (eq. 4). Completed results queue at the switch, ``k`` leave per slot:
``Q(t) = max(f(t) + Q(t-1) - k, 0)`` with ``Q(0) = 0`` (eq. 5, a Lindley recursion). The job ends
at ``z = ceil(n/k) + ceil(Q(ceil(n/k)) / k)`` (eq. 6).

For a plain graph, vertex ``v``'s aggregator sums its neighbours' features (senders = ``N(v)``);
a vertex without neighbours has no aggregator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError


@dataclass(frozen=True)
class TimeslotResult:
    """``f`` and ``Q`` for slots ``1..T`` (``(T,)`` arrays, index ``t-1``), ``T = ceil(n/k)``, and ``z``."""

    f: np.ndarray
    Q: np.ndarray
    z: int


def lindley(f: np.ndarray, k: int) -> np.ndarray:
    """``Q(t) = max(f(t) + Q(t-1) - k, 0)``, ``Q(0) = 0``, vectorised: with ``S = cumsum(f - k)``,
    ``Q(t) = S(t) - min(0, min_{s <= t} S(s))``."""
    s = np.cumsum(np.asarray(f, dtype=np.int64) - k)
    return s - np.minimum(np.minimum.accumulate(s), 0)


def timeslot_model(order: np.ndarray, need_ptr: np.ndarray, need: np.ndarray, k: int = 1) -> TimeslotResult:
    """Evaluate eqs. 3–6 for sending order ``order`` (``(n,)``, a permutation of the senders).

    Args:
        need_ptr, need: CSR of the aggregators: aggregator ``a`` needs senders
            ``need[need_ptr[a]:need_ptr[a+1]]``; aggregators needing nothing are ignored.
        k: packets entering and leaving the switch per slot.
    """
    if k < 1:
        raise NetweaveError(f"k={k} must be at least 1")
    n = order.size
    if n == 0:
        return TimeslotResult(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    if not np.array_equal(np.sort(order), np.arange(n)):
        raise NetweaveError("the order must be a permutation of the vertices")
    slots = -(-n // k)
    counts = np.diff(need_ptr)
    used = counts > 0
    arrival = position[need] // k + 1  # eq. 3
    last = np.maximum.reduceat(arrival, need_ptr[:-1][used]) if used.any() else np.zeros(0, np.int64)
    f = np.bincount(last - 1, minlength=slots)  # eq. 4
    q = lindley(f, k)  # eq. 5
    return TimeslotResult(f, q, int(slots + -(-int(q[-1]) // k)))  # eq. 6


def graph_timeslot(indptr: np.ndarray, indices: np.ndarray, order: np.ndarray, k: int = 1) -> TimeslotResult:
    """:func:`timeslot_model` where every vertex's aggregator needs its neighbours (a CSR graph)."""
    return timeslot_model(order, indptr, indices, k)
