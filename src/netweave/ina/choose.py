"""SwitchGNN's blocking chosen per layer by a cost model (beyond the paper).

The paper cuts the boundary into multi-level METIS blocks whenever the switch cannot hold every
destination (§3.3) and accepts a barrier per block. Measured, that loses to the strawman in many
regimes: every block re-sends its senders and pays a barrier. Here each candidate
(:data:`~netweave.ina.plan.BLOCKINGS` without ``paper``, each with and without double-buffered
blocks, all of them forwarding the destinations an aggregator cannot help
(:mod:`~netweave.ina.forward`), one block without that too, and plain host-based exchange) is
planned and priced, and the cheapest predicted completion wins (ties within 1 % by traffic).

The cost model (all assumptions here):

* **Messages** per block and host link come from :func:`~netweave.ina.occupancy.plan_replay`: the
  switch's best-effort aggregators replayed exactly under the interleaved arrival of the plan's
  orders, on the smallest switch's memory (half of it per block with overlap). On a star with no
  loss this is the simulator's traffic exactly when arrivals interleave as assumed.
* **Time** of block ``b``: ``D_b = max_h max(up_bh / r_up_h, down_bh / r_down_h) × F``; a message
  needs ``L`` (store and forward over the path's links plus their propagation delay) from its
  host's NIC to its destination host, and a barrier ``S`` (DONE up to the coordinating switch,
  NEXT down) costs two propagation delays of that path.
* **Barrier** blocks: block ``b + 1`` starts ``D_b + L + S`` after block ``b``.
  **Overlap**: block ``b + 1`` starts when block ``b`` is sent, but block ``b + 2`` not before block
  ``b`` is complete everywhere: ``start_{b+2} = max(start_{b+1} + D_{b+1}, start_b + D_b + L + S)``.
  The layer completes ``D_last + L`` after the last block starts.

A METIS candidate that would need more blocks than could possibly beat the best candidate so far
(each barrier block costs at least ``L + S``; overlapped, every other block does) is stopped early
and reported as pruned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from .blocks import TooManyBlocks
from .boundary import BoundaryRelation
from .occupancy import Replay, plan_replay
from .plan import BLOCKINGS, InaPlan, ina_plan
from .strategies import AGGREGATOR_BYTES

# what the choice considers, cheapest to plan first; "host" is BNS-GCN's exchange
CANDIDATES = ("single", "destination", "hybrid", "multilevel")


@dataclass(frozen=True)
class PathModel:
    """The network as the cost model sees it: ``up``/``down`` ``(M,)`` host line rates (bytes/s),
    ``latency_s`` one message from NIC to host (``L``), ``barrier_s`` DONE up plus NEXT down (``S``)."""

    up: np.ndarray
    down: np.ndarray
    latency_s: float
    barrier_s: float

    @classmethod
    def of(cls, net, feature_bytes: int) -> "PathModel":
        """From a :class:`~netweave.sim.network.SimNetwork`: the longest host-to-host path (through a
        spine when there is one), every link store-and-forwarding one ``feature_bytes`` message."""
        m = net.num_hosts
        hops = [net.rate[:m].min(), net.rate[m:2 * m].min()]
        delay = 2 * float(net.delay[:2 * m].max())
        if net.num_spines:
            core = net.rate[2 * m:]
            hops += [core.min(), core.min()]
            delay += 2 * float(net.delay[2 * m:].max())
        latency = delay + sum(feature_bytes / r for r in hops)
        return cls(net.rate[:m].astype(float), net.rate[m:2 * m].astype(float), latency, delay)

    def block_times(self, replay: Replay, feature_bytes: int) -> np.ndarray:
        """``(B,)`` ``D_b``: until the busiest host link has sent its part of each block, up (its
        messages back to back) or down (queued as the replay released them)."""
        up = (replay.up / self.up).max(axis=1) * feature_bytes if replay.up.size else np.zeros(replay.up.shape[0])
        return np.maximum(up, replay.drained_s)

    def completion(self, replay: Replay, feature_bytes: int, overlap: bool) -> float:
        """Predicted completion (s) of a plan whose blocks replayed as ``replay``."""
        d = self.block_times(replay, feature_bytes)
        start = np.zeros(d.size)
        gap = self.latency_s + self.barrier_s
        for b in range(1, d.size):
            if not overlap:
                start[b] = start[b - 1] + d[b - 1] + gap
            elif b == 1:
                start[b] = d[0]
            else:
                start[b] = max(start[b - 1] + d[b - 1], start[b - 2] + d[b - 2] + gap)
        return float(start[-1] + d[-1] + self.latency_s) if d.size else 0.0

    def max_useful_blocks(self, best_s: float, overlap: bool) -> int:
        """More blocks than this cannot complete before ``best_s``."""
        per = (self.latency_s + self.barrier_s) / (2 if overlap else 1)
        return max(int(best_s / per) + 1, 1) if np.isfinite(best_s) else np.iinfo(np.int64).max


@dataclass(frozen=True)
class Candidate:
    """One priced candidate: ``blocking`` (a :data:`~netweave.ina.plan.BLOCKINGS` name or ``host``),
    ``overlap``, ``forward`` (destinations without gain forwarded), its blocks, predicted
    ``traffic_bytes`` and ``completion_s``, and planning time; ``pruned``: stopped early because it
    could not beat the best (then the costs are ``None``)."""

    blocking: str
    overlap: bool
    forward: bool
    num_blocks: int | None
    traffic_bytes: int | None
    completion_s: float | None
    plan_time_s: float
    pruned: bool = False

    def summary(self) -> dict:
        return {"blocking": self.blocking, "overlap": self.overlap, "forward": self.forward, "num_blocks": self.num_blocks,
                "predicted_traffic_bytes": self.traffic_bytes, "predicted_completion_s": self.completion_s,
                "plan_time_s": self.plan_time_s, "pruned": self.pruned}


@dataclass(frozen=True, eq=False)
class Choice:
    """The chosen ``plan``, its :class:`Candidate` and every candidate priced."""

    plan: InaPlan
    chosen: Candidate
    candidates: tuple[Candidate, ...]

    def summary(self) -> dict:
        return {"blocking": self.chosen.blocking, "overlap": self.chosen.overlap, "forward": self.chosen.forward,
                "predicted_completion_s": self.chosen.completion_s,
                "predicted_traffic_bytes": self.chosen.traffic_bytes,
                "candidates": [c.summary() for c in self.candidates]}


def price(plan: InaPlan, model: PathModel, capacity: int | None) -> tuple[int, float]:
    """Predicted traffic (bytes over the host links) and completion (s) of ``plan``."""
    replay = plan_replay(plan, capacity, model.up, model.down)
    return replay.messages * plan.feature_bytes, model.completion(replay, plan.feature_bytes, plan.overlap)


def choose_plan(rel: BoundaryRelation, net, feature_bytes: int, memory_bytes: int | np.ndarray,
                edge_memory: np.ndarray | None = None, order: str = "gamr", seed: int = 0, start: int | None = None,
                candidates: tuple[str, ...] = CANDIDATES, overlap: tuple[bool, ...] = (False, True),
                host: bool = True) -> Choice:
    """Plan every candidate blocking (× ``overlap``, plus ``host`` exchange) for ``memory_bytes`` and
    return the one with the least predicted completion (see the module docstring)."""
    unknown = sorted(set(candidates) - set(BLOCKINGS))
    if unknown:
        raise NetweaveError(f"unknown blocking {unknown[0]!r}; use one of {', '.join(BLOCKINGS)}")
    if memory_bytes is None:
        raise NetweaveError("switchgnn needs a finite --switch-memory (its blocks are sized to it)")
    model = PathModel.of(net, feature_bytes)
    smallest = int(np.min(memory_bytes)) // AGGREGATOR_BYTES
    priced: list[tuple[Candidate, InaPlan | None]] = []
    best = np.inf

    def add(blocking: str, ov: bool, fw: bool, build) -> None:
        nonlocal best
        t0 = time.perf_counter()
        try:
            plan = build()
        except TooManyBlocks:
            priced.append((Candidate(blocking, ov, fw, None, None, None, time.perf_counter() - t0, True), None))
            return
        traffic, completion = price(plan, model, smallest // 2 if plan.overlap else smallest)
        priced.append((Candidate(blocking, plan.overlap, fw, plan.num_blocks, traffic, completion,
                                 time.perf_counter() - t0), plan))
        best = min(best, completion)

    if host:
        add("host", False, False, lambda: ina_plan(rel, "host", feature_bytes, order=order, seed=seed, start=start))
    halves = smallest // 2 >= -(-feature_bytes // AGGREGATOR_BYTES)  # half the memory holds a destination
    for blocking in candidates:
        for ov in ((False,) if blocking == "single" or not halves else overlap):
            for fw in ((False, True) if blocking == "single" else (True,)):
                limit = model.max_useful_blocks(best, ov)
                add(blocking, ov, fw, lambda: ina_plan(rel, "switchgnn", feature_bytes, memory_bytes, order, seed, start,
                                                       edge_memory, blocking, ov, max_blocks=limit, forward=fw))
    live = [(c, p) for c, p in priced if not c.pruned]
    fastest = min(c.completion_s for c, _ in live)
    chosen, plan = min(((c, p) for c, p in live if c.completion_s <= fastest * 1.01),
                       key=lambda cp: (cp[0].traffic_bytes, cp[0].completion_s))
    return Choice(plan, chosen, tuple(c for c, _ in priced))
