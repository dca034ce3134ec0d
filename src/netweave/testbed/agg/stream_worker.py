"""A worker of streaming data-parallel training (issue 31): ``python -m
netweave.testbed.agg.stream_worker CONFIG`` (a :class:`StreamWorkerConfig`) in its host's namespace.

No PS and no serial phases. Every worker holds the model and the optimizer; per step it

1. computes the gradient, and as soon as the gradients of a suffix of the model's parameters are
   complete (the backward pass produces the last layers first: PyTorch DDP's buckets) quantises
   the chunks that suffix covers (:mod:`.blockfp`, at the paper's byte widths) and hands them to
   a sender thread, which paces them at the worker's planned rate to its aggregator;
2. collects the complete sum of every chunk of every aggregation stream (each root aggregator
   and precision) as the switches multicast them down — while its own later chunks still go up,
   so both directions of every link are busy — and resends its own chunks of any sum still
   missing after ``retransmit_s`` (the switches answer a resend of a finished chunk with its sum
   again: SwitchML's recovery);
3. decodes the sums into the mean gradient and takes the optimizer step, as every worker does
   with the same bits, so the models stay identical.

Rank 0 evaluates after each epoch and prints one JSON line per epoch and a final one.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..net.batchio import recv_batch, send_batch, set_receive_buffer
from . import blockfp
from . import streampacket as sp
from .steps import Diverged, TrainingConfig, epoch_record, flat_parameters, role_main, set_gradient, setup, \
    shard, steps_per_epoch


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
class StreamWorkerConfig(TrainingConfig):
    """One worker's role.

    Attributes:
        rank: its index among the ``workers`` (its shard); wor_id: its member id (rank + 1);
        agg_id: the aggregator it sends to, at ``target``; stream: its own stream (an index of
        ``streams``, every stream whose sums it adds into the mean); address, interface: its own
        address and uplink (where it joins ``results_group``); results_port: where sums arrive;
        rate_bps: its pacing (None: as fast as the socket takes it); retransmit_s: how long it
        waits for a missing sum before resending. A whole step's chunks are in flight at once (the
        launcher checks that they fit every aggregator's memory).
    """

    rank: int
    workers: int
    wor_id: int
    agg_id: int
    target: tuple[str, int]
    stream: int
    streams: tuple[StreamSpec, ...]
    address: str
    interface: str
    results_group: str
    results_port: int
    retransmit_s: float
    rate_bps: float | None = None


def pulls(spec: StreamSpec, step: int, chunks: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """PULL packets for ``chunks`` of ``spec``'s stream at ``step`` (each as long as its sum)."""
    u = np.zeros((len(chunks), blockfp.values_per_packet(spec.precision)), blockfp.WIRE[spec.precision])
    return sp.build(sp.PULL, spec.agg_id, 0, spec.precision, step, chunks, u, 0, 0, 0, size)


RETRY = 1 << 31  # a step number with this bit: the second round of a step's chunks whose values did not fit


class Sender(threading.Thread):
    """Sends the batches put in :attr:`batches` (``(rows, lengths)`` to the target, or ``(rows,
    lengths, address)``), paced at ``rate_bps`` over all of them (the sleeps happen here, not in
    the backward pass)."""

    def __init__(self, sock: socket.socket, target: tuple[str, int], rate_bps: float | None):
        super().__init__(daemon=True)
        self.sock, self.target, self.rate_bps = sock, target, rate_bps
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
                    self._clock = max(self._clock, now) + bits / self.rate_bps
                    if self._clock > now:
                        time.sleep(self._clock - now)
            self.batches.task_done()


class Sums:
    """The complete sums of one step, per stream: ``(chunks, values)`` biased integers, which have
    come, their ``want`` and flags."""

    def __init__(self, streams: tuple[StreamSpec, ...], size: int):
        self.streams = streams
        self.index = {(s.agg_id, s.precision): i for i, s in enumerate(streams)}
        self.u = [np.zeros((blockfp.chunks(size, s.precision), blockfp.values_per_packet(s.precision)),
                           blockfp.WIRE[s.precision]) for s in streams]
        self.have = [np.zeros(len(u), bool) for u in self.u]
        self.want = [np.zeros(len(u), np.int8) for u in self.u]
        self.clipped = [np.zeros(len(u), bool) for u in self.u]
        self.exponent = [np.zeros(len(u), np.int8) for u in self.u]  # each sum's, as it came
        self.step = -1

    def start(self, step: int, need: list[np.ndarray] | None = None) -> None:
        """Collect the sums of ``step`` (a step number, or one with :data:`RETRY` set), of the chunks
        ``need`` marks (default: all); the others keep what they hold."""
        self.step = step
        for s, h in enumerate(self.have):
            h[:] = False if need is None else ~need[s]

    def take(self, batch: sp.Batch) -> int:
        """Store the RESULTs of the current step; returns how many were new."""
        h, new = batch.header, 0
        for i in np.flatnonzero((h["kind"] == sp.RESULT) & (h["step"] == self.step)):
            s = self.index.get((int(h["agg_id"][i]), sp.PRECISION_OF[int(h["precision"][i])]))
            c = int(h["chunk"][i])
            if s is None or c >= len(self.have[s]) or self.have[s][c]:
                continue
            v = batch.values(int(i))
            self.u[s][c, :v.size] = v
            self.want[s][c], self.clipped[s][c] = h["want"][i], bool(h["flags"][i] & sp.CLIPPED)
            self.exponent[s][c] = h["exponent"][i]
            self.have[s][c] = True
            new += 1
        return new

    def complete(self) -> bool:
        return all(h.all() for h in self.have)

    def mean(self, size: int, workers: int) -> np.ndarray:
        """The mean gradient (float32): every stream's decoded sum, added, over ``workers``."""
        total = np.zeros(size, np.float64)
        for s, spec in enumerate(self.streams):
            total += blockfp.decode(self.u[s], spec.precision, self.exponent[s]).reshape(-1)[:size]
        return (total / workers).astype(np.float32)


class Buckets:
    """DDP's buckets: a hook per parameter notes its gradient as it is accumulated; whenever the
    parameters from some index to the last all have theirs, the chunks that suffix covers are
    ready (``on_ready(first_chunk)``: every chunk from there on may go)."""

    def __init__(self, model, flat: np.ndarray, per: int, on_ready):
        self.params = list(model.parameters())
        self.offsets = np.cumsum([0] + [p.numel() for p in self.params])
        self.flat, self.per, self.on_ready = flat, per, on_ready
        self.ready = np.zeros(len(self.params), bool)
        self.suffix = len(self.params)
        for k, p in enumerate(self.params):
            p.register_post_accumulate_grad_hook(lambda p, k=k: self._done(k, p))

    def reset(self) -> None:
        self.ready[:] = False
        self.suffix = len(self.params)

    def _done(self, k: int, p) -> None:
        self.flat[self.offsets[k]:self.offsets[k + 1]] = p.grad.detach().reshape(-1).numpy()
        self.ready[k] = True
        before = self.suffix
        while self.suffix > 0 and self.ready[self.suffix - 1]:
            self.suffix -= 1
        if self.suffix != before:
            self.on_ready(-(-int(self.offsets[self.suffix]) // self.per))


def first_peaks(model, x, y, config: StreamWorkerConfig) -> np.ndarray:
    """The elementwise largest ``|gradient|`` of the first step over every worker's shard: what
    the first exponents are set from (:mod:`.blockfp`), the same on every worker."""
    import torch

    peaks = None
    for rank in range(config.workers):
        model.zero_grad(set_to_none=False)
        part = shard(0, rank, config.workers, config.batch, len(x))
        torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()
        g = np.abs(np.concatenate([p.grad.detach().reshape(-1).numpy() for p in model.parameters()]))
        peaks = g if peaks is None else np.maximum(peaks, g)
    model.zero_grad(set_to_none=False)
    return peaks


def stream_worker(config: StreamWorkerConfig) -> None:
    """Train until the last epoch (see the module docstring)."""
    import torch

    from ..net.multicast import join

    torch.set_num_threads(1)
    x, y, xt, yt, model = setup(config)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    size = flat_parameters(model).size
    own = config.streams[config.stream]
    per, n_chunks = blockfp.values_per_packet(own.precision), blockfp.chunks(size, own.precision)
    peaks = first_peaks(model, x, y, config)
    exponents = [blockfp.exponents_for(peaks, s.precision, s.workers) for s in config.streams]
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.bind((config.address, 0))
    down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    down.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    down.bind(("0.0.0.0", config.results_port))
    join(down, config.results_group, config.interface)
    set_receive_buffer(down, 64 << 20)
    sender = Sender(up, config.target, config.rate_bps)
    sender.start()
    sums = Sums(config.streams, size)
    rows = np.zeros((512, sp.HEADER.itemsize + blockfp.PAYLOAD_BYTES), np.uint8)
    lengths = np.zeros(512, np.int64)
    flat = np.zeros(size, np.float32)
    state = {"step": 0, "sent": n_chunks, "packets": None}

    def send_from(first: int) -> None:
        """Quantise chunks ``first … sent - 1`` (the newly ready suffix) and queue them."""
        lo, hi = first, state["sent"]
        if lo >= hi:
            return
        g = flat[lo * per:min(hi * per, size)]
        if not np.isfinite(g).all():
            raise Diverged(f"its gradient at step {state['step']} has {int((~np.isfinite(g)).sum()):,} NaN or "
                           "infinite values")
        u, want, clipped = blockfp.quantize(g, own.precision, own.workers, exponents[config.stream][lo:hi])
        packets = sp.build(sp.DATA, config.agg_id, config.wor_id, own.precision, state["step"], lo, u,
                           exponents[config.stream][lo:hi], want, clipped.astype(np.uint8) * sp.CLIPPED, size)
        state["packets"][lo:hi] = packets[0]
        state["lengths"][lo:hi] = packets[1]
        sender.batches.put(packets)
        state["sent"] = lo

    def collect(step: int) -> int:
        """Wait for the sums :attr:`Sums.have` still lacks; resend our own values and pull the
        missing sums when nothing new came for a while (doubling that while still nothing comes).
        Returns how many of our chunks were resent."""
        wait, again = config.retransmit_s, 0
        last = progress = time.monotonic()
        while not sums.complete():
            k = recv_batch(down, rows, lengths, 0.02)
            if k and sums.take(sp.parse(rows, lengths, k)):
                last = progress = time.monotonic()
                wait = config.retransmit_s
            elif time.monotonic() - progress > config.timeout_s:
                missing = {f"{spec.agg_id}/{spec.precision}": int((~h).sum()) for spec, h in zip(config.streams, sums.have)}
                raise TimeoutError(f"no sum came for {config.timeout_s:g} s at step {step & ~RETRY}; missing per "
                                   f"stream (aggregator/precision): {missing}")
            elif time.monotonic() - last > wait:
                mine = np.flatnonzero(~sums.have[config.stream])  # our own values may be what is lost
                sender.batches.put((state["packets"][mine], state["lengths"][mine]))
                again += mine.size
                for spec, have in zip(config.streams, sums.have):  # or the sum, on its way down
                    lost = np.flatnonzero(~have)
                    if lost.size:
                        sender.batches.put(pulls(spec, step, lost, size) + ((spec.address, config.port),))
                last, wait = time.monotonic(), 2 * wait
        return again

    buckets = Buckets(model, flat, per, send_from)
    state["packets"] = np.zeros((n_chunks, sp.HEADER.itemsize + blockfp.PAYLOAD_BYTES), np.uint8)
    state["lengths"] = np.zeros(n_chunks, np.int64)
    batch, steps = config.batch, steps_per_epoch(config, len(x))
    for epoch in range(config.epochs):
        resent = retried = 0
        t0 = time.perf_counter()
        times = dict.fromkeys(("compute_s", "upload_s", "update_s"), 0.0)
        step_s = []
        for s in range(steps):
            step = epoch * steps + s
            c0 = time.perf_counter()
            state["step"], state["sent"] = step, n_chunks
            sums.start(step)
            buckets.reset()
            model.zero_grad(set_to_none=False)
            part = shard(s, config.rank, config.workers, batch, len(x))
            torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()
            send_from(0)  # whatever no suffix covered yet (a parameter without a gradient)
            c1 = time.perf_counter()
            resent += collect(step)
            clipped = [c.copy() for c in sums.clipped]
            if any(c.any() for c in clipped):  # a value did not fit: those chunks again, at the exponent all need
                retry = step | RETRY
                lost = clipped[config.stream]
                if lost.any():
                    chunks_again = np.flatnonzero(lost)
                    exact = sums.want[config.stream][chunks_again]
                    u, want, again = blockfp.quantize_chunks(flat, own.precision, own.workers, chunks_again, exact)
                    packets = sp.build(sp.DATA, config.agg_id, config.wor_id, own.precision, retry, chunks_again,
                                       u, exact, want, again.astype(np.uint8) * sp.CLIPPED, size)
                    state["packets"][chunks_again], state["lengths"][chunks_again] = packets
                    sender.batches.put(packets)
                sums.start(retry, clipped)
                resent += collect(retry)
                retried += int(sum(c.sum() for c in clipped))
            c2 = time.perf_counter()
            set_gradient(model, sums.mean(size, config.workers))
            opt.step()
            exponents = [blockfp.next_exponent(w, spec.precision) for w, spec in zip(sums.want, config.streams)]
            times["compute_s"] += c1 - c0
            times["upload_s"] += c2 - c1
            times["update_s"] += time.perf_counter() - c2
            step_s.append(time.perf_counter() - c0)
        seconds = time.perf_counter() - t0
        if config.rank == 0:  # what all workers sent up once per step (resends aside), as the ring's counts
            sent = steps * sum(sp.stream_bytes(spec.precision, size) * spec.workers for spec in config.streams)
            print(json.dumps(epoch_record(epoch, model, (x, y, xt, yt), limit=config.eval_samples, seconds=seconds,
                                          steps=steps, batch=batch, times=times, step_s=step_s, sent=sent,
                                          chunks_resent=resent, chunks_retried=retried)), flush=True)
    sender.batches.put(None)
    if config.rank == 0:
        print(json.dumps({"done": True, "parameters": size, "steps": steps * config.epochs}), flush=True)


if __name__ == "__main__":
    role_main(stream_worker, StreamWorkerConfig)
