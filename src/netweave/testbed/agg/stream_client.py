"""One worker's end of the streaming aggregation (issue 31), the part that knows nothing of the
model: :class:`StreamClient` quantises chunks of a vector as they become ready (:mod:`.blockfp`),
sends them through a paced :class:`Sender` thread, collects the complete sums of every stream as
the switches multicast them down (:class:`Sums`), recovers what was lost (its own resends, PULLs
of sums), sends a second round, exactly, of any chunk whose values did not fit, and returns the
decoded mean. The training role (:mod:`.stream_worker`) and the data-plane probe
(:mod:`.stream_probe`) are its users.

Recovery, as SwitchML's: after ``retransmit_s`` (or twice the median of the last steps' waits,
when longer: peers that compute slower than their links are not losses; waits that needed
recovery are not counted, and no wait exceeds :data:`PATIENCE` × ``retransmit_s``, so losses cannot
inflate it) with no new sum, a worker pulls the missing sums from their aggregators (a lost
RESULT); the next time, doubled, it also resends its own values (a lost contribution);
aggregators answer both from the sums they keep.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from dataclasses import dataclass

import numpy as np

from ...dataplane.packet import PRECISION_CODE
from ..net.batchio import recv_batch, send_batch, set_receive_buffer
from . import blockfp
from . import streampacket as sp
from .steps import Diverged, TrainingConfig


PATIENCE = 16  # × retransmit_s: the longest a worker waits, however slow its peers were, before it recovers


def first_wait(waits: list[float], retransmit_s: float) -> float:
    """Seconds without a new sum before a worker first recovers: twice the median of the last 16
    steps' waits (``waits``: those that needed no recovery), at least ``retransmit_s`` and at most
    :data:`PATIENCE` times it."""
    if not waits:
        return retransmit_s
    return min(max(retransmit_s, 2 * float(np.median(waits[-16:]))), PATIENCE * retransmit_s)


@dataclass(frozen=True)
class StreamSpec:
    """One stream of complete sums every worker receives: the root aggregator ``agg_id`` at
    ``address`` (where a missed sum is pulled from), the wire ``precision`` and how many
    ``workers`` its sums add (the q limit's ``N``)."""

    agg_id: int
    precision: str
    workers: int
    address: str


@dataclass(frozen=True, kw_only=True)
class StreamEndpoint:
    """One worker's end of the streaming aggregation.

    Attributes:
        rank: its index among the ``workers``; wor_id: its member id (rank + 1); agg_id: the
        aggregator it sends to, at ``target`` (UDP ``port``); stream: its own stream (an index of
        ``streams``, every stream whose sums it adds into the mean); address, interface: its own
        address and uplink (where it joins ``results_group``); results_port: where sums arrive;
        rate_bps: its pacing (None: as fast as the socket takes it); slack_s: how far a step's sending
        may run ahead of ``rate_bps`` to catch up after the scheduler kept the sender waiting (a
        token bucket that depth deep, emptied at every step); retransmit_s: how long it
        waits for a missing sum before it recovers; timeout_s: how long without any sum before it
        gives up. A whole step's chunks are in flight at once (the launcher checks that they fit
        every aggregator's memory).
    """

    rank: int
    workers: int
    wor_id: int
    agg_id: int
    target: tuple[str, int]
    port: int
    stream: int
    streams: tuple[StreamSpec, ...]
    address: str
    interface: str
    results_group: str
    results_port: int
    retransmit_s: float
    timeout_s: float
    rate_bps: float | None = None
    slack_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class StreamWorkerConfig(TrainingConfig):
    """A streaming worker's role: the training settings and its :class:`StreamEndpoint`."""

    endpoint: StreamEndpoint


def pulls(spec: StreamSpec, step: int, chunks: np.ndarray, size: int, wor_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker ``wor_id``'s PULL packets for ``chunks`` of ``spec``'s stream at ``step`` (each as long
    as its sum)."""
    u = np.zeros((len(chunks), blockfp.values_per_packet(spec.precision)), blockfp.WIRE[spec.precision])
    return sp.build(sp.PULL, spec.agg_id, wor_id, spec.precision, step, chunks, u, exponents=0, want=0, flags=0,
                    size=size)


RETRY = 1 << 31  # a step number with this bit: the second round of a step's chunks whose values did not fit


class Sender(threading.Thread):
    """Sends the batches put in :attr:`batches` (``(rows, lengths)`` to the target, or ``(rows,
    lengths, address)``), paced at ``rate_bps`` over all of them (the sleeps happen here, not in
    the backward pass): a token bucket ``slack_s`` deep, emptied by :meth:`restart` at every step,
    so that a sender the scheduler kept waiting (eight workers share two cores) catches up instead
    of losing that time for good, and no step's sending runs ahead of the rate by more."""

    def __init__(self, sock: socket.socket, target: tuple[str, int], rate_bps: float | None, slack_s: float = 0.0):
        super().__init__(daemon=True)
        self.sock, self.target, self.rate_bps, self.slack_s = sock, target, rate_bps, slack_s
        self.batches: queue.Queue = queue.Queue()
        self.sent_bytes = 0
        self._clock = 0.0

    def run(self) -> None:
        while True:
            item = self.batches.get()
            if item is None:
                return
            rows, lengths, target = item if len(item) == 3 else (*item, self.target)
            for i in range(0, len(lengths), 32):
                send_batch(self.sock, rows[i:i + 32], lengths[i:i + 32], target)
                bits = 8 * int(lengths[i:i + 32].sum())
                self.sent_bytes += bits // 8
                if self.rate_bps:
                    now = time.monotonic()
                    self._clock = max(self._clock, now - self.slack_s) + bits / self.rate_bps
                    if self._clock > now:
                        time.sleep(self._clock - now)
            self.batches.task_done()

    def restart(self) -> None:
        """A new step: no credit carried over from the wait between steps."""
        self._clock = time.monotonic()


class Sums:
    """The complete sums of one step, per stream: ``(chunks, values)`` biased integers, which have
    come, their ``want`` and flags.

    RESULTs of a later round than the one being collected (this step's second round while the first
    is still arriving, or the next step's sums of a stream whose workers are already there) are kept
    (up to :attr:`STASH_STEPS` steps' worth of packets) and taken when that round starts: a worker
    that drains its socket more slowly than its peers move on would otherwise drop them and wait for
    its timeout to pull them again (issue 31: the 0.2–1.3 s steps of 6–8 LeNet-5 workers, with no
    packet lost)."""

    STASH_STEPS = 2  # later rounds' packets kept, in steps' worth of every stream's chunks

    def __init__(self, streams: tuple[StreamSpec, ...], size: int):
        self.streams = streams
        self.index = {(s.agg_id, s.precision): i for i, s in enumerate(streams)}
        self.u = [np.zeros((blockfp.chunks(size, s.precision), blockfp.values_per_packet(s.precision)),
                           blockfp.WIRE[s.precision]) for s in streams]
        self.have = [np.zeros(len(u), bool) for u in self.u]
        self.want = [np.zeros(len(u), np.int8) for u in self.u]
        self.clipped = [np.zeros(len(u), bool) for u in self.u]
        self.exponent = [np.zeros(len(u), np.int8) for u in self.u]  # each sum's, as it came
        self.decoded = [np.zeros(u.shape, np.float64) for u in self.u]  # Σq·2^e, decoded as the sums come
        self.step = -1
        self.stash_limit = self.STASH_STEPS * sum(len(u) for u in self.u)
        self._stash: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, lengths) of later rounds' RESULTs
        self.stashed = 0  # sums that came before their round and were taken from the stash, over the run

    def start(self, step: int, need: list[np.ndarray] | None = None) -> None:
        """Collect the sums of ``step`` (a step number, or one with :data:`RETRY` set), of the chunks
        ``need`` marks (default: all); the others keep what they hold."""
        self.step = step
        for s, h in enumerate(self.have):
            h[:] = False if need is None else ~need[s]
        if self._stash:  # what came early: this round's is taken, a still later round's kept
            rows = np.concatenate([r for r, _ in self._stash])
            lengths = np.concatenate([n for _, n in self._stash])
            self._stash = []
            self.stashed += self.take(sp.parse(rows, lengths, len(rows)))

    def kept(self) -> int:
        """Packets kept for a later round."""
        return sum(len(r) for r, _ in self._stash)

    def later(self, steps: np.ndarray) -> np.ndarray:
        """Which of the packets' ``steps`` belong to a later round than the one being collected."""
        s = steps.astype(np.int64)
        base, retry = self.step & ~RETRY, bool(self.step & RETRY)
        return ((s & ~RETRY) > base) | (((s & ~RETRY) == base) & ((s & RETRY) != 0) & (not retry))

    def take(self, batch: sp.Batch) -> int:
        """Store the RESULTs of the current step (vectorised per stream) and keep those of a later
        round; returns how many were new."""
        h, new = batch.header, 0
        results = h["kind"] == sp.RESULT
        early = np.flatnonzero(results & self.later(h["step"]))
        room = self.stash_limit - self.kept()
        if early.size and room > 0:
            early = early[:room]
            self._stash.append((batch.rows[early], batch.lengths[early]))
        mine = results & (h["step"] == self.step)
        for (agg, precision), s in self.index.items():
            at = np.flatnonzero(mine & (h["agg_id"] == agg) & (h["precision"] == PRECISION_CODE[precision]))
            c = h["chunk"][at].astype(np.int64)
            keep = c < len(self.have[s])
            at, c = at[keep], c[keep]
            fresh = ~self.have[s][c]
            at, c = at[fresh], c[fresh]
            if not c.size:
                continue
            c, first = np.unique(c, return_index=True)  # a duplicate in one batch counts once
            at = at[first]
            payload = self.u[s].shape[1] * self.u[s].itemsize
            self.u[s][c] = batch.rows[at, sp.HEADER.itemsize:sp.HEADER.itemsize + payload].view(self.u[s].dtype)
            self.want[s][c], self.exponent[s][c] = h["want"][at], h["exponent"][at]
            self.clipped[s][c] = (h["flags"][at] & sp.CLIPPED) != 0
            self.decoded[s][c] = blockfp.decode(self.u[s][c], precision, self.exponent[s][c])
            self.have[s][c] = True
            new += c.size
        return new

    def complete(self) -> bool:
        return all(h.all() for h in self.have)

    def mean(self, size: int, workers: int) -> np.ndarray:
        """The mean gradient (float32): every stream's decoded sum, added in the streams' order, over
        ``workers``. The sums were decoded as they came (:meth:`take`), while the links were still
        busy: what is left after the last one is an addition per stream (ResNet-18, two streams:
        0.15 s a worker when it decoded here, eight workers on two cores at once)."""
        total = self.decoded[0].reshape(-1)[:size].copy()
        for d in self.decoded[1:]:
            total += d.reshape(-1)[:size]
        total /= workers
        return total.astype(np.float32)


class StreamClient:
    """One worker's streaming aggregation of vectors of ``size`` values (see the module docstring).

    Per step: :meth:`begin`, fill :attr:`flat`, :meth:`send_ready` as its suffixes fill (optional),
    then :meth:`finish`, which sends the rest, collects, and returns the mean over all workers."""

    def __init__(self, config: StreamEndpoint, size: int):
        from ..net.multicast import join

        self.config, self.size = config, size
        self.own = config.streams[config.stream]
        self.per = blockfp.values_per_packet(self.own.precision)
        self.chunks = blockfp.chunks(size, self.own.precision)
        self.exponents = [np.zeros(blockfp.chunks(size, s.precision), np.int8) for s in config.streams]
        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        up.bind((config.address, 0))
        self.down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.down.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.down.bind(("0.0.0.0", config.results_port))
        join(self.down, config.results_group, config.interface)
        set_receive_buffer(self.down, 64 << 20)
        self.sender = Sender(up, config.target, config.rate_bps, config.slack_s)
        self.sender.start()
        self.sums = Sums(config.streams, size)
        self.flat = np.zeros(size, np.float32)
        self.packets = np.zeros((self.chunks, sp.HEADER.itemsize + blockfp.PAYLOAD_BYTES), np.uint8)
        self.lengths = np.zeros(self.chunks, np.int64)
        self._rows = np.zeros((512, sp.HEADER.itemsize + blockfp.PAYLOAD_BYTES), np.uint8)
        self._lengths = np.zeros(512, np.int64)
        self.step, self.sent = 0, self.chunks
        self.first_at: float | None = None  # when this step's first chunks were queued (time.perf_counter)
        self.resent = self.retried = self.recoveries = 0  # recoveries: waits that needed pulls or resends
        self.waits: list[float] = []  # how long the last steps' sums took to come

    def first_exponents(self, peaks: np.ndarray) -> None:
        """The first step's exponents, from the largest magnitude every worker will send per value."""
        self.exponents = [blockfp.exponents_for(peaks, s.precision, s.workers) for s in self.config.streams]

    def begin(self, step: int) -> None:
        self.step, self.sent, self.first_at = step, self.chunks, None
        self.sums.start(step)
        self.sender.restart()

    def send_ready(self, first: int) -> None:
        """Quantise chunks ``first … `` (up to those already sent) of :attr:`flat` and queue them."""
        lo, hi = first, self.sent
        if lo >= hi:
            return
        g = self.flat[lo * self.per:min(hi * self.per, self.size)]
        if not np.isfinite(g).all():
            raise Diverged(f"its gradient at step {self.step} has {int((~np.isfinite(g)).sum()):,} NaN or "
                           "infinite values")
        e = self.exponents[self.config.stream][lo:hi]
        u, want, clipped = blockfp.quantize(g, self.own.precision, self.own.workers, e)
        self._queue(self.step, np.arange(lo, hi), u, e, want, clipped)
        self.sent = lo
        self.first_at = self.first_at or time.perf_counter()

    def _queue(self, step: int, ids: np.ndarray, u, e, want, clipped) -> None:
        c = self.config
        packets = sp.build(sp.DATA, c.agg_id, c.wor_id, self.own.precision, step, ids, u, exponents=e, want=want,
                           flags=clipped.astype(np.uint8) * sp.CLIPPED, size=self.size)
        self.packets[ids], self.lengths[ids] = packets
        self.sender.batches.put(packets)

    def finish(self) -> np.ndarray:
        """Send what is left, collect every stream's sums (a second round for chunks that clipped),
        and return the mean (float32); the next step's exponents follow from the sums."""
        self.send_ready(0)
        self.collect(self.step)
        clipped = [c.copy() for c in self.sums.clipped]
        if any(c.any() for c in clipped):  # a value did not fit: those chunks again, at the exponent all need
            retry = self.step | RETRY
            again = np.flatnonzero(clipped[self.config.stream])
            if again.size:
                exact = self.sums.want[self.config.stream][again]
                u, want, clip = blockfp.quantize_chunks(self.flat, self.own.precision, self.own.workers, again, exact)
                self._queue(retry, again, u, exact, want, clip)
            self.sums.start(retry, clipped)
            self.collect(retry)
            self.retried += int(sum(c.sum() for c in clipped))
        mean = self.sums.mean(self.size, self.config.workers)
        self.exponents = [blockfp.next_exponent(w, s.precision) for w, s in zip(self.sums.want, self.config.streams)]
        return mean

    def collect(self, step: int) -> None:
        """Wait for the sums still missing, recovering what was lost (see the module docstring)."""
        c, sums = self.config, self.sums
        longest = PATIENCE * c.retransmit_s
        base = first_wait(self.waits, c.retransmit_s)
        wait, resent, recovered = base, 0, False
        start = last = progress = time.monotonic()
        while not sums.complete():
            k = recv_batch(self.down, self._rows, self._lengths, 0.02)
            if k and sums.take(sp.parse(self._rows, self._lengths, k)):
                last = progress = time.monotonic()
                wait = base
            elif time.monotonic() - progress > c.timeout_s:
                missing = {f"{s.agg_id}/{s.precision}": int((~h).sum()) for s, h in zip(c.streams, sums.have)}
                raise TimeoutError(f"no sum came for {c.timeout_s:g} s at step {step & ~RETRY}; missing per "
                                   f"stream (aggregator/precision): {missing}")
            elif time.monotonic() - last > wait:
                if wait > base:  # the second time: our own values may be what is lost
                    mine = np.flatnonzero(~sums.have[c.stream])
                    self.sender.batches.put((self.packets[mine], self.lengths[mine]))
                    resent += mine.size
                for spec, have in zip(c.streams, sums.have):  # or the sum, on its way down
                    lost = np.flatnonzero(~have)
                    if lost.size:
                        self.sender.batches.put(pulls(spec, step, lost, self.size, c.wor_id) + ((spec.address, c.port),))
                last, wait, recovered = time.monotonic(), min(2 * wait, longest), True
        if not recovered:  # a wait that needed recovery says nothing of how slow the peers are
            self.waits.append(time.monotonic() - start)
        self.recoveries += recovered
        self.resent += resent

    def close(self) -> None:
        self.sender.batches.put(None)
