"""PAHInA's aggregation service as real UDP endpoints on loopback (asyncio), end to end.

* **Workers** send each (epoch, tensor) of fixed-point gradients to their aggregator (a switch
  running the service, or the PS directly). They resend a tensor when NACKed. Their sending path
  can drop, duplicate and reorder packets (seeded), which is the fault model the service must survive.
* **Aggregators** run :class:`~netweave.dataplane.aggregation.AggregationState` per precision:
  one result stream per (tensor, precision) goes to the PS. On timer expiry they NACK the missing
  workers.
* **The PS** aggregates its direct workers the same way. It collects every aggregator's results,
  decodes each precision's fixed-point sum (precision normalisation, §IV-C) and adds them in float64.

The aggregator→PS path is not faulted; results arrive on loopback. When every packet of a stream
is lost no aggregator timer starts, so the PS, which knows the streams it expects, NACKs late
streams to their aggregator, which NACKs the stream's workers (an addition to §IV-B's per-task
timer). A run that does not finish within ``deadline_s`` fails with one line, so nothing hangs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np

from ..errors import NetweaveError
from . import fixedpoint
from .aggregation import AggregationState, Counters
from .packet import DATA, NACK, RESULT, SATURATED, Packet, PacketError, decode

HOST = "127.0.0.1"


@dataclass
class Faults:
    """Per-packet probabilities on the workers' sending path; ``reorder`` delays a packet by up to
    ``max_delay_s`` so that later ones overtake it."""

    loss: float = 0.0
    dup: float = 0.0
    reorder: float = 0.0
    max_delay_s: float = 0.005

    def check(self) -> None:
        for name in ("loss", "dup", "reorder"):
            if not 0 <= getattr(self, name) < 1:
                raise NetweaveError(f"--{name} {getattr(self, name)} must be in [0, 1)")


class _Endpoint(asyncio.DatagramProtocol):
    def __init__(self, handler):
        self.handler = handler
        self.transport = None
        self.malformed = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        try:
            packet = decode(data)
        except PacketError:
            self.malformed += 1  # counted and dropped; other tasks are unaffected
            return
        self.handler(packet, addr)


@dataclass
class Aggregator:
    agg_id: int
    workers: dict[int, tuple[str, int]]  # wor_id -> its address (for NACKs)
    precisions: dict[int, str]
    ps_addr: tuple[str, int] | None
    timeout_s: float
    state: AggregationState = None
    endpoint: _Endpoint = None
    nacks: int = 0
    on_result: object = None  # the PS's own aggregation delivers locally

    def __post_init__(self):
        self.state = AggregationState({w: self.precisions[w] for w in self.workers}, self.timeout_s)

    def handle(self, p: Packet, addr) -> None:
        if p.kind == NACK:  # the PS misses this stream: send the kept result again, or ask its workers
            key = (p.epoch_id, p.tensor_id, p.precision)
            if key in self.state.completed:
                self._deliver(key, *self.state.completed[key])
            elif key not in self.state.state:
                for w, prec in self.precisions.items():
                    if w in self.workers and prec == p.precision:
                        self._nack(w, p.precision, p.epoch_id, p.tensor_id)
            return
        if p.kind != DATA:
            return
        loop = asyncio.get_running_loop()
        done = self.state.accept(p.wor_id, p.epoch_id, p.tensor_id, p.precision, p.values, loop.time())
        if done is not None:
            self._deliver((p.epoch_id, p.tensor_id, p.precision), *done)

    def _deliver(self, key, total: np.ndarray, saturated: bool) -> None:
        result = Packet(RESULT, self.agg_id, len(self.workers), key[2], key[0], key[1], total,
                        SATURATED if saturated else 0)
        if self.on_result is not None:
            self.on_result(result)
        else:
            self.endpoint.transport.sendto(result.encode(), self.ps_addr)

    async def timers(self) -> None:
        while True:
            await asyncio.sleep(self.timeout_s / 4)
            for (epoch, tensor, precision), missing in self.state.expired(asyncio.get_running_loop().time()):
                for w in missing:
                    self._nack(w, precision, epoch, tensor)

    def _nack(self, w: int, precision: str, epoch: int, tensor: int) -> None:
        """NACK: "worker w, resend this tensor"."""
        self.nacks += 1
        nack = Packet(NACK, self.agg_id, w, precision, epoch, tensor, np.zeros(0, np.int32))
        self.endpoint.transport.sendto(nack.encode(), self.workers[w])


@dataclass
class Worker:
    wor_id: int
    precision: str
    agg_id: int
    tensors: dict[tuple[int, int], np.ndarray]  # (epoch, tensor) -> fixed-point values (the precision's container)
    faults: Faults
    rng: np.random.Generator
    target: tuple[str, int] = None
    endpoint: _Endpoint = None
    sent: int = 0
    resent: int = 0
    dropped: int = 0
    duplicated: int = 0

    def send(self, epoch: int, tensor: int) -> None:
        data = Packet(DATA, self.agg_id, self.wor_id, self.precision, epoch, tensor, self.tensors[(epoch, tensor)]).encode()
        self.sent += 1
        copies = 1
        if self.rng.random() < self.faults.loss:
            self.dropped += 1
            copies = 0
        elif self.rng.random() < self.faults.dup:
            self.duplicated += 1
            copies = 2
        for _ in range(copies):
            if self.rng.random() < self.faults.reorder:
                asyncio.get_running_loop().call_later(self.rng.random() * self.faults.max_delay_s,
                                                      self.endpoint.transport.sendto, data, self.target)
            else:
                self.endpoint.transport.sendto(data, self.target)

    def handle(self, p: Packet, addr) -> None:
        if p.kind == NACK and p.wor_id == self.wor_id and (p.epoch_id, p.tensor_id) in self.tensors:
            self.resent += 1
            self.send(p.epoch_id, p.tensor_id)


@dataclass
class PSCollector:
    """Expected streams per (epoch, tensor): (agg_id, precision) pairs; decodes and adds them."""

    expected: dict[tuple[int, int], set[tuple[int, str]]]
    got: dict[tuple[int, int], dict[tuple[int, str], np.ndarray]] = field(default_factory=dict)
    saturated_results: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def result(self, p: Packet) -> None:
        key, stream = (p.epoch_id, p.tensor_id), (p.agg_id, p.precision)
        if key not in self.expected or stream not in self.expected[key]:
            return
        if stream in self.got.get(key, {}):
            return  # a stream is counted once
        self.got.setdefault(key, {})[stream] = p.values
        self.saturated_results += bool(p.flags & SATURATED)
        if all(len(self.got.get(k, {})) == len(v) for k, v in self.expected.items()):
            self.done.set()

    def totals(self) -> dict[tuple[int, int], np.ndarray]:
        """Precision normalisation: every stream decoded to float64, then summed."""
        return {k: sum(fixedpoint.decode(v, prec) for (_, prec), v in streams.items()) for k, streams in self.got.items()}


async def run_service(assignment: dict[int, int], precisions: dict[int, str], tensors: dict[int, dict],
                      faults: Faults = Faults(), seed: int = 0, timeout_s: float = 0.02,
                      deadline_s: float = 20.0) -> dict:
    """Run workers (``wor_id`` -> aggregator id; 0 = the PS itself) through the service once.

    ``tensors``: wor_id -> {(epoch, tensor): fixed-point values in the precision's container}. Returns the PS's totals and counters.
    """
    faults.check()
    loop = asyncio.get_running_loop()
    rng = np.random.default_rng(seed)
    keys = sorted({k for t in tensors.values() for k in t})
    expected = {k: {(a, precisions[w]) for w, a in assignment.items() if k in tensors[w]} for k in keys}
    collector = PSCollector(expected)
    ps_ep = _Endpoint(lambda p, addr: collector.result(p) if p.kind == RESULT else ps_agg.handle(p, addr))
    ps_transport, _ = await loop.create_datagram_endpoint(lambda: ps_ep, local_addr=(HOST, 0))
    ps_addr = ps_transport.get_extra_info("sockname")
    workers = {w: Worker(w, precisions[w], a, tensors[w], faults, np.random.default_rng(rng.integers(2 ** 32)))
               for w, a in assignment.items()}
    for wk in workers.values():
        wk.endpoint = _Endpoint(wk.handle)
        await loop.create_datagram_endpoint(lambda ep=wk.endpoint: ep, local_addr=(HOST, 0))
    addr = {w: wk.endpoint.transport.get_extra_info("sockname") for w, wk in workers.items()}
    aggs = {}
    for a in sorted(set(assignment.values())):
        members = {w: addr[w] for w, b in assignment.items() if b == a}
        aggs[a] = Aggregator(a, members, precisions, ps_addr, timeout_s)
        if a == 0:
            aggs[a].endpoint, aggs[a].on_result = ps_ep, collector.result
        else:
            aggs[a].endpoint = _Endpoint(aggs[a].handle)
            await loop.create_datagram_endpoint(lambda ep=aggs[a].endpoint: ep, local_addr=(HOST, 0))
    ps_agg = aggs.get(0) or Aggregator(0, {}, precisions, None, timeout_s)
    async def probe() -> None:  # the PS asks for result streams that are late (their first packets were lost)
        while True:
            await asyncio.sleep(timeout_s)
            for key, streams in expected.items():
                for agg, prec in streams - set(collector.got.get(key, {})):
                    nack = Packet(NACK, agg, 0, prec, key[0], key[1], np.zeros(0, np.int32))
                    if agg == 0:
                        ps_agg.handle(nack, ps_addr)
                    else:
                        ps_ep.transport.sendto(nack.encode(), aggs[agg].endpoint.transport.get_extra_info("sockname"))

    timers = [asyncio.ensure_future(agg.timers()) for agg in aggs.values()] + [asyncio.ensure_future(probe())]
    for w, wk in workers.items():
        wk.target = ps_addr if assignment[w] == 0 else aggs[assignment[w]].endpoint.transport.get_extra_info("sockname")
    try:
        for key in keys:  # every worker sends its tensors in order
            for wk in workers.values():
                if key in wk.tensors:
                    wk.send(*key)
            await asyncio.sleep(0)
        await asyncio.wait_for(collector.done.wait(), deadline_s)
    except asyncio.TimeoutError:
        missing = sum(len(v) - len(collector.got.get(k, {})) for k, v in expected.items())
        raise NetweaveError(f"the aggregation did not complete within {deadline_s} s ({missing} result streams missing)") from None
    finally:
        for t in timers:
            t.cancel()
        for ep in [ps_ep, *(wk.endpoint for wk in workers.values()), *(a.endpoint for a in aggs.values())]:
            if ep.transport is not None:
                ep.transport.close()
    counters = Counters()
    for agg in aggs.values():
        for name in vars(counters):
            setattr(counters, name, getattr(counters, name) + getattr(agg.state.counters, name))
    return {"totals": collector.totals(), "streams": collector.got, "counters": vars(counters),
            "nacks": sum(a.nacks for a in aggs.values()), "leftover_state": sum(len(a.state.state) + len(a.state.data) for a in aggs.values()),
            "malformed": sum(ep.malformed for ep in [ps_ep, *(a.endpoint for a in aggs.values() if a.agg_id)]),
            "sent": sum(wk.sent for wk in workers.values()), "resent": sum(wk.resent for wk in workers.values()),
            "dropped": sum(wk.dropped for wk in workers.values()),
            "duplicated": sum(wk.duplicated for wk in workers.values()),
            "saturated_results": collector.saturated_results}
