"""Event-driven simulation of one layer's propagation through INA switches (switchgnn.txt §2.4, §3.3, §3.4, §6).

The model (every assumption in one place):

* **Hosts** (one worker each) send the units of an :class:`~netweave.ina.plan.InaPlan` in order, one
  message of ``feature_bytes`` (payload only, no headers) every ``feature_bytes / rate`` seconds,
  never more than one message ahead of their NIC queue. With congestion control the rate halves on
  an ECN notification (at most once per ``decrease_every_us``) and grows by ``ai_gbps`` every
  ``ai_every_us`` without one (§3.4, DCQCN-like; the paper gives no constants, these are ours).
* **Links** are full duplex; each direction is a FIFO output queue with the link's bandwidth and
  propagation delay. Switch ports drop at the tail above ``buffer_bytes`` (default: unlimited, the
  paper's "very large" buffer) and mark ECN above ``ecn_bytes``; the mark reaches the message's
  origin host ``cnp_delay`` later (two host-link delays).
* **Switches** (level 1 = the sender's switch — the star's only switch or the sender's leaf) add an
  arriving feature into one aggregator per destination vertex (``ceil(F/128)`` 128-byte aggregators
  each, ``memory // 128`` in all, per switch: the plan's ``memory_bytes``), opening it on first
  use; with none free the copy is bypassed and sent to the destination host unaggregated, one copy
  per (sender, destination worker). A per-vertex counter of bypassed copies completes the
  aggregator, whose sum then goes down (or, for a vertex
  under another leaf, up to the spine ``v mod S`` as a partial sum, where level 2 adds the leaves'
  partial sums the same way). Hosts add everything they receive. A destination the plan forwards
  (``plan.forward``, beyond the paper) never gets an aggregator: its edges always ride the copies.
* **Blocks** (more than one: ``switchgnn``) are synchronised through the coordinating switch (the
  star's switch, spine 0 of a leaf-spine). By default as in §3.3, with a barrier: a host that holds
  all sums of its block and has sent its units reports DONE, the switch multicasts NEXT when all
  have, and only then does anyone start the next block. With ``plan.overlap`` (beyond the paper;
  the plan sizes each block to half the memory) blocks are double-buffered: a host starts block
  ``b + 1`` as soon as it has sent block ``b``'s units, provided block ``b - 1`` is complete
  everywhere (it need not hold block ``b``'s sums yet), so at most two consecutive blocks are in
  flight. DONE(``b``) says the host holds block ``b``'s sums and has sent its units (only said when
  a block ``b + 2`` waits for it); NEXT(``c``) says every host holds every block before ``c``
  (one NEXT may announce two blocks); a host is done when it holds every sum and has sent
  everything. Switches and hosts keep the state of the two blocks in flight apart (one copy per
  block parity); a late message of a block complete everywhere is forwarded and touches no
  aggregator.
* **Loss** (random, per link traversal, or tail drop) is repaired as in §3.4: a host that receives
  nothing for ``timeout_us`` pulls every feature it still misses from their owners (with overlap:
  in every block it awaits that may be in flight); the resent copies
  release the destination's aggregators on their way and bypass them from then on; the host
  discards the destination's aggregated partials and counts each feature once (reception bitmap).
  A lost DONE/NEXT is repeated on the same timer (a host waiting for a NEXT says DONE again). The
  delivered sums stay exact.
* **Background** flows (§6.5) follow :mod:`~netweave.sim.background`.

Given a seed a run is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import NetweaveError
from ..ina.plan import InaPlan
from ..ina.strategies import AGGREGATOR_BYTES
from . import engine
from .background import HADOOP_CDF, HADOOP_SIZES, mean_gap_s
from .network import SimNetwork
from .engine import COLUMN, COUNTER, Counter
from .state import Network, Options, Plan, State


@dataclass(frozen=True)
class SimConfig:
    """Options of :func:`simulate` (units in the names)."""

    buffer_bytes: float | None = None
    congestion_control: bool = False
    ecn_bytes: float = 100e3
    ai_gbps: float = 1.0
    ai_every_us: float = 10.0
    decrease_every_us: float = 50.0
    min_gbps: float = 1.0
    loss: float = 0.0
    timeout_us: float = 500.0
    background_load: float = 0.0
    seed: int = 0
    bin_us: float = 10.0
    horizon_s: float = 10.0
    control_bytes: int = 64
    mtu_bytes: int = 1500

    # The command-line option of each field that ``netweave ina`` exposes: errors name both, so that
    # they read right on the command line (--ecn) and in a sweep file or in Python (ecn_bytes).
    OPTIONS = {"buffer_bytes": "--buffer", "ecn_bytes": "--ecn", "loss": "--loss", "timeout_us": "--timeout-us",
               "background_load": "--background"}

    @classmethod
    def label(cls, name: str) -> str:
        """``--ecn (ecn_bytes)`` for a field with an option, else the field's name."""
        return f"{cls.OPTIONS[name]} ({name})" if name in cls.OPTIONS else name

    def check(self) -> None:
        """Refuse impossible options, one line each, naming the option and the field."""
        if self.buffer_bytes is not None and not (self.buffer_bytes > 0 and np.isfinite(self.buffer_bytes)):
            raise NetweaveError(f"buffer {self.buffer_bytes} B must be positive")
        if not 0.0 <= self.loss < 1.0:
            raise NetweaveError(f"loss rate {self.loss} must be in [0, 1)")
        if not 0.0 <= self.background_load < 1.0:
            raise NetweaveError(f"background load {self.background_load} must be in [0, 1)")
        for name in ("timeout_us", "bin_us", "horizon_s", "ai_every_us", "decrease_every_us", "min_gbps", "ecn_bytes"):
            value = getattr(self, name)
            if not value > 0:
                raise NetweaveError(f"{self.label(name)} must be positive (got {value})")
            if not np.isfinite(value):
                raise NetweaveError(f"{self.label(name)} must be a finite number (got {value})")


@dataclass(frozen=True, eq=False)
class SimResult:
    """What one simulated layer did.

    Attributes:
        completion_time_s: when the last host held all its sums.
        finish_s: ``(M,)`` per host.
        up_bytes, down_bytes: ``(M,)`` feature bytes on every host link (control excluded).
        core_bytes: feature bytes on leaf–spine links (0 for a star).
        max_queue_bytes: ``(links,)`` largest backlog every output queue saw (see :mod:`network`).
        peak_aggregator_bytes: ``(switches,)`` most aggregator memory in use.
        counters: drops, losses, ECN marks, pulled destinations, fetches, resends, unaggregated
            messages, aggregation results, control bytes, background bytes, events.
        timeline: ``(T, 5)``: bin start (s), delivered Gb/s, aggregated-result Gb/s, aggregator
            bytes in use (max), largest switch queue (bytes, max) per ``bin_us`` bin. A message's
            bytes count over their arrival on the host's link, so no bin exceeds the line rates.
        sums: ``(n, D)`` the remote-neighbour sums delivered, when values were carried.
    """

    completion_time_s: float
    finish_s: np.ndarray
    up_bytes: np.ndarray
    down_bytes: np.ndarray
    core_bytes: int
    max_queue_bytes: np.ndarray
    peak_aggregator_bytes: np.ndarray
    counters: dict = field(default_factory=dict)
    timeline: np.ndarray | None = None
    sums: np.ndarray | None = None

    @property
    def traffic_bytes(self) -> int:
        return int(self.up_bytes.sum() + self.down_bytes.sum())

    def summary(self) -> dict:
        return {"completion_time_s": self.completion_time_s, "traffic_bytes": self.traffic_bytes,
                "core_bytes": self.core_bytes, "max_queue_bytes": int(self.max_queue_bytes.max(initial=0)),
                "peak_aggregator_bytes": int(self.peak_aggregator_bytes.max(initial=0)), **self.counters}


COUNTERS = Counter._fields  # the names of SimResult.counters


def _group_count(key: np.ndarray) -> np.ndarray:
    """For every element, how many elements share its key."""
    if key.size == 0:
        return key.copy()
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    counts = np.diff(np.append(starts, k.size))
    out = np.empty_like(key)
    out[order] = np.repeat(counts, counts)
    return out


def _capacity(plan: InaPlan, net: SimNetwork, chunks: int, destinations: int) -> np.ndarray:
    switches = net.num_leaves + net.num_spines
    if plan.strategy == "host":
        return np.zeros(switches, dtype=np.int64)
    if plan.memory_bytes is None:
        return np.full(switches, destinations, dtype=np.int64)
    memory = np.asarray(plan.memory_bytes, dtype=np.int64)
    if memory.ndim and memory.size != switches:
        raise NetweaveError(f"the plan has aggregator memory for {memory.size} switches but the network has {switches}; "
                            "plan with the network's switch_memory()")
    return np.minimum(np.broadcast_to(memory // (AGGREGATOR_BYTES * chunks), (switches,)), destinations).astype(np.int64)


def _options(plan: InaPlan, net: SimNetwork, config: SimConfig, dim: int, chunks: int, bins: int) -> Options:
    """The kernel's constants, by name (rates in bytes per second, times in seconds)."""
    return Options(hosts=net.num_hosts, leaves=net.num_leaves, spines=net.num_spines, blocks=int(plan.num_blocks),
                   feature_bytes=int(plan.feature_bytes), control_bytes=int(config.control_bytes),
                   mtu_bytes=int(config.mtu_bytes), dim=dim, chunks=chunks, bins=bins, seed=int(config.seed),
                   recover=bool(config.loss > 0 or config.buffer_bytes is not None),
                   congestion_control=bool(config.congestion_control),
                   overlap=bool(plan.overlap and plan.num_blocks > 1),  # one block: nothing to overlap
                   buffer_bytes=np.inf if config.buffer_bytes is None else float(config.buffer_bytes),
                   ecn_bytes=float(config.ecn_bytes), loss=float(config.loss), timeout_s=config.timeout_us * 1e-6,
                   ai_rate=config.ai_gbps * 1e9 / 8, ai_every_s=config.ai_every_us * 1e-6,
                   decrease_every_s=config.decrease_every_us * 1e-6, min_rate=config.min_gbps * 1e9 / 8,
                   background_gap_s=mean_gap_s(config.background_load, net.host_rate()),
                   bin_s=config.bin_us * 1e-6, horizon_s=float(config.horizon_s),
                   cnp_delay_s=2 * float(net.delay[:net.num_hosts].max()))  # two host-link delays


def _kernel_plan(plan: InaPlan, net: SimNetwork, values: np.ndarray) -> Plan:
    """The plan's arrays as the kernel reads them, with the destination index and what every aggregator
    needs: at level 1 the edges of its (block, source leaf, destination), at level 2 (the spine) the
    cross-leaf edges of its (block, destination)."""
    n, nl = plan.parts.size, net.num_leaves
    dvert = np.flatnonzero(np.bincount(plan.dst, minlength=n) > 0)
    dest_index = np.full(n, -1, dtype=np.int64)
    dest_index[dvert] = np.arange(dvert.size)
    src_leaf = net.leaf_of[plan.parts[plan.src]]
    dst_leaf = net.leaf_of[plan.parts[plan.dst]]
    need2 = np.zeros(plan.dst.size, dtype=np.int64)
    if nl == 1:  # level 1 needs every cross edge of (block, dst): the plan's destination ranges
        sizes = (plan.dest_hi - plan.dest_lo)[np.argsort(plan.dest_lo)]
        need1 = np.empty_like(need2)
        need1[plan.in_edges] = np.repeat(sizes, sizes)
    else:
        need1 = _group_count((plan.block * nl + src_leaf) * n + plan.dst)
        cross = src_leaf != dst_leaf
        need2[cross] = _group_count(plan.block[cross] * n + plan.dst[cross])
    forward = np.zeros(plan.dst.size, dtype=np.bool_) if plan.forward is None else plan.forward[plan.dst]
    return Plan(parts=plan.parts.astype(np.int64), src=plan.src, dst=plan.dst, need1=need1, need2=need2,
                forward=forward, unit_lo=plan.unit_lo, unit_hi=plan.unit_hi, unit_to=plan.unit_to,
                unit_ptr=plan.unit_ptr, in_edges=plan.in_edges, dest_v=plan.dest_v, dest_lo=plan.dest_lo,
                dest_hi=plan.dest_hi, dest_ptr=plan.dest_ptr, dest_index=dest_index, dest_vertex=dvert, values=values)


def simulate(plan: InaPlan, net: SimNetwork, config: SimConfig = SimConfig(),
             values: np.ndarray | None = None) -> SimResult:
    """Simulate ``plan`` on ``net``; ``values`` ``(n, D)`` are carried and summed when given."""
    config.check()
    if plan.num_workers != net.num_hosts:
        raise NetweaveError(f"the plan has {plan.num_workers} workers but the network has {net.num_hosts} hosts")
    n, m = plan.parts.size, net.num_hosts
    if values is not None and (values.ndim != 2 or values.shape[0] != n):
        raise NetweaveError(f"values must be an (n={n}, D) array, got shape {np.shape(values)}")
    chunks = -(-plan.feature_bytes // AGGREGATOR_BYTES)
    carried = np.zeros((n, 0)) if values is None else np.ascontiguousarray(values, dtype=np.float64)
    dt = config.bin_us * 1e-6
    nbins = int(min(np.ceil(config.horizon_s / dt), 2_000_000)) + 1
    opt = _options(plan, net, config, int(carried.shape[1]), int(chunks), nbins)
    network = Network(leaf_of=net.leaf_of, rate=net.rate, delay=net.delay, background_sizes=HADOOP_SIZES,
                      background_cdf=HADOOP_CDF)
    kernel_plan = _kernel_plan(plan, net, carried)
    state = State.new(opt, network, kernel_plan, _capacity(plan, net, chunks, kernel_plan.dest_vertex.size))
    status = engine.run(opt, network, kernel_plan, state)
    if status == engine.HORIZON:
        raise NetweaveError(f"the simulation did not finish within {config.horizon_s} simulated seconds; "
                            "raise --horizon or lower the loss rate")
    if status == engine.STALLED:
        raise NetweaveError("the simulation stalled (messages were lost with no recovery); this is a bug, please report it")
    hosts, links, timeline = state.hosts, state.links, state.timeline
    t_end = max(0.0, float(hosts.finish_t.max(initial=0.0)))
    last = min(int(t_end / dt) + 1, nbins)
    timeline = np.column_stack([np.arange(last) * dt, timeline[:last, COLUMN.delivered_bytes] * 8 / dt / 1e9,
                                timeline[:last, COLUMN.result_bytes] * 8 / dt / 1e9,
                                timeline[:last, COLUMN.aggregator_bytes], timeline[:last, COLUMN.max_queue_bytes]])
    counters = {name: int(state.counters[slot]) for name, slot in COUNTER._asdict().items()}
    sent = links.data_bytes
    return SimResult(t_end, hosts.finish_t, sent[:m].copy(), sent[m:2 * m].copy(), int(sent[2 * m:].sum()),
                     links.max_backlog, state.aggregators.peak * chunks * AGGREGATOR_BYTES, counters, timeline,
                     None if values is None else state.destinations.sums)
