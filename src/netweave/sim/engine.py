"""The switch simulator's event loop (numba). See :mod:`netweave.sim.simulate` for the model and
:mod:`netweave.sim.state` for the named structures it runs on.

:func:`run` is a small step loop, as in SimPy's ``core.py``: it takes the earliest event from the
queue and hands it to the handler of its kind; the behaviour lives in the handlers, grouped by the
object they model:

* links: :func:`send` (route and enqueue), :func:`transmit` (an output queue: tail drop, ECN
  marking, random loss), :func:`route`;
* hosts: :func:`host_send` (pacing, additive increase), :func:`slow_down` (a CNP),
  :func:`host_receive`, :func:`host_timer` (§3.4's timeout and pull), the block barrier
  (:func:`start_block`, :func:`block_done`) and the overlapped blocks (:func:`overlap_progress`);
* switches: :func:`switch_receive`, the aggregation of level 1 (:func:`multicast`) and 2
  (:func:`aggregate_partial`), aggregators (:func:`open_aggregator`, :func:`current`,
  :func:`release`), and the :func:`coordinate` of blocks;
* the environment: :func:`background_flow` and the timeline's :func:`sample`.

An event is one heap tuple ``(time, seq, event, node) + Message``: a message in flight *is* its
arrival event, so nothing else needs to grow; ``seq`` keeps events of equal time in the order they
were scheduled. Every handler takes the :class:`Sim` (the run's :class:`~netweave.sim.state.Options`,
inputs and state, and the queue) and a few scalars; a handler that may complete hosts returns how
many it completed. The counters and the timeline's columns are named (:class:`Counter`,
:class:`Column`): ``counters[COUNTER.ecn_marks] += 1``. Handlers read the state as
``sim.hosts.block[h]``: binding a group of arrays (``hosts = sim.hosts``) would make numba count
a reference to each of its arrays on every call, so a local names one array, where a loop uses
it, or the options (scalars).

Blocks are synchronised through the coordinating switch, with a barrier between blocks (the paper)
or, when the plan asks for ``overlap``, double-buffered: two consecutive blocks may be in flight,
so every piece of per-block state of the hosts (per destination) and of the switches (per
switch and destination) has a second copy, chosen by the block's parity ``block % 2``. Without
overlap there is one copy and the event sequence is the barrier's.

All compiled code of the simulator is in this one file, with the constants it bakes in (the slots of
:data:`COUNTER` and :data:`COLUMN`): numba's cache notices a change to the file of a cached
function, not to the files of the functions and constants it uses.
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref


class Counter(NamedTuple):
    """What a run counts: the names of :data:`COUNTER`'s slots, in the order of the counters array."""

    dropped_messages: int  # tail drops at a switch port
    lost_messages: int  # random loss on a link
    ecn_marks: int  # each reflected to its origin as a CNP
    pulled_destinations: int  # destinations a host pulled after a timeout (§3.4)
    fetches: int  # fetch requests sent by pulling hosts
    resends: int  # features resent marked "bypass"
    unaggregated_messages: int  # copies and forwarded partial sums
    aggregation_results: int  # complete aggregators emitted
    control_bytes: int  # DONE, NEXT, FETCH and PARTIAL-without-payload bytes
    background_bytes: int
    events: int  # events the loop took from the queue


#: The slot of every counter: ``counters[COUNTER.ecn_marks] += 1``.
COUNTER = Counter(*range(len(Counter._fields)))


class Column(NamedTuple):
    """The timeline's columns, per ``bin_s`` bin: the names of :data:`COLUMN`'s slots."""

    delivered_bytes: int  # bytes received by hosts (spread over their arrival)
    result_bytes: int  # of which complete aggregation results
    aggregator_bytes: int  # aggregator memory in use (max)
    max_queue_bytes: int  # largest switch backlog (max)


#: The column of every timeline series: ``timeline[k, COLUMN.delivered_bytes]``.
COLUMN = Column(*range(len(Column._fields)))


# events and message kinds: np.int64, as a Python int would reach a compiled function as a literal
# type, one compilation per value
ARRIVE, SEND, TIMER, CNP, BG, SAMPLE = np.arange(6, dtype=np.int64)
# message kinds (RAW..RESEND carry features: data)
RAW, COPY, RESULT, PARTIAL, RESEND, FETCH, DONE, NEXT, BGPKT = np.arange(9, dtype=np.int64)
# edge states: pending, in a switch aggregator, bypassed in a copy, delivered, pulled by the host
PENDING, AGGREGATED, BYPASSED, CREDITED, PULLED = 0, 1, 2, 3, 4
# how a run ended
FINISHED, STALLED, HORIZON = 0, 1, 2


class Message(NamedTuple):
    """A message in flight (int64 fields). ``a`` and ``b`` by kind:

    ======================= ============================== =================================
    kind                    a                              b
    ======================= ============================== =================================
    RAW, COPY, RESEND       first cross edge               past the last cross edge
    FETCH                   first in-edge (``in_edges``)   past the last one
    RESULT                  destination index              1: a complete aggregator's sum
    PARTIAL                 destination index              the spine aggregator's need
    DONE, NEXT, BGPKT       0                              0
    ======================= ============================== =================================

    ``to``: the destination host (-1: the coordinator); ``spine``: the spine it crosses on a
    leaf-spine; ``count``: the features summed in the payload; ``cover``: the edges a partial sum
    accounts for; ``row``: its payload in :class:`~netweave.sim.state.Payloads` (-1: none). Timers
    carry their generation in ``a``.
    """

    kind: int
    to: int
    a: int
    b: int
    block: int
    size: int
    origin: int
    spine: int
    count: int
    cover: int
    row: int


@structref.register
class SimType(types.StructRef):
    """numba's type of :class:`Sim`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Sim(structref.StructRefProxy):
    """One run: the options, inputs and state (see :mod:`~netweave.sim.state`), the event queue and the
    number of events scheduled so far (``seq``). A reference (numba's ``structref``): handlers pass
    one pointer, not the ~80 arrays it holds, each of which numba would count a reference to."""


structref.define_proxy(Sim, SimType, ["opt", "net", "plan", "links", "hosts", "dests", "switches", "aggs", "payloads",
                                      "coord", "counters", "timeline", "queue", "seq"])


@numba.njit(cache=True)
def run(opt, net, plan, state):
    """Simulate one layer on ``state`` (changed in place); FINISHED, STALLED (nothing left to happen
    before every host holds its sums) or HORIZON (past ``opt.horizon_s``)."""
    queue = [entry(0.0, 0, ARRIVE, 0, signal(0))]  # typed by its first item
    queue.pop()
    sim = Sim(opt=opt, net=net, plan=plan, links=state.links, hosts=state.hosts, dests=state.destinations,
              switches=state.switches, aggs=state.aggregators, payloads=state.payloads, coord=state.coordinator,
              counters=state.counters, timeline=state.timeline, queue=queue, seq=0)
    np.random.seed(opt.seed)
    finished = start(sim)
    while sim.queue and finished < opt.hosts:
        ev = heapq.heappop(sim.queue)
        t, event, node, msg = ev[0], ev[2], ev[3], Message(*ev[4:])
        sim.counters[COUNTER.events] += 1
        if t > opt.horizon_s:
            return HORIZON
        if event == SEND:
            finished += host_send(sim, t, node)
        elif event == SAMPLE:
            sample(sim, t)
        elif event == CNP:
            slow_down(sim, t, node)
        elif event == BG:
            background_flow(sim, t, node)
        elif event == TIMER:
            host_timer(sim, t, node, msg.a)
        elif node < opt.hosts:  # ARRIVE at a host
            finished += host_receive(sim, t, node, msg)
        else:  # ARRIVE at a switch
            switch_receive(sim, t, node, msg)
    return FINISHED if finished == opt.hosts else STALLED


# ---------------------------------------------------------------------------------------------- messages


@numba.njit(cache=True)
def signal(a):
    """The message of an event that is not one (SEND, TIMER with its generation ``a``, CNP, BG, SAMPLE)."""
    return Message(np.int64(0), np.int64(0), np.int64(a), np.int64(0), np.int64(0), np.int64(0), np.int64(0),
                   np.int64(0), np.int64(0), np.int64(0), np.int64(0))


@numba.njit(cache=True)
def features(kind, to, lo, hi, block, size, origin, spine):
    """RAW, COPY, RESEND, FETCH (edges ``[lo, hi)``) or BGPKT."""
    return Message(np.int64(kind), np.int64(to), np.int64(lo), np.int64(hi), np.int64(block), np.int64(size),
                   np.int64(origin), np.int64(spine), np.int64(0), np.int64(0), np.int64(-1))


@numba.njit(cache=True)
def control(kind, to, block, size, origin):
    """DONE (``to`` -1: the coordinator) or NEXT."""
    return Message(np.int64(kind), np.int64(to), np.int64(0), np.int64(0), np.int64(block), np.int64(size),
                   np.int64(origin), np.int64(0), np.int64(0), np.int64(0), np.int64(-1))


@numba.njit(cache=True)
def result(to, dest, aggregated, block, size, origin, count, row):
    """A sum of ``count`` features for destination index ``dest``, down to host ``to``."""
    return Message(np.int64(RESULT), np.int64(to), np.int64(dest), np.int64(aggregated), np.int64(block),
                   np.int64(size), np.int64(origin), np.int64(0), np.int64(count), np.int64(0), np.int64(row))


@numba.njit(cache=True)
def partial(to, dest, need, block, size, origin, spine, sums):
    """A leaf's partial sum for destination index ``dest`` (host ``to``), up to ``spine``, whose aggregator needs
    ``need`` edges; ``sums`` = (count, cover, row)."""
    count, cover, row = sums
    return Message(np.int64(PARTIAL), np.int64(to), np.int64(dest), np.int64(need), np.int64(block), np.int64(size),
                   np.int64(origin), np.int64(spine), np.int64(count), np.int64(cover), np.int64(row))


# ---------------------------------------------------------------------------------------------- links


@numba.njit(cache=True)
def entry(t, seq, event, node, msg):
    """An event's heap tuple: ordered by time, then by the order in which events were scheduled."""
    return (t, np.int64(seq), np.int64(event), np.int64(node), msg.kind, msg.to, msg.a, msg.b, msg.block, msg.size,
            msg.origin, msg.spine, msg.count, msg.cover, msg.row)


@numba.njit(cache=True)
def push(sim, t, event, node, msg):
    """Schedule ``event`` at ``node`` for time ``t``."""
    sim.seq += 1
    heapq.heappush(sim.queue, entry(t, sim.seq, event, node, msg))


@numba.njit(cache=True)
def route(sim, x, dst, spine):
    """Next (link, head node) from node ``x`` towards host ``dst`` (-1: the coordinator) via ``spine``."""
    m, nl, ns = sim.opt.hosts, sim.opt.leaves, sim.opt.spines
    leaf_of = sim.net.leaf_of
    if x < m:
        return x, m + leaf_of[x]
    if x < m + nl:
        l = x - m
        if dst >= 0 and leaf_of[dst] == l:
            return m + dst, dst
        s = 0 if dst < 0 else spine
        return 2 * m + l * ns + s, m + nl + s
    s = x - m - nl
    return 2 * m + nl * ns + s * nl + leaf_of[dst], m + leaf_of[dst]


@numba.njit(cache=True)
def send(sim, t, x, msg):
    """Node ``x`` sends ``msg`` on towards ``msg.to`` (a host's first hop is its leaf)."""
    link, head = route(sim, x, msg.to, msg.spine)
    transmit(sim, t, link, head, msg)


@numba.njit(cache=True)
def transmit(sim, t, link, head, msg):
    """Enqueue ``msg`` on ``link`` (towards node ``head``): tail drop, ECN marking, random loss."""
    opt, counters = sim.opt, sim.counters
    rate = sim.net.rate[link]
    backlog = max(sim.links.free_at[link] - t, 0.0) * rate
    data = msg.kind <= RESEND
    if link >= opt.hosts:  # a switch output port
        if backlog + msg.size > opt.buffer_bytes:
            counters[COUNTER.dropped_messages] += 1
            return
        q = backlog + msg.size
        sim.links.max_backlog[link] = max(sim.links.max_backlog[link], q)
        k = min(int(t / opt.bin_s), sim.timeline.shape[0] - 1)
        sim.timeline[k, COLUMN.max_queue_bytes] = max(sim.timeline[k, COLUMN.max_queue_bytes], q)
        if opt.congestion_control and backlog > opt.ecn_bytes and data and msg.origin >= 0:
            counters[COUNTER.ecn_marks] += 1  # reflected to the origin as a CNP (§3.4)
            push(sim, t + opt.cnp_delay_s, CNP, msg.origin, signal(0))
    sim.links.free_at[link] = max(sim.links.free_at[link], t) + msg.size / rate
    if msg.kind == BGPKT:
        counters[COUNTER.background_bytes] += msg.size
    elif data:
        sim.links.data_bytes[link] += msg.size
    else:
        counters[COUNTER.control_bytes] += msg.size
    if opt.loss > 0.0 and np.random.random() < opt.loss:
        counters[COUNTER.lost_messages] += 1
        return
    push(sim, sim.links.free_at[link] + sim.net.delay[link], ARRIVE, head, msg)


@numba.njit(cache=True)
def spread(bins, col, t0, t1, size, dt):
    """Add ``size`` bytes received evenly over ``[t0, t1]`` to column ``col`` of the bins they overlap.

    A message's bytes reach a host over its serialisation time on the last link. Counting all of
    them in the bin of the last byte made a bin that ends mid-message gain bytes the next bin
    loses, and a host's throughput could exceed its line rate (issue 15). Receptions on one link
    never overlap, so spread this way no bin gets more than ``rate * dt`` per host. The last bin
    also takes whatever falls past the horizon; the pieces always sum to ``size``.
    """
    last = bins.shape[0] - 1
    k0 = min(int(t0 / dt), last)
    k1 = min(int(t1 / dt), last)
    if k0 >= k1 or t1 <= t0:
        bins[k1, col] += size
        return
    given = 0.0
    for k in range(k0, k1):
        part = size * (min(t1, (k + 1) * dt) - max(t0, k * dt)) / (t1 - t0)
        bins[k, col] += part
        given += part
    bins[k1, col] += size - given


# ---------------------------------------------------------------------------------------------- environment


@numba.njit(cache=True)
def sample(sim, t):
    """The state at every bin start: aggregators in use, largest switch backlog."""
    opt, timeline, free_at, rate = sim.opt, sim.timeline, sim.links.free_at, sim.net.rate
    k = min(int(t / opt.bin_s + 0.5), opt.bins - 1)
    timeline[k, COLUMN.aggregator_bytes] = max(timeline[k, COLUMN.aggregator_bytes],
                                               sim.aggs.used[0] * opt.chunks * 128.0)
    for lk in range(opt.hosts, rate.size):
        timeline[k, COLUMN.max_queue_bytes] = max(timeline[k, COLUMN.max_queue_bytes], (free_at[lk] - t) * rate[lk])
    if sim.queue:  # nothing else pending would be a stall: let the loop end and say so
        push(sim, (k + 1) * opt.bin_s, SAMPLE, 0, signal(0))


@numba.njit(cache=True)
def background_flow(sim, t, h):
    """A Hadoop flow from host ``h`` to a random other host, in MTU packets at line rate; the next one
    after an exponential gap (§6.5, :mod:`~netweave.sim.background`)."""
    opt = sim.opt
    r = np.random.random()
    cdf, sizes = sim.net.background_cdf, sim.net.background_sizes
    j = max(1, min(np.searchsorted(cdf, r), cdf.size - 1))  # between points j - 1 and j: linear
    fsize = max(1, int(sizes[j - 1] + (sizes[j] - sizes[j - 1]) * (r - cdf[j - 1]) / (cdf[j] - cdf[j - 1])))
    w = np.random.randint(0, opt.hosts - 1)
    w = w + 1 if w >= h else w
    fs = np.random.randint(0, max(opt.spines, 1))
    left = fsize
    while left > 0:
        p = min(left, opt.mtu_bytes)
        left -= p
        send(sim, t, h, features(BGPKT, w, 0, 0, 0, p, -1, fs))
    push(sim, t + np.random.exponential(opt.background_gap_s), BG, h, signal(0))


# ---------------------------------------------------------------------------------------------- hosts


@numba.njit(cache=True)
def start(sim):
    """Every host starts block 0 at ``t = 0`` (with overlap it awaits the sums of blocks 0 and 1);
    background flows and the sampling begin. Returns the hosts done already (nothing to do)."""
    opt = sim.opt
    m, nb = opt.hosts, opt.blocks
    for h in range(m):
        if opt.overlap:
            sim.hosts.unit[h], sim.hosts.unit_end[h] = sim.plan.unit_ptr[h * nb], sim.plan.unit_ptr[h * nb + 1]
            sim.hosts.sent_all[h] = sim.hosts.unit[h] == sim.hosts.unit_end[h]
            for p in range(2):
                await_block(sim, h, p, p)
            if not sim.hosts.sent_all[h]:
                push(sim, 0.0, SEND, h, signal(0))
            if opt.recover:
                sim.hosts.timer[h] = 1
                push(sim, opt.timeout_s, TIMER, h, signal(sim.hosts.timer[h]))
            continue
        start_block(sim, 0.0, h, 0)
    if opt.background_gap_s > 0:
        for h in range(m):
            push(sim, np.random.exponential(opt.background_gap_s), BG, h, signal(0))
    push(sim, 0.0, SAMPLE, 0, signal(0))
    finished = 0
    for h in range(m):
        if opt.overlap:
            finished += overlap_progress(sim, 0.0, 0.0, h)
        elif sim.hosts.remaining[h, 0] == 0 and sim.hosts.sent_all[h]:
            finished += block_done(sim, 0.0, h)
    return finished


@numba.njit(cache=True)
def host_send(sim, t, h):
    """Host ``h`` sends its next unit: a feature multicast through the switch (RAW) or a copy to one worker,
    paced at its rate and never more than one message ahead of its NIC queue."""
    opt = sim.opt
    if sim.hosts.finished[h] or sim.hosts.waiting[h] or sim.hosts.sent_all[h] \
            or sim.hosts.unit[h] >= sim.hosts.unit_end[h]:
        return 0
    k = sim.hosts.unit[h]
    sim.hosts.unit[h] += 1
    fbytes = opt.feature_bytes
    if sim.plan.unit_to[k] < 0:
        send(sim, t, h, features(RAW, -1, sim.plan.unit_lo[k], sim.plan.unit_hi[k], sim.hosts.block[h], fbytes, h, 0))
    else:
        w = sim.plan.unit_to[k]
        sim.counters[COUNTER.unaggregated_messages] += 1
        send(sim, t, h, features(COPY, w, sim.plan.unit_lo[k], sim.plan.unit_hi[k], sim.hosts.block[h], fbytes, h,
                                 (h + w) % max(opt.spines, 1)))
    if sim.hosts.unit[h] >= sim.hosts.unit_end[h]:
        sim.hosts.sent_all[h] = True
        if opt.overlap:  # the next block may follow at once, paced like the next unit of this one
            nxt = max(t + fbytes / sim.hosts.rate[h], sim.links.free_at[h] - fbytes / sim.hosts.line_rate[h])
            return overlap_progress(sim, t, nxt, h)
        if sim.hosts.remaining[h, 0] == 0:
            return block_done(sim, t, h)
        return 0
    if opt.congestion_control and t - sim.hosts.last_increase[h] >= opt.ai_every_s \
            and t - sim.hosts.last_decrease[h] >= opt.ai_every_s:
        sim.hosts.rate[h] = min(sim.hosts.line_rate[h], sim.hosts.rate[h] + opt.ai_rate)  # additive increase (§3.4)
        sim.hosts.last_increase[h] = t
    nxt = max(t + fbytes / sim.hosts.rate[h], sim.links.free_at[h] - fbytes / sim.hosts.line_rate[h])
    push(sim, nxt, SEND, h, signal(0))
    return 0


@numba.njit(cache=True)
def slow_down(sim, t, h):
    """A CNP at host ``h``: halve its rate, at most once per ``decrease_every_s`` (§3.4)."""
    opt = sim.opt
    if t - sim.hosts.last_decrease[h] >= opt.decrease_every_s or sim.hosts.last_decrease[h] < 0:
        sim.hosts.rate[h] = max(sim.hosts.rate[h] / 2.0, opt.min_rate)
        sim.hosts.last_decrease[h] = t


@numba.njit(cache=True)
def host_timer(sim, t, h, generation):
    """The timer of host ``h`` (§3.4): after ``timeout_s`` without progress it pulls what it misses; while it
    waits for a NEXT that may have been lost it says DONE again. A timer of an older generation is void."""
    opt = sim.opt
    if generation != sim.hosts.timer[h] or sim.hosts.finished[h]:
        return
    if opt.overlap:
        overlap_timer(sim, t, h)
        return
    tmo = opt.timeout_s
    if sim.hosts.waiting[h]:
        if t >= sim.hosts.done_t[h] + tmo:  # the DONE or the NEXT was lost: say DONE again
            send(sim, t, h, control(DONE, -1, sim.hosts.block[h], opt.control_bytes, h))
            sim.hosts.done_t[h] = t
        push(sim, sim.hosts.done_t[h] + tmo, TIMER, h, signal(sim.hosts.timer[h]))
        return
    if t >= sim.hosts.last_progress[h] + tmo:  # deadlines compare sums, never differences (rounding)
        pull(sim, t, h, sim.hosts.block[h], 0)
        sim.hosts.last_progress[h] = t
    push(sim, sim.hosts.last_progress[h] + tmo, TIMER, h, signal(sim.hosts.timer[h]))


@numba.njit(cache=True)
def overlap_timer(sim, t, h):
    """Overlap: the timer of host ``h`` pulls every incomplete destination of every block it awaits that may
    be in flight (blocks <= known + 1), and repeats DONE(block - 1) while blocked on its NEXT."""
    opt = sim.opt
    tmo, nb = opt.timeout_s, opt.blocks
    pending = False
    for p in range(2):
        bp = sim.hosts.awaits[h, p]
        if bp < nb and bp <= sim.hosts.known[h] + 1 and sim.hosts.remaining[h, p] > 0:
            pending = True
    if pending and t >= sim.hosts.last_progress[h] + tmo:
        for p in range(2):
            bp = sim.hosts.awaits[h, p]
            if bp < nb and bp <= sim.hosts.known[h] + 1 and sim.hosts.remaining[h, p] > 0:
                pull(sim, t, h, bp, p)
        sim.hosts.last_progress[h] = t
    dn = sim.hosts.block[h] - 1
    again = sim.hosts.waiting[h] and sim.hosts.reported[h, dn & 1] >= dn
    if again and t >= sim.hosts.done_t[h] + tmo:  # the DONE or the NEXT was lost: say DONE again
        send(sim, t, h, control(DONE, -1, dn, opt.control_bytes, h))
        sim.hosts.done_t[h] = t
    nxt = t + tmo
    if pending:
        nxt = sim.hosts.last_progress[h] + tmo
    if again:
        nxt = min(nxt, sim.hosts.done_t[h] + tmo) if pending else sim.hosts.done_t[h] + tmo
    push(sim, nxt, TIMER, h, signal(sim.hosts.timer[h]))


@numba.njit(cache=True)
def host_receive(sim, t, h, msg):
    """A message arrives at host ``h``: a fetch to serve, a NEXT, or features and sums to add."""
    opt = sim.opt
    kind, blk = msg.kind, msg.block
    if kind == BGPKT:
        return 0
    if kind == FETCH:
        serve_fetch(sim, t, h, msg)
        return 0
    if kind == NEXT:
        return next_block(sim, t, h, blk)
    # data for this host: its bytes arrived over the last hop's serialisation time, not at t
    t0 = t - msg.size / sim.net.rate[opt.hosts + h]
    spread(sim.timeline, COLUMN.delivered_bytes, t0, t, msg.size, opt.bin_s)
    if kind == RESULT and msg.b == 1:
        spread(sim.timeline, COLUMN.result_bytes, t0, t, msg.size, opt.bin_s)
    finished = 0
    if opt.overlap:
        p = blk & 1
        if blk - 1 > sim.hosts.known[h] and not sim.hosts.finished[h]:  # someone sends blk: its NEXT is late or lost
            sim.hosts.known[h] = blk - 1
            sim.hosts.last_progress[h] = t
            finished += overlap_progress(sim, t, t, h)
        if sim.hosts.finished[h] or sim.hosts.awaits[h, p] != blk:  # a block whose sums the host holds already
            return finished
    else:
        p = 0
        if sim.hosts.waiting[h] and blk == sim.hosts.block[h] + 1:  # data of the next block: its NEXT is late or lost
            sim.hosts.waiting[h] = False
            start_block(sim, t, h, blk)
        if blk != sim.hosts.block[h] or sim.hosts.waiting[h] or sim.hosts.finished[h]:
            return 0
    if kind == RESULT:
        completed = take_result(sim, t, h, p, msg)
    else:
        completed = take_features(sim, t, h, p, msg)
    if completed:
        sim.hosts.remaining[h, p] -= completed
        if opt.overlap:
            if sim.hosts.remaining[h, p] == 0:
                finished += overlap_progress(sim, t, t, h)
        elif sim.hosts.remaining[h, 0] == 0 and sim.hosts.sent_all[h]:
            finished += block_done(sim, t, h)
    return finished


@numba.njit(cache=True)
def take_result(sim, t, h, p, msg):
    """A sum for destination index ``msg.a`` (block parity ``p``) at host ``h``: 1 if it completes the
    destination. A pulled destination ignores the sums of its block (it receives every feature on
    its own, §3.4)."""
    dv = msg.a
    if sim.dests.pulled[p, dv] == msg.block:
        return 0
    sim.hosts.last_progress[h] = t
    sim.dests.got[p, dv] += msg.count
    partial_sum, rows = sim.dests.partial, sim.payloads.rows
    for j in range(sim.opt.dim):
        partial_sum[p, dv, j] += rows[msg.row, j]
    if sim.dests.got[p, dv] == sim.dests.need[p, dv]:
        fold(sim, p, dv)
        return 1
    return 0


@numba.njit(cache=True)
def take_features(sim, t, h, p, msg):
    """A COPY or RESEND at host ``h``: credit every carried edge once (§3.4's reception bitmap); the
    destinations it completes."""
    state, sums, values = sim.dests.edge_state, sim.dests.sums, sim.plan.values
    completed = 0
    for e in range(msg.a, msg.b):
        st = state[e]
        if st == CREDITED or (msg.kind == COPY and st == AGGREGATED):
            continue
        state[e] = CREDITED
        sim.hosts.last_progress[h] = t
        v = sim.plan.dst[e]
        dv = sim.plan.dest_index[v]
        sim.dests.got[p, dv] += 1
        sim.dests.direct[p, dv] += 1
        u = sim.plan.src[e]
        for j in range(sim.opt.dim):
            sums[v, j] += values[u, j]
        if sim.dests.got[p, dv] == sim.dests.need[p, dv]:
            completed += 1
            fold(sim, p, dv)
    return completed


@numba.njit(cache=True)
def fold(sim, p, dv):
    """Add the aggregated part of completed destination ``dv`` (block parity ``p``) into its sum."""
    v = sim.plan.dest_vertex[dv]
    partial_sum, sums = sim.dests.partial, sim.dests.sums
    for j in range(sim.opt.dim):
        sums[v, j] += partial_sum[p, dv, j]
        partial_sum[p, dv, j] = 0.0


@numba.njit(cache=True)
def serve_fetch(sim, t, h, msg):
    """Resend the features a pulling host has not credited, marked "bypass" (§3.4)."""
    for i in range(msg.a, msg.b):
        e = sim.plan.in_edges[i]
        if sim.dests.edge_state[e] != CREDITED:
            sim.counters[COUNTER.resends] += 1
            v = sim.plan.dst[e]
            send(sim, t, h, features(RESEND, sim.plan.parts[v], e, e + 1, msg.block, sim.opt.feature_bytes, h,
                                     v % max(sim.opt.spines, 1)))


@numba.njit(cache=True)
def next_block(sim, t, h, blk):
    """NEXT(``blk``) at host ``h``: with overlap every block before ``blk`` is complete everywhere; at the
    barrier, block ``blk`` may start (§3.3)."""
    if sim.opt.overlap:
        if blk > sim.hosts.known[h] and not sim.hosts.finished[h]:
            sim.hosts.known[h] = blk
            sim.hosts.last_progress[h] = t
            return overlap_progress(sim, t, t, h)
        return 0
    if sim.hosts.waiting[h] and blk == sim.hosts.block[h] + 1:
        sim.hosts.waiting[h] = False
        start_block(sim, t, h, blk)
        if sim.hosts.remaining[h, 0] == 0 and sim.hosts.sent_all[h]:
            return block_done(sim, t, h)
    return 0


@numba.njit(cache=True)
def start_block(sim, t, h, blk):
    """Barrier: host ``h`` enters block ``blk``: its units to send and the destinations it waits for."""
    opt = sim.opt
    nb = opt.blocks
    sim.hosts.block[h] = blk
    sim.hosts.waiting[h] = False
    sim.hosts.unit[h], sim.hosts.unit_end[h] = sim.plan.unit_ptr[h * nb + blk], sim.plan.unit_ptr[h * nb + blk + 1]
    sim.hosts.sent_all[h] = sim.hosts.unit[h] == sim.hosts.unit_end[h]
    lo, hi = sim.plan.dest_ptr[h * nb + blk], sim.plan.dest_ptr[h * nb + blk + 1]
    sim.hosts.remaining[h, 0] = hi - lo
    partial_sum = sim.dests.partial
    for k in range(lo, hi):
        dv = sim.plan.dest_index[sim.plan.dest_v[k]]
        sim.dests.need[0, dv] = sim.plan.dest_hi[k] - sim.plan.dest_lo[k]
        sim.dests.got[0, dv] = 0
        sim.dests.direct[0, dv] = 0
        for j in range(partial_sum.shape[2]):
            partial_sum[0, dv, j] = 0.0
    sim.hosts.last_progress[h] = t
    if not sim.hosts.sent_all[h]:
        push(sim, t, SEND, h, signal(0))
    if opt.recover:
        sim.hosts.timer[h] += 1
        push(sim, t + opt.timeout_s, TIMER, h, signal(sim.hosts.timer[h]))


@numba.njit(cache=True)
def block_done(sim, t, h):
    """Barrier: host ``h`` has sent its units and holds every sum of its block: 1 if that was the last
    block, else it reports DONE to the coordinating switch and waits for the next block (§3.3)."""
    sim.hosts.done_t[h] = t
    if sim.hosts.block[h] == sim.opt.blocks - 1:
        sim.hosts.finished[h] = True
        sim.hosts.finish_t[h] = t
        return 1
    sim.hosts.waiting[h] = True
    send(sim, t, h, control(DONE, -1, sim.hosts.block[h], sim.opt.control_bytes, h))
    return 0


@numba.njit(cache=True)
def await_block(sim, h, p, blk):
    """Overlap: parity ``p`` of host ``h`` now awaits the sums of block ``blk`` (nothing past the last)."""
    nb = sim.opt.blocks
    sim.hosts.awaits[h, p] = blk
    sim.hosts.remaining[h, p] = 0
    if blk >= nb:
        return
    lo, hi = sim.plan.dest_ptr[h * nb + blk], sim.plan.dest_ptr[h * nb + blk + 1]
    sim.hosts.remaining[h, p] = hi - lo
    partial_sum = sim.dests.partial
    for k in range(lo, hi):
        dv = sim.plan.dest_index[sim.plan.dest_v[k]]
        sim.dests.need[p, dv] = sim.plan.dest_hi[k] - sim.plan.dest_lo[k]
        sim.dests.got[p, dv] = 0
        sim.dests.direct[p, dv] = 0
        for j in range(partial_sum.shape[2]):
            partial_sum[p, dv, j] = 0.0


@numba.njit(cache=True)
def overlap_progress(sim, t, tsend, h):
    """Overlap: everything host ``h`` may do at ``t``. A parity whose block's sums are all held moves on
    to the block after next; block ``b`` is reported (DONE to the coordinator, where a block waits
    for it: ``b + 2 < B``) once its sums are held and its units sent; block ``c + 1`` starts (its
    first unit goes out at ``tsend``) once block ``c`` is sent and block ``c - 1`` is complete
    everywhere (``known[h] >= c``). 1 when the host has sent everything and holds every sum."""
    opt = sim.opt
    if sim.hosts.finished[h]:
        return 0
    nb = opt.blocks
    moved = True
    while moved:
        moved = False
        for p in range(2):
            while sim.hosts.awaits[h, p] < nb and sim.hosts.remaining[h, p] == 0:
                await_block(sim, h, p, sim.hosts.awaits[h, p] + 2)
        cur = sim.hosts.block[h]
        for blk in range(max(cur - 1, 0), cur + 1):
            p = blk & 1
            if sim.hosts.reported[h, p] < blk and sim.hosts.awaits[h, p] > blk and (blk < cur or sim.hosts.sent_all[h]):
                sim.hosts.reported[h, p] = blk
                if blk + 2 < nb:
                    send(sim, t, h, control(DONE, -1, blk, opt.control_bytes, h))
                    sim.hosts.done_t[h] = t
        if sim.hosts.sent_all[h] and sim.hosts.block[h] + 1 < nb and sim.hosts.known[h] >= sim.hosts.block[h]:
            c = sim.hosts.block[h] + 1
            sim.hosts.block[h] = c
            sim.hosts.unit[h], sim.hosts.unit_end[h] = sim.plan.unit_ptr[h * nb + c], sim.plan.unit_ptr[h * nb + c + 1]
            sim.hosts.sent_all[h] = sim.hosts.unit[h] == sim.hosts.unit_end[h]
            if not sim.hosts.sent_all[h]:
                push(sim, tsend, SEND, h, signal(0))
            moved = True
    cur = sim.hosts.block[h]
    sim.hosts.waiting[h] = sim.hosts.sent_all[h] and cur + 1 < nb and sim.hosts.known[h] < cur  # blocked on NEXT(cur)
    if sim.hosts.sent_all[h] and cur == nb - 1 and sim.hosts.awaits[h, 0] >= nb and sim.hosts.awaits[h, 1] >= nb:
        sim.hosts.finished[h] = True
        sim.hosts.finish_t[h] = t
        sim.hosts.waiting[h] = False
        return 1
    return 0


@numba.njit(cache=True)
def pull(sim, t, h, blk, p):
    """Timeout at host ``h`` (§3.4): every incomplete destination of block ``blk`` (parity ``p``) drops
    its aggregated partial sums and pulls the features it has not received from their owners, which
    resend them marked "bypass"."""
    opt = sim.opt
    nb = opt.blocks
    src, parts, in_edges, state = sim.plan.src, sim.plan.parts, sim.plan.in_edges, sim.dests.edge_state
    partial_sum = sim.dests.partial
    for k in range(sim.plan.dest_ptr[h * nb + blk], sim.plan.dest_ptr[h * nb + blk + 1]):
        dv = sim.plan.dest_index[sim.plan.dest_v[k]]
        if sim.dests.got[p, dv] >= sim.dests.need[p, dv]:
            continue
        sim.counters[COUNTER.pulled_destinations] += 1
        sim.dests.pulled[p, dv] = blk
        sim.dests.got[p, dv] = sim.dests.direct[p, dv]
        for j in range(partial_sum.shape[2]):
            partial_sum[p, dv, j] = 0.0
        i = sim.plan.dest_lo[k]
        while i < sim.plan.dest_hi[k]:
            owner = parts[src[in_edges[i]]]
            g = i
            missing = 0
            while g < sim.plan.dest_hi[k] and parts[src[in_edges[g]]] == owner:
                if state[in_edges[g]] != CREDITED:
                    state[in_edges[g]] = PULLED
                    missing += 1
                g += 1
            if missing:
                sim.counters[COUNTER.fetches] += 1
                send(sim, t, h, features(FETCH, owner, i, g, blk, opt.control_bytes, h,
                                         (h + owner) % max(opt.spines, 1)))
            i = g


# ---------------------------------------------------------------------------------------------- switches


@numba.njit(cache=True)
def switch_receive(sim, t, x, msg):
    """A message arrives at switch node ``x``: the coordinator takes DONEs, a leaf aggregates features (level 1),
    a spine partial sums (level 2); a resend bypasses its destination's aggregator from now on; the
    rest is forwarded."""
    opt = sim.opt
    m, nl = opt.hosts, opt.leaves
    if msg.kind == DONE and x == (m if opt.spines == 0 else m + nl):
        coordinate(sim, t, x, msg)
        return
    p = msg.block & 1 if opt.overlap else 0
    # overlap: a block every host holds already (a late copy, or one overtaken by the pulls) is
    # forwarded and touches no aggregator state, which belongs to the block after next by now
    stale = opt.overlap and msg.block < sim.coord.block[0]
    if msg.kind == RAW:
        multicast(sim, t, x, p, stale, msg)
        return
    if msg.kind == RESEND and not stale:
        bypass(sim, x, p, msg)
    if msg.kind == PARTIAL and x >= m + nl:  # level 2 at the spine
        aggregate_partial(sim, t, x, p, stale, msg)
        return
    send(sim, t, x, msg)


@numba.njit(cache=True)
def bypass(sim, x, p, msg):
    """A resent feature passes switch ``x``: it releases the aggregator of its destination, which is bypassed
    for the rest of the block (§3.4, "Resend"); the resend goes on to the host."""
    sw, blk = x - sim.opt.hosts, msg.block
    dv = sim.plan.dest_index[sim.plan.dst[msg.a]]
    sim.switches.bypass[sw, p, dv] = blk
    slot = sim.switches.slot[sw, p, dv]
    if slot >= 0 and sim.aggs.block[slot] == blk:
        release(sim, sw, p, dv, slot)


@numba.njit(cache=True)
def multicast(sim, t, x, p, stale, msg):
    """RAW at its leaf ``x`` (level 1, §3.1): the feature goes into the aggregator of each of the unit's
    destinations; per destination worker, the edges that find no aggregator (or whose destination is
    forwarded) ride one copy."""
    opt = sim.opt
    parts, dst = sim.plan.parts, sim.plan.dst
    e, b = msg.a, msg.b
    while e < b:
        w = parts[dst[e]]
        g = e
        while g < b and parts[dst[g]] == w:
            g += 1
        bypassed = 0
        for f in range(e, g):
            if stale:
                bypassed += 1
            else:
                bypassed += aggregate_feature(sim, t, x, p, f, msg)
        if bypassed:
            sim.counters[COUNTER.unaggregated_messages] += 1
            spine = (msg.origin + w) % max(opt.spines, 1)
            send(sim, t, x, features(COPY, w, e, g, msg.block, opt.feature_bytes, msg.origin, spine))
        e = g


@numba.njit(cache=True)
def aggregate_feature(sim, t, x, p, f, msg):
    """Cross edge ``f`` of a RAW at leaf ``x``: add the feature into its destination's aggregator, opened on
    first use; 1 if the edge rides the copy instead. A complete aggregator emits its sum (down to
    the host, or up to the spine of a destination under another leaf); a destination under another
    leaf that got no aggregator here tells its spine what it bypassed."""
    opt = sim.opt
    state = sim.dests.edge_state
    if sim.plan.forward[f]:  # the plan forwards this destination: no aggregator, ride the copy
        if state[f] == PENDING:
            state[f] = BYPASSED
        return 1
    sw, blk = x - opt.hosts, msg.block
    v = sim.plan.dst[f]
    w = sim.plan.parts[v]
    dv = sim.plan.dest_index[v]
    slot = open_aggregator(sim, t, sw, p, dv, blk, sim.plan.need1[f])
    if sim.switches.bypassed_block[sw, p, dv] != blk:
        sim.switches.bypassed_block[sw, p, dv] = blk
        sim.switches.bypassed[sw, p, dv] = 0
    bypassed = 0
    if slot >= 0:
        if state[f] == PENDING:  # a pulled or delivered edge stays the host's business
            state[f] = AGGREGATED
        sim.aggs.count[slot] += 1
        sim.aggs.cover[slot] += 1
        u = sim.plan.src[f]
        value, values = sim.aggs.value, sim.plan.values
        for j in range(opt.dim):
            value[slot, j] += values[u, j]
    else:
        if state[f] == PENDING:
            state[f] = BYPASSED
        bypassed = 1
        sim.switches.bypassed[sw, p, dv] += 1
        slot = current(sim, sw, p, dv, blk)
    local = sim.net.leaf_of[w] == sw
    if slot >= 0 and sim.aggs.cover[slot] + sim.switches.bypassed[sw, p, dv] == sim.aggs.need[slot]:
        row = take_sum(sim, slot)
        if local:
            send(sim, t, x, result(w, dv, 1, blk, opt.feature_bytes, msg.origin, sim.aggs.count[slot], row))
        else:
            send(sim, t, x, partial(w, dv, sim.plan.need2[f], blk, opt.feature_bytes, msg.origin, v % opt.spines,
                                    (sim.aggs.count[slot], sim.aggs.need[slot], row)))
        release(sim, sw, p, dv, slot)
    elif slot < 0 and not local and opt.spines > 0 and sim.switches.bypassed[sw, p, dv] == sim.plan.need1[f] \
            and sim.switches.bypass[sw, p, dv] != blk:  # nothing aggregated here: tell the spine
        send(sim, t, x, partial(w, dv, sim.plan.need2[f], blk, opt.control_bytes, msg.origin, v % opt.spines,
                                (0, sim.plan.need1[f], -1)))
    return bypassed


@numba.njit(cache=True)
def aggregate_partial(sim, t, x, p, stale, msg):
    """PARTIAL at spine ``x`` (level 2, §4's two-level aggregation): the leaves' partial sums of a destination
    add up in its aggregator here; without one, a sum goes on to the host unaggregated."""
    opt = sim.opt
    sw, blk, dv, to = x - opt.hosts, msg.block, msg.a, msg.to
    if stale:
        if msg.count > 0:
            sim.counters[COUNTER.unaggregated_messages] += 1
            send(sim, t, x, result(to, dv, 0, blk, opt.feature_bytes, msg.origin, msg.count, msg.row))
        return
    if sim.switches.bypassed_block[sw, p, dv] != blk:
        sim.switches.bypassed_block[sw, p, dv] = blk
        sim.switches.bypassed[sw, p, dv] = 0
    slot = -1
    if sim.switches.bypass[sw, p, dv] != blk:
        slot = current(sim, sw, p, dv, blk)
        if slot < 0 and msg.count > 0:
            slot = open_aggregator(sim, t, sw, p, dv, blk, msg.b)
    if slot >= 0:
        sim.aggs.count[slot] += msg.count
        sim.aggs.cover[slot] += msg.cover
        value, rows = sim.aggs.value, sim.payloads.rows
        for j in range(opt.dim):
            value[slot, j] += rows[msg.row, j]
    else:
        sim.switches.bypassed[sw, p, dv] += msg.cover
        slot = current(sim, sw, p, dv, blk)
        if msg.count > 0:  # forward the partial sum unaggregated
            sim.counters[COUNTER.unaggregated_messages] += 1
            send(sim, t, x, result(to, dv, 0, blk, opt.feature_bytes, msg.origin, msg.count, msg.row))
    if slot >= 0 and sim.aggs.cover[slot] + sim.switches.bypassed[sw, p, dv] == sim.aggs.need[slot]:
        row = take_sum(sim, slot)
        send(sim, t, x, result(to, dv, 1, blk, opt.feature_bytes, msg.origin, sim.aggs.count[slot], row))
        release(sim, sw, p, dv, slot)


@numba.njit(cache=True)
def take_sum(sim, slot):
    """The sum of complete aggregator ``slot`` as a message payload: its row."""
    row = 0
    if sim.opt.dim > 0:
        row = sim.payloads.next[0]
        sim.payloads.next[0] += 1
        rows, value = sim.payloads.rows, sim.aggs.value
        for j in range(sim.opt.dim):
            rows[row, j] = value[slot, j]
    sim.counters[COUNTER.aggregation_results] += 1
    return row


@numba.njit(cache=True)
def release(sim, sw, p, dv, slot):
    """Free the aggregator ``slot`` of ``dv`` (block parity ``p``) at switch ``sw``."""
    sim.switches.slot[sw, p, dv] = -1
    sim.aggs.free[sim.aggs.base[sw] + sim.aggs.free_top[sw]] = slot
    sim.aggs.free_top[sw] += 1
    sim.aggs.used[0] -= 1


@numba.njit(cache=True)
def current(sim, sw, p, dv, blk):
    """The open aggregator of ``dv`` at ``sw`` for block ``blk``, or -1. A stale one of an older block
    of the same parity is freed: that block is complete everywhere (with overlap, ``blk`` is in
    flight only once the block two before it is, so a stale one is never of a block in flight)."""
    slot = sim.switches.slot[sw, p, dv]
    if slot >= 0 and sim.aggs.block[slot] < blk:
        release(sim, sw, p, dv, slot)
        return -1
    return slot if slot >= 0 and sim.aggs.block[slot] == blk else -1


@numba.njit(cache=True)
def open_aggregator(sim, t, sw, p, dv, blk, need):
    """The aggregator of ``dv`` at switch ``sw`` in block ``blk`` (parity ``p``), opened on first use if
    memory allows (an aggregator opens at most once per block and never for a bypassed destination);
    -1 if none."""
    opt = sim.opt
    if sim.switches.bypass[sw, p, dv] == blk:
        return -1
    slot = current(sim, sw, p, dv, blk)
    if slot >= 0:
        return slot
    if sim.switches.opened[sw, p, dv] == blk or sim.aggs.free_top[sw] == 0 or blk < sim.coord.block[0]:
        return -1  # coord.block: the oldest block in flight
    sim.aggs.free_top[sw] -= 1
    slot = sim.aggs.free[sim.aggs.base[sw] + sim.aggs.free_top[sw]]
    sim.switches.slot[sw, p, dv] = slot
    sim.switches.opened[sw, p, dv] = blk
    sim.aggs.count[slot] = 0
    sim.aggs.cover[slot] = 0
    sim.aggs.need[slot] = need
    sim.aggs.block[slot] = blk
    value = sim.aggs.value
    for j in range(opt.dim):
        value[slot, j] = 0.0
    sim.aggs.used[0] += 1
    sim.aggs.peak[sw] = max(sim.aggs.peak[sw], sim.aggs.base[sw + 1] - sim.aggs.base[sw] - sim.aggs.free_top[sw])
    k = min(int(t / opt.bin_s), opt.bins - 1)
    sim.timeline[k, COLUMN.aggregator_bytes] = max(sim.timeline[k, COLUMN.aggregator_bytes],
                                                   sim.aggs.used[0] * opt.chunks * 128.0)
    return slot


@numba.njit(cache=True)
def coordinate(sim, t, x, msg):
    """DONE(``msg.block``) from host ``msg.origin`` at the coordinating switch ``x`` (§3.3). Barrier: when
    every host has said DONE for the current block, NEXT goes to all. Overlap: when the oldest
    blocks are complete everywhere, NEXT(the oldest block not) goes to all. A DONE of a block
    already complete is answered with the NEXT its host missed."""
    opt = sim.opt
    m, ctrl, blk, org = opt.hosts, opt.control_bytes, msg.block, msg.origin
    if opt.overlap:
        if blk < sim.coord.block[0]:  # the host missed a NEXT
            send(sim, t, x, control(NEXT, org, sim.coord.block[0], ctrl, -1))
        elif not sim.coord.got[blk * m + org]:
            sim.coord.got[blk * m + org] = True
            sim.coord.per_block[blk] += 1
            c0 = sim.coord.block[0]
            while sim.coord.block[0] < opt.blocks and sim.coord.per_block[sim.coord.block[0]] == m:
                sim.coord.block[0] += 1
            if sim.coord.block[0] > c0:  # every host holds the blocks < sim.coord.block: the block after next may go
                for h in range(m):
                    send(sim, t, x, control(NEXT, h, sim.coord.block[0], ctrl, -1))
        return
    if blk == sim.coord.block[0] and not sim.coord.done[org]:
        sim.coord.done[org] = True
        sim.coord.count[0] += 1
        if sim.coord.count[0] == m:  # every host has its results: start the next block (§3.3)
            sim.coord.block[0] += 1
            sim.coord.count[0] = 0
            for h in range(m):
                sim.coord.done[h] = False
                send(sim, t, x, control(NEXT, h, sim.coord.block[0], ctrl, -1))
    elif blk < sim.coord.block[0]:  # the host missed its NEXT
        send(sim, t, x, control(NEXT, org, sim.coord.block[0], ctrl, -1))
