"""The two ends of an aggregation through the testbed's switches: a worker's sender and the PS's
collector (pahina.txt §IV-B/C), over UDP inside the namespaces, exact under loss, duplication and
reordering.

* :class:`WorkerSender` sends a step's fixed-point values as DATA packets of at most
  :data:`~.xdp.MAX_SLOTS` values in its precision's container (int16, int32, int64: one
  ``tensor_id`` per chunk) toward the PS, keeps them, and resends a chunk when a NACK names it
  (from a switch's agent, or from the PS).
* :class:`Collector` gathers, per ``(epoch, tensor, precision)``, either the RESULT a switch
  aggregated or the DATA packets of every worker (a key the switch bypassed, or a worker that
  sends straight to the PS) and sums those itself, exactly as the switch would (int64, saturated
  once to the precision's container). A key still incomplete after ``retry_s`` is asked for again: from the switch (a NACK with
  ``wor_id`` 0: "send this key's result again", which makes its agent forget the key and NACK its
  workers) and from each worker whose DATA is missing.

Duplicates are dropped by key and worker at every stage, so a result counts once.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass, field

import numpy as np

from ..dataplane import fixedpoint
from ..dataplane.packet import DATA, NACK, RESULT, Packet, PacketError, datagram_bytes, decode, encode_chunks
from .xdp import MAX_SLOTS

Key = tuple[int, int, str]  # (epoch, tensor, precision)
SO_RCVBUFFORCE = 33  # Linux: SO_RCVBUF beyond net.core.rmem_max, for root (not in Python's socket module)


def chunks(values: np.ndarray) -> list[np.ndarray]:
    """``values`` (flat) cut into packets of at most MAX_SLOTS values."""
    return [values[i:i + MAX_SLOTS] for i in range(0, values.size, MAX_SLOTS)] or [values[:0]]


def packet_bytes(precision: str, values: int) -> int:
    """UDP payload bytes a :class:`WorkerSender` sends for ``values`` values of ``precision``: one
    22-byte header per chunk of MAX_SLOTS values, and each value in its container (2, 4, 8 bytes)."""
    full, rest = divmod(values, MAX_SLOTS)
    return full * datagram_bytes(precision, MAX_SLOTS) + (datagram_bytes(precision, rest) if rest or not full else 0)


@dataclass
class WorkerSender:
    """Worker ``wor_id`` of ``precision``, sending to aggregator ``agg_id`` and the PS at ``ps``."""

    sock: socket.socket
    wor_id: int
    precision: str
    agg_id: int
    ps: tuple[str, int]
    kept: dict[tuple[int, int], bytes] = field(default_factory=dict)
    resent: int = 0

    def send(self, epoch: int, values: np.ndarray, first_tensor: int = 0) -> int:
        """Send ``values`` (fixed point within the precision's container) as chunks ``first_tensor,
        first_tensor + 1, …``; returns the chunk count."""
        buffer, lengths = encode_chunks(DATA, self.agg_id, self.wor_id, self.precision, epoch, first_tensor,
                                        np.ravel(values), MAX_SLOTS)
        for i, length in enumerate(lengths.tolist()):
            datagram = buffer[i, :length].tobytes()
            self.kept[epoch, first_tensor + i] = datagram
            self.sock.sendto(datagram, self.ps)
        self.kept = {k: v for k, v in self.kept.items() if k[0] >= epoch - 1}  # two epochs kept for resends
        return len(lengths)

    def serve(self, quiet_s: float, deadline_s: float = 60.0) -> None:
        """Answer NACKs until none came for ``quiet_s`` seconds (or ``deadline_s`` passed)."""
        end, last = time.monotonic() + deadline_s, time.monotonic()
        while time.monotonic() < end and time.monotonic() - last < quiet_s:
            if not select.select([self.sock], [], [], 0.05)[0]:
                continue
            try:
                p = decode(self.sock.recv(65536))
            except PacketError:
                continue
            if p.kind == NACK and p.wor_id == self.wor_id and (p.epoch_id, p.tensor_id) in self.kept:
                self.sock.sendto(self.kept[p.epoch_id, p.tensor_id], self.ps)
                self.resent += 1
                last = time.monotonic()


@dataclass
class Collector:
    """The PS's side: ``workers`` (wor_id → precision), their ``addresses``, and the switch whose
    aggregator ``agg_id`` they go through (``switch``: its address and port; None: no switch)."""

    sock: socket.socket
    workers: dict[int, str]
    addresses: dict[int, tuple[str, int]]
    agg_id: int = 1
    switch: tuple[str, int] | None = None
    results: dict[Key, np.ndarray] = field(default_factory=dict)
    saturated: dict[Key, bool] = field(default_factory=dict)
    raw: dict[Key, dict[int, np.ndarray]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: {"results": 0, "raw": 0, "duplicates": 0, "asked": 0})

    def _take(self, p: Packet) -> None:
        key = (p.epoch_id, p.tensor_id, p.precision)
        if key in self.results:
            self.counters["duplicates"] += 1
        elif p.kind == RESULT:
            self.results[key] = p.values.astype(np.int64)
            self.saturated[key] = bool(p.flags & 1)
            self.raw.pop(key, None)
            self.counters["results"] += 1
        elif p.kind == DATA and self.workers.get(p.wor_id) == p.precision:
            got = self.raw.setdefault(key, {})
            if p.wor_id in got:
                self.counters["duplicates"] += 1
                return
            got[p.wor_id] = p.values.astype(np.int64)
            self.counters["raw"] += 1
            want = [w for w, prec in self.workers.items() if prec == p.precision]
            if len(got) == len(want):  # every worker's DATA: aggregate here, as the switch would
                total = np.zeros_like(got[p.wor_id])
                for w in sorted(got):
                    total = fixedpoint.accumulate(total, got[w])
                self.results[key] = total
                del self.raw[key]

    def _ask(self, key: Key) -> None:
        epoch, tensor, precision = key
        empty = np.zeros(0, np.int32)
        if self.switch is not None and key not in self.raw:  # nothing arrived: the switch's result was lost
            self.sock.sendto(Packet(NACK, self.agg_id, 0, precision, epoch, tensor, empty).encode(), self.switch)
        for w, prec in self.workers.items():
            if prec == precision and w not in self.raw.get(key, {}) and (self.switch is None or key in self.raw):
                self.sock.sendto(Packet(NACK, self.agg_id, w, precision, epoch, tensor, empty).encode(), self.addresses[w])
        self.counters["asked"] += 1

    def collect(self, keys: list[Key], retry_s: float = 0.3, timeout_s: float = 30.0) -> dict[Key, tuple[np.ndarray, bool]]:
        """Every key's sum as ``(values in the precision's container, saturated)``; asks again for what is missing every
        ``retry_s`` s; raises TimeoutError after ``timeout_s`` with the keys still missing."""
        end = time.monotonic() + timeout_s
        next_ask = time.monotonic() + retry_s
        pending = {k for k in keys if k not in self.results}
        while pending:
            now = time.monotonic()
            if now > end:
                raise TimeoutError(f"{len(pending)} of {len(keys)} aggregates never arrived (first: {min(pending)})")
            if now > next_ask:
                for k in sorted(pending):
                    self._ask(k)
                next_ask = now + retry_s
            if select.select([self.sock], [], [], 0.02)[0]:
                self.sock.setblocking(False)
                try:  # drain what is there, then look at the clock again
                    while True:
                        self._take(decode(self.sock.recv(65536)))
                except (BlockingIOError, PacketError):
                    pass
                finally:
                    self.sock.setblocking(True)
                pending = {k for k in pending if k not in self.results}
        out = {}
        for k in keys:
            values, saturated = fixedpoint.saturate(self.results[k], k[2])
            out[k] = (values, saturated > 0 or self.saturated.get(k, False))
        return out
