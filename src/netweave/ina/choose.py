"""SwitchGNN's blocking chosen per layer by a cost model (beyond the paper).

The paper cuts the boundary into multi-level METIS blocks whenever the switch cannot hold every
destination (§3.3) and accepts a barrier per block. Measured, that loses to the strawman in many
regimes: every block re-sends its senders and pays a barrier. Here each candidate
(:data:`~netweave.ina.plan.BLOCKINGS` without ``paper``, each with and without double-buffered
blocks, all of them forwarding the destinations an aggregator cannot help
(:mod:`~netweave.ina.forward`); one block also without that and in random order, the strawman's;
one block where the switch only multicasts; and plain host-based exchange) is planned and priced.
Among the candidates predicted at least as good as both baselines (host-based exchange and the
strawman, which are candidates themselves) in traffic and in completion — all of them when none
is — the fastest predicted wins, ties within 1 % going to the least traffic.

The cost model (all assumptions here):

* **Messages** per block and host link come from :func:`~netweave.ina.replay.plan_replay`: the
  switch's best-effort aggregators replayed exactly under the interleaved arrival of the plan's
  orders, on the smallest switch's memory (half of it per block with overlap). On a star with no
  loss this is the simulator's traffic exactly when arrivals interleave as assumed.
* **Time**: unit ``i`` of a host reaches the switch when its NIC has sent ``i + 1`` messages, and
  every message down queues on its host's link (the replay's drain ``R_b`` per block). A message
  needs ``L`` (store and forward over the path's links plus their propagation delay) from the
  switch's queue to its host, and a barrier ``S`` (DONE up to the coordinating switch, NEXT down)
  costs two propagation delays of that path. Blocks follow each other as in
  :meth:`PathModel.completion`: after a barrier, or overlapped (block ``b + 1`` is sent while
  block ``b`` drains; block ``b + 2`` waits until block ``b`` is complete everywhere).

A blocking candidate is stopped early, and reported as pruned, once it can no longer beat the best
candidate so far: when it would need more blocks than that allows (each barrier block costs at
least ``L + S``; overlapped, every other block does), or when the edge sets it has cut so far,
each costing its hosts at least their distinct senders' sending time, already pass it
(:class:`~netweave.ina.blocks.Bound`).

The METIS blockings (``multilevel``, ``hybrid``) are not tried on a relation of more than
:data:`METIS_MAX_CROSS_EDGES` cross edges (reported as skipped): at Reddit's size (88 M) one METIS
level of the boundary graph takes 30–65 s on 2 cores, a level keeps 63–90 % of its edges cut, and
the bound above stops a barrier blocking only after its first re-splits (85–110 s each) and an
overlapped one not within 6 minutes; on the 70 cases of ``bench_ina.py --goal`` (reddit-like:0.02 at
128 workers: 2.2 M cross edges) no METIS blocking was picked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import NetweaveError
from .blocks import Bound, TooManyBlocks
from .memo import shared
from .boundary import BoundaryRelation
from .replay import Replay, plan_replay
from .build import build_plan
from .layer_plan import BLOCKINGS, InaPlan
from .strategies import AGGREGATOR_BYTES

# what the choice considers, cheapest to plan first; "host" is BNS-GCN's exchange
CANDIDATES = ("multicast", "single", "destination", "hybrid", "multilevel")
METIS_BLOCKINGS = ("hybrid", "multilevel")
METIS_MAX_CROSS_EDGES = 20_000_000  # beyond this the METIS blockings are skipped (module docstring)
# the network ``ina_plan(blocking="auto")`` prices on when given none: the CLI's default topology,
# star:n=WORKERS,gbps=100,latency_us=2 (switchgnn.txt §6: 100 Gb/s hosts on one switch)
STAR_GBPS = 100.0
STAR_LATENCY_US = 2.0


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

    @classmethod
    def star(cls, workers: int, feature_bytes: int, gbps: float = STAR_GBPS, latency_us: float = STAR_LATENCY_US
             ) -> "PathModel":
        """:meth:`of` the star ``star:n=WORKERS,gbps=GBPS,latency_us=LATENCY_US`` without building it:
        every host link ``gbps`` each way, the path host → switch → host two such links."""
        rate = gbps * 1e9 / 8
        delay = 2 * latency_us * 1e-6
        return cls(np.full(workers, rate), np.full(workers, rate), delay + 2 * feature_bytes / rate, delay)

    def completion(self, replay: Replay, feature_bytes: int, overlap: bool) -> float:
        """Predicted completion (s) of a plan whose blocks replayed as ``replay``.

        Block ``b`` starts at ``s_b``; its hosts have sent it ``U_b`` later (their busiest up link)
        and the switch has sent its last message down at ``e_b``; it is complete everywhere at
        ``c_b = e_b + L``. With the barrier, ``s_{b+1} = c_b + S`` and ``e_b = s_b + max_h max(U_{b,h},
        R_{b,h})`` (``U``: a host's sending time, ``R``: the replay's drain of its down link).
        Overlapped, every host ``h`` runs its own pipeline, ``s_{b+1,h} = max(s_{b,h} + U_{b,h},
        c_{b-1} + S)``, and each down link carries block ``b`` after block ``b - 1``:
        ``l_{b,h} = max(min_k s_{b,k} + R_{b,h}, l_{b-1,h} + W_{b,h})`` (``W``: its serialisation of
        block ``b``), ``e_b = max(max_h l_{b,h}, max_h (s_{b,h} + U_{b,h}))``.
        """
        nb = replay.up.shape[0]
        if nb == 0:
            return 0.0
        up_h = replay.up / self.up * feature_bytes  # (B, M) each host's sending time per block
        down_h = replay.down / self.down * feature_bytes  # (B, M) each host's receiving time
        drained = replay.drained_s
        gap = self.latency_s + self.barrier_s
        end = np.zeros(nb)
        if not overlap:
            start = 0.0
            for b in range(nb):
                end[b] = start + max(up_h[b].max(), drained[b].max())
                start = end[b] + gap
            return float(end[-1] + self.latency_s)
        host = np.zeros(self.up.size)  # when each host starts its block: its own pipeline
        link = np.zeros(self.up.size)  # when each host's down link has sent what it was given
        for b in range(nb):
            if b >= 2:
                host = np.maximum(host, end[b - 2] + gap)
            given = down_h[b] > 0
            link[given] = np.maximum(host.min() + drained[b, given], link[given] + down_h[b, given])
            end[b] = max(link[given].max(initial=0.0), (host + up_h[b]).max())
            host = host + up_h[b]
        return float(end[-1] + self.latency_s)

    def bound(self, parts: np.ndarray, feature_bytes: int, best_s: float, overlap: bool) -> Bound:
        """The :class:`~netweave.ina.blocks.Bound` that stops a blocking predicted slower than ``best_s``."""
        return Bound(parts, feature_bytes / self.up, self.latency_s + self.barrier_s, self.latency_s, best_s, overlap)

    def max_useful_blocks(self, best_s: float, overlap: bool) -> int:
        """More blocks than this cannot complete before ``best_s``."""
        per = (self.latency_s + self.barrier_s) / (2 if overlap else 1)
        return max(int(best_s / per) + 1, 1) if np.isfinite(best_s) else np.iinfo(np.int64).max


@dataclass(frozen=True)
class Candidate:
    """One priced candidate: ``blocking`` (a :data:`~netweave.ina.plan.BLOCKINGS` name or ``host``),
    ``overlap``, ``forward`` (destinations without gain forwarded), the sending ``order``, its blocks, predicted
    ``traffic_bytes`` and ``completion_s``, and planning time; ``pruned``: stopped early because it
    could not beat the best, or ``skipped`` (why it was not tried); then the costs are ``None``."""

    blocking: str
    overlap: bool
    forward: bool
    order: str
    num_blocks: int | None
    traffic_bytes: int | None
    completion_s: float | None
    plan_time_s: float
    pruned: bool = False
    skipped: str | None = None

    @property
    def is_strawman(self) -> bool:
        """One block, best effort, random order, nothing forwarded: §2.3.2's strawman itself."""
        return self.blocking == "single" and not self.forward and self.order == "random"

    def summary(self) -> dict:
        return {"blocking": self.blocking, "overlap": self.overlap, "forward": self.forward, "order": self.order,
                "num_blocks": self.num_blocks,
                "predicted_traffic_bytes": self.traffic_bytes, "predicted_completion_s": self.completion_s,
                "plan_time_s": self.plan_time_s, "pruned": self.pruned, "skipped": self.skipped}


@dataclass(frozen=True, eq=False)
class Choice:
    """The chosen ``plan``, its :class:`Candidate` and every candidate priced."""

    plan: InaPlan
    chosen: Candidate
    candidates: tuple[Candidate, ...]

    def summary(self) -> dict:
        return {"blocking": self.chosen.blocking, "overlap": self.chosen.overlap, "forward": self.chosen.forward,
                "order": self.chosen.order,
                "predicted_completion_s": self.chosen.completion_s,
                "predicted_traffic_bytes": self.chosen.traffic_bytes,
                "candidates": [c.summary() for c in self.candidates]}


def price(plan: InaPlan, model: PathModel, capacity: int | None) -> tuple[int, float]:
    """Predicted traffic (bytes over the host links) and completion (s) of ``plan``."""
    replay = plan_replay(plan, capacity, model.up, model.down)
    return replay.messages * plan.feature_bytes, model.completion(replay, plan.feature_bytes, plan.overlap)


def _baselines(candidates) -> tuple[int, float] | None:
    """The least traffic and the least completion of the baselines (host exchange, the strawman)
    among the priced ``candidates``; ``None`` when neither has been priced."""
    base = [c for c in candidates if not c.pruned and (c.blocking == "host" or c.is_strawman)]
    if not base:
        return None
    return min(c.traffic_bytes for c in base), min(c.completion_s for c in base)


def _preferred(live: list[tuple[Candidate, object]]) -> list[tuple[Candidate, object]]:
    """The candidates at least as good as both baselines (host exchange, the strawman) in traffic
    and in time; all of them when none is."""
    bound = _baselines(c for c, _ in live)
    if bound is None:
        return live
    return [(c, p) for c, p in live if c.traffic_bytes <= bound[0] and c.completion_s <= bound[1]] or live


def _slowest_useful(priced: list[tuple[Candidate, object]]) -> float:
    """A completion no candidate slower than can be chosen: the fastest that beats both baselines so
    far (the pick is the fastest such, when there is one), else the faster baseline (a candidate
    slower than that beats neither it nor, being slower than a baseline, the fastest of all)."""
    live = [(c, p) for c, p in priced if not c.pruned]
    bound = _baselines(c for c, _ in live)
    if bound is None:
        return min((c.completion_s for c, _ in live), default=np.inf)
    return min((c.completion_s for c, _ in live if c.traffic_bytes <= bound[0] and c.completion_s <= bound[1]),
               default=bound[1])


def choose_plan(rel: BoundaryRelation, net, feature_bytes: int, memory_bytes: int | np.ndarray,
                edge_memory: np.ndarray | None = None, order: str = "gamr", seed: int = 0, start: int | None = None,
                candidates: tuple[str, ...] = CANDIDATES, overlap: tuple[bool, ...] = (False, True),
                host: bool = True) -> Choice:
    """Plan every candidate blocking (× ``overlap``, plus ``host`` exchange) for ``memory_bytes`` and
    return the one the module docstring's rule picks: the fastest predicted of those at least as good
    as both baselines in traffic and in time (of all, when none is). ``net``: the
    :class:`~netweave.sim.network.SimNetwork` the candidates are priced on, or its :class:`PathModel`."""
    unknown = sorted(set(candidates) - set(BLOCKINGS))
    if unknown:
        raise NetweaveError(f"unknown blocking {unknown[0]!r}; use one of {', '.join(BLOCKINGS)}")
    if memory_bytes is None:
        raise NetweaveError("switchgnn needs a finite --switch-memory (its blocks are sized to it)")
    model = net if isinstance(net, PathModel) else PathModel.of(net, feature_bytes)
    with shared():
        return _choose(rel, model, feature_bytes, memory_bytes, edge_memory, order, seed, start, candidates, overlap, host)


def _choose(rel: BoundaryRelation, model: PathModel, feature_bytes: int, memory_bytes, edge_memory, order: str,
            seed: int, start: int | None, candidates: tuple[str, ...], overlap: tuple[bool, ...], host: bool) -> Choice:
    """:func:`choose_plan` once its arguments are checked, inside one :func:`~netweave.ina.memo.shared`."""
    smallest = int(np.min(memory_bytes)) // AGGREGATOR_BYTES
    # every candidate keeps how to build its plan, not the plan (at Reddit's size a plan is ~3 GB);
    # only the pick so far is held, so that it is not built twice
    priced: list[tuple[Candidate, Callable[[], InaPlan] | None]] = []
    held: list[tuple[Candidate, InaPlan]] = []

    def add(blocking: str, ov: bool, fw: bool, how: str, build: Callable[[], InaPlan]) -> None:
        t0 = time.perf_counter()
        try:
            plan = build()
        except TooManyBlocks:
            priced.append((Candidate(blocking, ov, fw, how, None, None, None, time.perf_counter() - t0, True), None))
            return
        traffic, completion = price(plan, model, smallest // 2 if plan.overlap else smallest)
        candidate = Candidate(blocking, plan.overlap, fw, how, plan.num_blocks, traffic, completion,
                              time.perf_counter() - t0)
        priced.append((candidate, build))
        pick = _pick(priced)[0]
        if pick is candidate or (held and held[0][0] is not pick):
            held.clear()
        if pick is candidate:
            held.append((candidate, plan))

    if host:
        add("host", False, False, order, partial(build_plan, rel, "host", feature_bytes, None, order, seed, start, None,
                                                  "paper", False, None, False, None))
    halves = smallest // 2 >= -(-feature_bytes // AGGREGATOR_BYTES)  # half the memory holds a destination
    for blocking in candidates:
        if blocking in METIS_BLOCKINGS and rel.dst.size > METIS_MAX_CROSS_EDGES:
            why = f"{rel.dst.size / 1e6:.1f} M cross edges > {METIS_MAX_CROSS_EDGES / 1e6:.0f} M: METIS levels too slow"
            priced.extend((Candidate(blocking, ov, True, order, None, None, None, 0.0, True, why), None)
                          for ov in (overlap if halves else (False,)))
            continue
        for ov in ((False,) if blocking in ("single", "multicast") or not halves else overlap):
            for fw, how in (((False, order), (True, order), (False, "random"), (True, "random"))
                            if blocking == "single" else ((True, order),)):
                best = _slowest_useful(priced)
                add(blocking, ov, fw, how, partial(build_plan, rel, "switchgnn", feature_bytes, memory_bytes, how, seed,
                                                   start, edge_memory, blocking, ov,
                                                   model.max_useful_blocks(best, ov), fw,
                                                   model.bound(rel.parts, feature_bytes, best, ov)))
    chosen, build = _pick(priced)
    plan = held[0][1] if held and held[0][0] is chosen else build()  # deterministic: the plan that was priced
    return Choice(plan, chosen, tuple(c for c, _ in priced))


def _pick(priced: list[tuple[Candidate, object]]) -> tuple[Candidate, object]:
    """The rule of the module docstring: the fastest of the candidates at least as good as both
    baselines (of all, when none is), ties within 1 % going to the least traffic."""
    live = _preferred([(c, b) for c, b in priced if not c.pruned])
    fastest = min(c.completion_s for c, _ in live)
    return min(((c, b) for c, b in live if c.completion_s <= fastest * 1.01),
               key=lambda cb: (cb[0].traffic_bytes, cb[0].completion_s))
