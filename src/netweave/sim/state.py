"""The switch simulator's state, in named structures that numba compiles (:mod:`~netweave.sim.engine` runs them).

Every structure is a ``NamedTuple``: numba passes it to compiled functions and caches them, and a
field is always read and written by its name. The immutable ones hold scalars or read-only
arrays; the mutable state lives in the numpy arrays the others hold, allocated here, in Python,
and read back by name once the run is over.

* :class:`Options` — the run's constants (sizes, timers, rates), built by keyword from
  :class:`~netweave.sim.simulate.SimConfig`, the plan and the network (a field left out or
  misspelled is an error, never a shifted option).
* :class:`Network` — the :class:`~netweave.sim.network.SimNetwork` as the engine reads it, and the
  background workload; :class:`Plan` — the :class:`~netweave.ina.plan.InaPlan`'s arrays and what is
  derived from them (the aggregator needs of levels 1 and 2, the destination index).
* :class:`Links` — one FIFO output queue per link direction (virtual finish time, bytes, largest
  backlog).
* :class:`Hosts` — every worker's sender (block, next unit, rate control) and receiver (what it
  awaits per block parity, timers, the barrier or the overlapped pipeline).
* :class:`Destinations` — per destination vertex and block parity, what its host has received;
  the delivered sums; the reception state of every cross edge (§3.4's bitmaps).
* :class:`Switches` — per switch, block parity and destination: its aggregator, whether it is
  bypassed; :class:`Aggregators` — the 128-byte aggregator slots of every switch (count, sum, free
  list, §4); :class:`Payloads` — the sums carried by result and partial-sum messages.
* :class:`Coordinator` — the switch that synchronises the blocks (§3.3): DONE counts, NEXT.
* the counters and the timeline, two arrays whose slots :data:`~netweave.sim.engine.COUNTER` and
  :data:`~netweave.sim.engine.COLUMN` name (the engine holds them: its compiled code bakes them in).

Where a state has "per block parity" copies, there are two with ``Options.overlap`` (the two blocks
in flight, ``block % 2``) and one otherwise.

numba keys its cache of the engine on engine.py alone and types a NamedTuple by its class and field
types, not its field names: after reordering fields of the same type here, touch engine.py (or clear
``sim/__pycache__``), or the cached engine reads them in the old order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .engine import COLUMN, COUNTER


class Options(NamedTuple):
    """The run's constants (units in the names; rates in bytes per second)."""

    hosts: int  # M, one worker each
    leaves: int  # L (1 for a star)
    spines: int  # S (0 for a star)
    blocks: int  # B
    feature_bytes: int
    control_bytes: int
    mtu_bytes: int
    dim: int  # values carried per vertex (0: none)
    chunks: int  # 128-byte aggregators per destination
    bins: int  # timeline bins
    seed: int
    recover: bool  # timers, pulls and repeated DONEs (with loss or a finite buffer)
    congestion_control: bool
    overlap: bool  # two blocks in flight
    buffer_bytes: float  # per switch output port (inf: unlimited)
    ecn_bytes: float
    loss: float
    timeout_s: float
    ai_rate: float  # additive increase per step
    ai_every_s: float
    decrease_every_s: float
    min_rate: float
    background_gap_s: float  # mean gap between background flows per host (0: none)
    bin_s: float
    horizon_s: float
    cnp_delay_s: float


class Network(NamedTuple):
    """Nodes: hosts ``0..M-1``, leaves ``M..M+L-1``, spines after (see :mod:`~netweave.sim.network`)."""

    leaf_of: np.ndarray  # (M,) the leaf of every host
    rate: np.ndarray  # (links,) bytes per second
    delay: np.ndarray  # (links,) seconds
    background_sizes: np.ndarray  # flow sizes (bytes) ...
    background_cdf: np.ndarray  # ... and their cumulative probabilities (§6.5)


class Plan(NamedTuple):
    """The plan's arrays (C cross edges, n vertices, D destinations); see :class:`~netweave.ina.plan.InaPlan`."""

    parts: np.ndarray  # (n,) worker of every vertex
    src: np.ndarray  # (C,) sender of every cross edge
    dst: np.ndarray  # (C,) destination of every cross edge
    need1: np.ndarray  # (C,) edges of (block, source leaf, destination): an aggregator's need at level 1
    need2: np.ndarray  # (C,) cross-leaf edges of (block, destination): the need at the spine (level 2)
    forward: np.ndarray  # (C,) the destination is forwarded (never aggregated)
    unit_lo: np.ndarray  # (units,) a unit sends edges [lo, hi) ...
    unit_hi: np.ndarray
    unit_to: np.ndarray  # ... multicast (-1) or as a copy to one worker
    unit_ptr: np.ndarray  # (M * B + 1,) units of host h in block b: [ptr[h B + b], ptr[h B + b + 1])
    in_edges: np.ndarray  # edges grouped by destination (and owner), the ranges below index it
    dest_v: np.ndarray  # destination vertex, its in-edge range [lo, hi), per (host, block) ...
    dest_lo: np.ndarray
    dest_hi: np.ndarray
    dest_ptr: np.ndarray  # ... as unit_ptr
    dest_index: np.ndarray  # (n,) vertex -> destination index (-1: none)
    dest_vertex: np.ndarray  # (D,) destination index -> vertex
    values: np.ndarray  # (n, dim) the features carried


class Links(NamedTuple):
    """One FIFO output queue per link direction: a message enqueued at ``t`` leaves at ``free_at = max(free_at, t)
    + size / rate``; the backlog it finds is ``(free_at - t) * rate``."""

    free_at: np.ndarray  # (links,)
    data_bytes: np.ndarray  # (links,) feature bytes sent (control and background excluded)
    max_backlog: np.ndarray  # (links,) bytes, with the message

    @classmethod
    def new(cls, links: int) -> Links:
        return cls(np.zeros(links), np.zeros(links, dtype=np.int64), np.zeros(links))


class Hosts(NamedTuple):
    """Per host. The sender walks its units ``unit .. unit_end`` of its current ``block``; with congestion control
    its ``rate`` halves on a CNP and grows additively (§3.4). Per block parity: ``remaining``
    destinations without their sum. Overlap only: ``known`` (blocks below it are complete everywhere,
    as far as the host has heard), ``awaits`` (the block whose sums each parity awaits; >= B: none
    left), ``reported`` (the last block of each parity whose sums were held and units sent)."""

    block: np.ndarray  # (M,) the block being sent
    unit: np.ndarray  # (M,) next unit to send
    unit_end: np.ndarray  # (M,)
    sent_all: np.ndarray  # (M,) bool: every unit of the block sent
    remaining: np.ndarray  # (M, parities)
    waiting: np.ndarray  # (M,) bool: blocked on a NEXT
    finished: np.ndarray  # (M,) bool
    finish_t: np.ndarray  # (M,)
    line_rate: np.ndarray  # (M,)
    rate: np.ndarray  # (M,) the sending rate
    last_decrease: np.ndarray  # (M,) -1 before the first
    last_increase: np.ndarray  # (M,)
    last_progress: np.ndarray  # (M,) last time something arrived that counted
    done_t: np.ndarray  # (M,) last DONE sent
    timer: np.ndarray  # (M,) generation of the live timer
    known: np.ndarray  # (M,)
    awaits: np.ndarray  # (M, parities)
    reported: np.ndarray  # (M, parities)

    @classmethod
    def new(cls, line_rate: np.ndarray, parities: int) -> Hosts:
        m = line_rate.size
        return cls(block=np.zeros(m, dtype=np.int64), unit=np.zeros(m, dtype=np.int64),
                   unit_end=np.zeros(m, dtype=np.int64), sent_all=np.zeros(m, dtype=np.bool_),
                   remaining=np.zeros((m, parities), dtype=np.int64), waiting=np.zeros(m, dtype=np.bool_),
                   finished=np.zeros(m, dtype=np.bool_), finish_t=np.zeros(m), line_rate=line_rate.copy(),
                   rate=line_rate.copy(), last_decrease=np.full(m, -1.0), last_increase=np.zeros(m),
                   last_progress=np.zeros(m), done_t=np.zeros(m), timer=np.zeros(m, dtype=np.int64),
                   known=np.zeros(m, dtype=np.int64), awaits=np.zeros((m, parities), dtype=np.int64),
                   reported=np.full((m, parities), -1, dtype=np.int64))


class Destinations(NamedTuple):
    """Per block parity and destination index: what its host has received. ``got`` counts edges (an aggregated
    result counts all it covers), ``direct`` those that came as copies or resends; ``partial`` holds
    the aggregated results' sum until the destination completes, then it joins ``sums``. A pulled
    destination (``pulled`` = the block) drops its partials and counts each feature once (§3.4)."""

    need: np.ndarray  # (parities, D) edges to receive
    got: np.ndarray  # (parities, D)
    direct: np.ndarray  # (parities, D)
    pulled: np.ndarray  # (parities, D) block pulled in, -1
    partial: np.ndarray  # (parities, D, dim)
    sums: np.ndarray  # (n, dim) the delivered remote-neighbour sums
    edge_state: np.ndarray  # (C,) int8: PENDING, AGGREGATED, BYPASSED, CREDITED or PULLED (engine)

    @classmethod
    def new(cls, parities: int, destinations: int, vertices: int, edges: int, dim: int) -> Destinations:
        shape = (parities, destinations)
        return cls(np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64),
                   np.full(shape, -1, dtype=np.int64), np.zeros(shape + (dim,)), np.zeros((vertices, dim)),
                   np.zeros(edges, dtype=np.int8))


class Switches(NamedTuple):
    """Per switch (leaves, then spines), block parity and destination index: the open aggregator ``slot``
    (-1: none), the block it was last ``opened`` in (an aggregator opens at most once per block), the
    block in which it is ``bypass``-ed for good (after a resend, §3.4), and the copies ``bypassed``
    in block ``bypassed_block``."""

    slot: np.ndarray  # (L+S, parities, D) int32
    opened: np.ndarray
    bypass: np.ndarray
    bypassed: np.ndarray
    bypassed_block: np.ndarray

    @classmethod
    def new(cls, switches: int, parities: int, destinations: int) -> Switches:
        shape = (switches, parities, destinations)
        return cls(np.full(shape, -1, dtype=np.int32), np.full(shape, -1, dtype=np.int32),
                   np.full(shape, -1, dtype=np.int32), np.zeros(shape, dtype=np.int32),
                   np.full(shape, -1, dtype=np.int32))


class Aggregators(NamedTuple):
    """The aggregator slots of all switches, switch ``s`` owning ``[base[s], base[s + 1])`` (its memory // (128 B x
    chunks)). An open slot adds ``count`` features covering ``cover`` edges of its ``need`` (§4: the
    count, not a bitmap, says when it is complete) for ``block``; ``value`` is its sum. Free slots
    form a stack per switch (``free``, top ``free_top``)."""

    base: np.ndarray  # (L+S+1,)
    count: np.ndarray  # (slots,)
    cover: np.ndarray
    need: np.ndarray
    block: np.ndarray
    value: np.ndarray  # (slots, dim); (0, dim) without values
    free: np.ndarray  # (slots,)
    free_top: np.ndarray  # (L+S,)
    peak: np.ndarray  # (L+S,) most slots open at once
    used: np.ndarray  # (1,) slots open in all switches

    @classmethod
    def new(cls, capacity: np.ndarray, dim: int) -> Aggregators:
        switches = capacity.size
        base = np.zeros(switches + 1, dtype=np.int64)
        base[1:] = np.cumsum(capacity)
        total = int(base[switches])
        free = np.zeros(total, dtype=np.int64)
        for s in range(switches):  # popped from the top: slots in increasing order
            free[base[s]:base[s + 1]] = np.arange(base[s + 1] - 1, base[s] - 1, -1)
        return cls(base, np.zeros(total, dtype=np.int64), np.zeros(total, dtype=np.int64),
                   np.zeros(total, dtype=np.int64), np.zeros(total, dtype=np.int64),
                   np.zeros((total if dim > 0 else 0, dim)), free, capacity.astype(np.int64).copy(),
                   np.zeros(switches, dtype=np.int64), np.zeros(1, dtype=np.int64))


class Payloads(NamedTuple):
    """The sums that result and partial-sum messages carry: a message names its ``row`` (rows are never reused)."""

    rows: np.ndarray  # (switches x destinations + 1, dim); (0, dim) without values
    next: np.ndarray  # (1,)

    @classmethod
    def new(cls, rows: int, dim: int) -> Payloads:
        return cls(np.zeros((rows if dim > 0 else 0, dim)), np.zeros(1, dtype=np.int64))


class Coordinator(NamedTuple):
    """The switch that synchronises blocks (§3.3): ``block`` is the oldest block not every host holds. The barrier
    counts the DONEs of that block (``done``, ``count``); overlap counts every block's (``got`` B x M,
    ``per_block``)."""

    block: np.ndarray  # (1,)
    done: np.ndarray  # (M,) bool
    count: np.ndarray  # (1,)
    got: np.ndarray  # (B * M,) bool with overlap, else empty
    per_block: np.ndarray  # (B,) with overlap, else empty

    @classmethod
    def new(cls, hosts: int, blocks: int, overlap: bool) -> Coordinator:
        nb = blocks if overlap else 0
        return cls(np.zeros(1, dtype=np.int64), np.zeros(hosts, dtype=np.bool_), np.zeros(1, dtype=np.int64),
                   np.zeros(nb * hosts, dtype=np.bool_), np.zeros(nb, dtype=np.int64))


class State(NamedTuple):
    """Everything a run changes; read back by name when it is over."""

    links: Links
    hosts: Hosts
    destinations: Destinations
    switches: Switches
    aggregators: Aggregators
    payloads: Payloads
    coordinator: Coordinator
    counters: np.ndarray  # (len(COUNTER),) int64
    timeline: np.ndarray  # (bins, len(COLUMN)) float64

    @classmethod
    def new(cls, opt: Options, net: Network, plan: Plan, capacity: np.ndarray) -> State:
        """The state at ``t = 0``; ``capacity`` ``(L+S,)``: aggregator slots of every switch."""
        parities = 2 if opt.overlap else 1
        destinations = plan.dest_vertex.size
        switches = opt.leaves + opt.spines
        return cls(links=Links.new(net.rate.size), hosts=Hosts.new(net.rate[:opt.hosts], parities),
                   destinations=Destinations.new(parities, destinations, plan.parts.size, plan.src.size, opt.dim),
                   switches=Switches.new(switches, parities, destinations),
                   aggregators=Aggregators.new(capacity, opt.dim),
                   payloads=Payloads.new(switches * plan.dest_v.size + 1, opt.dim),
                   coordinator=Coordinator.new(opt.hosts, opt.blocks, opt.overlap),
                   counters=np.zeros(len(COUNTER), dtype=np.int64), timeline=np.zeros((opt.bins, len(COLUMN))))
