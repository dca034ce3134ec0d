"""The two ends of an aggregation through the testbed's switches: a worker's sender and the PS's
collector (pahina.txt §IV-B/C), over UDP inside the namespaces, exact under loss, duplication and
reordering, and batched: a step's packets are built with numpy and moved with
``sendmmsg``/``recvmmsg`` (:mod:`.batchio`), never one Python call per packet.

* :class:`WorkerSender` sends a step's fixed-point values as DATA packets of at most
  :data:`~.xdp.MAX_SLOTS` values in its precision's container (int16, int32, int64: one
  ``tensor_id`` per chunk) toward the PS, keeps them, and resends a chunk when a NACK names it
  (from a switch's agent, or from the PS).
* :class:`Collector` gathers one step for several aggregators (``groups``: agg_id → the switch's
  address, or None where the PS aggregates, and its workers): per ``(agg_id, precision, tensor)``
  either the RESULT its switch aggregated or the DATA of every worker of that precision (a key the
  switch bypassed, or workers that send straight to the PS), which it sums itself exactly as the
  switch would (int64, saturated once to the precision's container). Whatever is still missing
  after ``retry_s`` is asked for again: from the switch (a NACK with ``wor_id`` 0: "send this
  key's result again", which makes its agent forget the key and NACK its workers) when none of
  the key's DATA came, else from each worker whose DATA is missing — only when nothing new came
  for ``retry_s``: on slow links a step takes longer than any fixed retry period, and asking
  again while it still arrives only adds traffic.

Duplicates are dropped by key and worker at every stage, so a result counts once.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass, field

import numpy as np

from ...dataplane import fixedpoint
from ...dataplane.packet import (DATA, HEADER, HEADER_DTYPE, MAGIC, NACK, PRECISION_CODE, RESULT, SATURATED, PacketError,
                                datagram_bytes, decode, decode_batch, encode_chunks)
from ..net.batchio import recv_batch, send_batch, send_paced
from .xdp import MAX_SLOTS


def packet_bytes(precision: str, values: int) -> int:
    """UDP payload bytes a :class:`WorkerSender` sends for ``values`` values of ``precision``: one
    22-byte header per chunk of MAX_SLOTS values, and each value in its container (2, 4, 8 bytes)."""
    full, rest = divmod(values, MAX_SLOTS)
    return full * datagram_bytes(precision, MAX_SLOTS) + (datagram_bytes(precision, rest) if rest or not full else 0)


def nacks(agg_id: int, wor_ids: np.ndarray, precision: str, epoch: int, tensors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NACK packets (no values) for each ``(wor_ids[i], tensors[i])`` as ``(buffer, lengths)`` rows."""
    header = np.zeros(len(tensors), HEADER_DTYPE)
    header["magic"], header["kind"], header["agg_id"], header["precision"] = MAGIC, NACK, agg_id, PRECISION_CODE[precision]
    header["wor_id"], header["epoch_id"], header["tensor_id"] = wor_ids, epoch, tensors
    return header.view(np.uint8).reshape(len(tensors), HEADER.size), np.full(len(tensors), HEADER.size)


@dataclass
class WorkerSender:
    """Worker ``wor_id`` of ``precision``, sending to aggregator ``agg_id`` and the PS at ``ps``, at
    most ``rate_bps`` (its rate from the control plane's eq. 2; resends are paced the same way)."""

    sock: socket.socket
    wor_id: int
    precision: str
    agg_id: int
    ps: tuple[str, int]
    kept: dict[int, list[tuple[int, np.ndarray, np.ndarray]]] = field(default_factory=dict)
    resent: int = 0
    rate_bps: float | None = None  # the rate the control plane gave this worker (None: unpaced)

    def _transmit(self, buffer: np.ndarray, lengths: np.ndarray) -> None:
        send_paced(self.sock, buffer, lengths, self.ps, self.rate_bps)

    def send(self, epoch: int, values: np.ndarray, first_tensor: int = 0) -> int:
        """Send ``values`` (fixed point within the precision's container) as chunks ``first_tensor,
        first_tensor + 1, …``; returns the chunk count."""
        buffer, lengths = encode_chunks(DATA, self.agg_id, self.wor_id, self.precision, epoch, first_tensor,
                                        np.ravel(values), MAX_SLOTS)
        self.kept = {e: v for e, v in self.kept.items() if e >= epoch - 1}  # two epochs kept for resends
        self.kept.setdefault(epoch, []).append((first_tensor, buffer, lengths))
        self._transmit(buffer, lengths)
        return len(lengths)

    def resend(self, epoch: int, tensor: int) -> bool:
        """Send chunk ``tensor`` of ``epoch`` again (False: not kept any more)."""
        for first, buffer, lengths in self.kept.get(epoch, []):
            if first <= tensor < first + len(lengths):
                row = tensor - first
                self._transmit(buffer[row:row + 1], lengths[row:row + 1])
                self.resent += 1
                return True
        return False

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
            if p.kind == NACK and p.wor_id == self.wor_id and self.resend(p.epoch_id, p.tensor_id):
                last = time.monotonic()


@dataclass
class _Part:
    """One step's state of one ``(agg_id, precision)``: the sums of ``chunks`` tensors, which are
    complete, and the DATA of ``members`` (wor_ids) seen per tensor and summed so far."""

    members: np.ndarray
    chunks: int
    sums: np.ndarray = None
    have: np.ndarray = None
    saturated: np.ndarray = None
    raw: np.ndarray = None
    seen: np.ndarray = None

    def __post_init__(self):
        self.sums = np.zeros((self.chunks, MAX_SLOTS), np.int64)
        self.raw = np.zeros((self.chunks, MAX_SLOTS), np.int64)
        self.have = np.zeros(self.chunks, bool)
        self.saturated = np.zeros(self.chunks, bool)
        self.seen = np.zeros((len(self.members), self.chunks), bool)


@dataclass
class Collector:
    """The PS's side: ``groups`` (agg_id → (the switch's (address, port), or None where the PS sums
    the DATA itself; {wor_id: precision})) and the workers' ``addresses`` (for NACKs).

    ``counters``: results (from switches), raw (DATA packets taken), duplicates (and stale packets),
    asked (NACK rounds), bytes (UDP payload of the gradient packets that reached the PS) and
    aggregate_s (wall seconds spent summing DATA here: the PS's aggregation time, a phase of its
    step beside the other wall-clock phases ``ps.py`` times, so not its CPU time as the GNN switch
    agent's ``aggregate_s`` is)."""

    sock: socket.socket
    groups: dict[int, tuple[tuple[str, int] | None, dict[int, str]]]
    addresses: dict[int, tuple[str, int]]
    counters: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("results", "raw", "duplicates", "asked", "bytes", "aggregate_s"), 0))
    _rows: int = 4096  # datagrams taken per system call, into a buffer kept for every step

    def __post_init__(self):
        self._buffer = np.empty((self._rows, HEADER.size + MAX_SLOTS * 8), np.uint8)
        self._lengths = np.zeros(self._rows, np.uint32)

    def _take(self, step: int, parts: dict[tuple[int, str], _Part], b) -> None:
        fresh = b.valid & (b.epoch_id == step) & (b.kind != NACK)
        self.counters["duplicates"] += int((b.valid & ~fresh).sum())
        fresh &= b.count <= MAX_SLOTS
        values = b.values[:, :MAX_SLOTS]
        width = values.shape[1]
        for (agg, precision), part in parts.items():
            mine = fresh & (b.agg_id == agg) & (b.precision == PRECISION_CODE[precision]) & (b.tensor_id < part.chunks)
            results = np.flatnonzero(mine & (b.kind == RESULT))
            if results.size:
                t, first = np.unique(b.tensor_id[results], return_index=True)
                new = ~part.have[t]
                rows, t = results[first][new], t[new]
                part.sums[t, :width] = values[rows]
                part.have[t] = True
                part.saturated[t] = (b.flags[rows] & SATURATED) > 0
                self.counters["results"] += int(t.size)
                self.counters["duplicates"] += int(results.size - t.size)
            data = np.flatnonzero(mine & (b.kind == DATA))
            if data.size:
                t0 = time.perf_counter()
                member = np.searchsorted(part.members, b.wor_id[data])
                ok = (member < part.members.size) & (part.members[np.minimum(member, part.members.size - 1)] == b.wor_id[data])
                data, member = data[ok], member[ok]
                t = b.tensor_id[data].astype(np.int64)
                _, first = np.unique(member * part.chunks + t, return_index=True)
                fresh_pair = ~part.seen[member[first], t[first]] & ~part.have[t[first]]
                keep = first[fresh_pair]
                self.counters["duplicates"] += int(data.size - keep.size)
                self.counters["raw"] += int(keep.size)
                for m in np.unique(member[keep]).tolist():  # per worker (≤ 64), its tensors are distinct
                    rows = keep[member[keep] == m]
                    part.raw[t[rows], :width] += values[data[rows]]
                part.seen[member[keep], t[keep]] = True
                done = part.seen.all(0) & ~part.have
                if done.any():  # every worker's DATA: aggregated here, as the switch would
                    part.sums[done] = part.raw[done]
                    part.have[done] = True
                self.counters["aggregate_s"] += time.perf_counter() - t0

    def _ask(self, step: int, parts: dict[tuple[int, str], _Part]) -> None:
        """NACK what is missing: the switch for keys none of whose DATA came, else the workers."""
        for (agg, precision), part in parts.items():
            switch = self.groups[agg][0]
            missing = np.flatnonzero(~part.have)
            if missing.size == 0:
                continue
            partial = part.seen[:, missing].any(0)
            if switch is not None and (~partial).any():
                t = missing[~partial]
                send_batch(self.sock, *nacks(agg, np.zeros(t.size, np.int64), precision, step, t), switch)
            for i, w in enumerate(part.members.tolist()):
                t = missing[~part.seen[i, missing] & (partial if switch is not None else True)]
                if t.size:
                    send_batch(self.sock, *nacks(agg, np.full(t.size, w), precision, step, t), self.addresses[w])
        self.counters["asked"] += 1

    def collect(self, step: int, chunks: int, retry_s: float = 0.3, timeout_s: float = 30.0) -> dict[tuple[int, str], tuple[np.ndarray, bool]]:
        """Every ``(agg_id, precision)``'s sum of step ``step`` over ``chunks`` tensors, as ``(values
        in the precision's container, flat, chunks × MAX_SLOTS, saturated)``; asks again for what is
        missing when nothing new came for ``retry_s`` s after the step began to arrive (a step that
        is still arriving, however slowly, or whose workers still compute, is not asked again);
        raises TimeoutError after ``timeout_s`` naming what is missing."""
        parts = {(agg, p): _Part(np.array(sorted(w for w, q in ws.items() if q == p)), chunks)
                 for agg, (_, ws) in self.groups.items() for p in sorted(set(ws.values()))}
        buffer, lengths = self._buffer, self._lengths
        end = time.monotonic() + timeout_s
        next_ask = float("inf")  # nothing to ask for before the step starts arriving (workers compute first)
        while not all(part.have.all() for part in parts.values()):
            now = time.monotonic()
            if now > end:
                missing = {k: int((~part.have).sum()) for k, part in parts.items() if not part.have.all()}
                raise TimeoutError(f"aggregates of step {step} never arrived: {missing} (agg_id, precision): tensors")
            if now > next_ask:  # nothing new for retry_s: ask for what is missing
                self._ask(step, parts)
                next_ask = now + retry_s
            got = recv_batch(self.sock, buffer, lengths, min(0.05, max(0.0, next_ask - now)))
            if got:
                self.counters["bytes"] += int(lengths[:got].sum())
                taken = self.counters["results"] + self.counters["raw"]
                self._take(step, parts, decode_batch(buffer[:got], lengths[:got]))
                if self.counters["results"] + self.counters["raw"] > taken:  # progress: the step is still arriving
                    next_ask = time.monotonic() + retry_s
        out = {}
        for (agg, precision), part in parts.items():
            values, saturated = fixedpoint.saturate(part.sums.ravel(), precision)
            out[agg, precision] = (values, saturated > 0 or bool(part.saturated.any()))
        return out
