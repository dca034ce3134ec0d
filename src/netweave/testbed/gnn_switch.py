"""The emulated SwitchGNN switch: multicast and aggregation of a GCN's embedding exchange in
userspace, in the switch namespace of a star cluster (switchgnn.txt §3; the paper's switch is a
Tofino, §4).

Run as ``python -m netweave.testbed.gnn_switch CONFIG_JSON`` in the switch's namespace. It
listens on the switch's identity address, takes one TCP stream from every worker (the
userspace data plane: reliable and ordered; the link rates are the veths' HTB classes), prints
``{"ready": true}``, serves until every worker said BYE (or its stdin closes, or nothing came for
``timeout_s``), and prints its counters as one JSON line.

**Per exchange** (one layer, one direction; the workers run them in the same order) and per
block of the layer's :class:`~netweave.ina.plan.InaPlan` (loaded from an ``.npz`` with
``allow_pickle=False``):

* every worker sends its units of the block in the plan's order (UNITS: the sender's row, tagged
  with layer, direction, block, worker and the position of the first unit);
* the switch adds each unit into the aggregators of the unit's destinations in the block
  (float32, as a switch's fixed-width aggregators would; one sparse product per received batch:
  no Python loop per edge). A destination gets
  ``ceil(4 D / 128)`` aggregators of 128 bytes when its first contribution arrives and the memory
  has them (``memory_bytes / 128`` in all); otherwise it is *bypassed* for the block. A complete sum
  (its count reaches the destination's cross edges in the block) goes down to the destination's
  worker at once (SUMS: vertex, count, row) and frees its aggregators;
* destinations the plan forwards (``plan.forward``) and bypassed ones go down as copies: one copy
  per (unit, worker) carrying the row and the list of that worker's destinations it is for (COPIES);
* block synchronisation (§3.3): a worker that holds all sums of the block sends DONE; when all
  have, the switch multicasts NEXT and the next block (or the next exchange, after the last) starts.

Aggregators are admitted per received batch (a batch's completions free memory after the batch):
slightly conservative against a per-packet switch; the exchange stays exact either way.

The switch also sums the parameter gradients (GRAD → GRADSUM, an in-network all-reduce as in
SwitchML/ATP), the same for the INA and the peer-to-peer exchange, so their epochs differ only in
the embedding exchange.

The wire format (:data:`HEADER`, little-endian): magic ``NWGX``, kind, layer, direction, block,
sender, count, dim, offset, seq, payload bytes; then the payload.
"""

from __future__ import annotations

import json
import math
import select
import socket
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

MAGIC = b"NWGX"
HEADER = struct.Struct("<4sBBBxIIIIIIQ")  # 40 bytes
HELLO, UNITS, SUMS, COPIES, DONE, NEXT, GRAD, GRADSUM, ROWS, BYE = range(1, 11)
EXCHANGE_KINDS = (UNITS, SUMS, COPIES, DONE, NEXT, ROWS)
AGGREGATOR_BYTES = 128  # switchgnn.txt §4: "each aggregator is allocated 128 bytes"
MAX_PAYLOAD = 1 << 32
PLAN_FIELDS = ("num_blocks", "num_workers", "parts", "src", "dst", "block", "unit_lo", "unit_hi", "unit_ptr",
               "in_edges", "dest_v", "dest_lo", "dest_hi", "dest_ptr", "forward", "dim")


class ProtocolError(RuntimeError):
    """A message that does not fit the exchange in progress."""


@dataclass
class Message:
    kind: int
    layer: int
    direction: int
    block: int
    sender: int
    count: int
    dim: int
    offset: int
    seq: int
    payload: bytes

    def arrays(self, *spec: tuple[type, int]) -> list[np.ndarray]:
        """Split the payload into arrays of ``(dtype, size)`` in order; the last may be ``-1`` (the rest)."""
        out, at = [], 0
        for dtype, size in spec:
            item = np.dtype(dtype).itemsize
            size = (len(self.payload) - at) // item if size < 0 else size
            if at + size * item > len(self.payload):
                raise ProtocolError(f"message kind {self.kind}: payload of {len(self.payload)} B too short")
            out.append(np.frombuffer(self.payload, dtype, size, at))
            at += size * item
        return out


class Conn:
    """One non-blocking TCP stream with an output queue: ``queue`` never blocks, ``flush`` sends what
    the socket takes, ``read`` returns the complete messages that came. ``sent``/``received``:
    bytes per message kind (header included)."""

    def __init__(self, sock: socket.socket, peer: int = -1):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.peer = sock, peer
        self.out: deque[memoryview] = deque()
        self.inbuf = bytearray()
        self.sent: dict[int, int] = {}
        self.received: dict[int, int] = {}
        self.closed = False
        self.bye = False  # the peer said BYE: its stream may end

    def fileno(self) -> int:
        return self.sock.fileno()

    def queue(self, kind: int, *arrays: np.ndarray, layer: int = 0, direction: int = 0, block: int = 0,
              sender: int = 0, count: int = 0, dim: int = 0, offset: int = 0, seq: int = 0) -> None:
        parts = [memoryview(np.ascontiguousarray(a)).cast("B") for a in arrays]
        size = sum(p.nbytes for p in parts)
        self.out.append(memoryview(HEADER.pack(MAGIC, kind, layer, direction, block, sender, count, dim, offset, seq,
                                               size)))
        self.out.extend(p for p in parts if p.nbytes)
        self.sent[kind] = self.sent.get(kind, 0) + HEADER.size + size

    def flush(self) -> None:
        while self.out:
            try:
                n = self.sock.send(self.out[0])
            except (BlockingIOError, InterruptedError):
                return
            if n < len(self.out[0]):
                self.out[0] = self.out[0][n:]
                return
            self.out.popleft()

    def read(self) -> list[Message]:
        while True:
            try:
                data = self.sock.recv(1 << 22)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                self.closed = True
                break
            self.inbuf += data
        messages, at = [], 0
        while len(self.inbuf) - at >= HEADER.size:
            magic, kind, layer, direction, block, sender, count, dim, offset, seq, size = HEADER.unpack_from(self.inbuf, at)
            if magic != MAGIC or size > MAX_PAYLOAD:
                raise ProtocolError(f"a malformed message from peer {self.peer} (magic {magic!r}, {size} B)")
            if len(self.inbuf) - at - HEADER.size < size:
                break
            payload = bytes(self.inbuf[at + HEADER.size: at + HEADER.size + size])
            messages.append(Message(kind, layer, direction, block, sender, count, dim, offset, seq, payload))
            self.bye |= kind == BYE
            self.received[kind] = self.received.get(kind, 0) + HEADER.size + size
            at += HEADER.size + size
        del self.inbuf[:at]
        return messages


def pump(conns, done, on_message, timeout_s: float, what: str) -> None:
    """Send and receive on ``conns`` until ``done()`` and everything queued has left (a worker that
    stops pumping a stream with data still queued could stall its peer); ``on_message(conn,
    message)`` for each message. Raises TimeoutError when nothing came for ``timeout_s`` s,
    ConnectionError when a peer closed its stream before saying BYE."""
    last = time.monotonic()
    while True:
        for c in conns:
            if c.out:
                c.flush()
        if done() and not any(c.out for c in conns):
            return
        open_ = [c for c in conns if not c.closed]
        if not open_:
            raise ConnectionError(f"every stream closed while waiting for {what}")
        readable, writable, _ = select.select(open_, [c for c in open_ if c.out], [], 0.5)
        for c in writable:
            c.flush()
        for c in readable:
            messages = c.read()
            if messages:
                last = time.monotonic()
            for m in messages:
                on_message(c, m)
            if c.closed and not c.bye and not done():
                raise ConnectionError(f"peer {c.peer} closed its stream while waiting for {what}")
        if time.monotonic() - last > timeout_s:
            raise TimeoutError(f"nothing arrived for {timeout_s:g} s while waiting for {what}")


def drain(conns, timeout_s: float = 30.0) -> None:
    """Send everything queued (blocking up to ``timeout_s``)."""
    pump(conns, lambda: not any(c.out for c in conns), lambda c, m: None, timeout_s, "the last messages to leave")


# -- plans ----------------------------------------------------------------------------------------

def plan_arrays(plan, dim: int) -> dict[str, np.ndarray]:
    """What the switch and the workers need of an :class:`~netweave.ina.plan.InaPlan` of width ``dim``."""
    forward = plan.forward if plan.forward is not None else np.zeros(plan.parts.size, bool)
    return {"num_blocks": np.array(plan.num_blocks), "num_workers": np.array(plan.num_workers), "parts": plan.parts,
            "src": plan.src, "dst": plan.dst, "block": plan.block, "unit_lo": plan.unit_lo, "unit_hi": plan.unit_hi,
            "unit_ptr": plan.unit_ptr, "in_edges": plan.in_edges, "dest_v": plan.dest_v, "dest_lo": plan.dest_lo,
            "dest_hi": plan.dest_hi, "dest_ptr": plan.dest_ptr, "forward": forward, "dim": np.array(dim)}


def save_plans(path: str, plans: list[dict[str, np.ndarray]]) -> None:
    np.savez(path, num_layers=np.array(len(plans)), **{f"l{i}_{k}": v for i, p in enumerate(plans) for k, v in p.items()})


def load_plans(path: str) -> list[dict[str, np.ndarray]]:
    """The per-layer plan arrays of :func:`save_plans` (untrusted: ``allow_pickle=False``, checked)."""
    with np.load(path, allow_pickle=False) as f:
        layers = int(f["num_layers"])
        plans = [{k: np.asarray(f[f"l{i}_{k}"]) for k in PLAN_FIELDS} for i in range(layers)]
    for i, p in enumerate(plans):
        m, b, c = int(p["num_workers"]), int(p["num_blocks"]), p["dst"].size
        ok = (p["unit_ptr"].size == m * b + 1 and p["dest_ptr"].size == m * b + 1 and p["src"].size == c
              and p["block"].size == c and p["in_edges"].size == c
              and (c == 0 or (0 <= p["unit_lo"].min() and p["unit_hi"].max() <= c and p["dst"].max() < p["parts"].size
                              and p["src"].max() < p["parts"].size and p["block"].max() < b))
              and p["forward"].size == p["parts"].size and p["forward"].dtype == bool)
        if not ok:
            raise ValueError(f"{path}: layer {i}'s plan is inconsistent")
    return plans


def edge_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ``range(lo[i], hi[i])`` and, per element, its ``i`` (vectorised)."""
    lens = hi - lo
    which = np.repeat(np.arange(lo.size), lens)
    starts = np.cumsum(lens) - lens
    return lo[which] + np.arange(which.size) - starts[which], which


class _Layer:
    """One layer's plan, indexed for the switch: every destination ``k`` (a (block, vertex)) is a slot."""

    def __init__(self, p: dict[str, np.ndarray], memory_bytes: int):
        self.p, self.B, self.M = p, int(p["num_blocks"]), int(p["num_workers"])
        self.dim = int(p["dim"])
        k = p["dest_v"].size
        edges, which = edge_ranges(p["dest_lo"], p["dest_hi"])
        self.slot_of_edge = np.empty(p["dst"].size, np.int64)
        self.slot_of_edge[p["in_edges"][edges]] = which
        self.need = (p["dest_hi"] - p["dest_lo"]).astype(np.int64)
        self.owner = p["parts"][p["dest_v"]].astype(np.int64)
        self.block_of_slot = p["block"][p["in_edges"][p["dest_lo"]]] if k else np.zeros(0, np.int64)
        self.pos = np.zeros(k, np.int64)
        self.slots_of_block = []
        for b in range(self.B):
            s = np.flatnonzero(self.block_of_slot == b)
            self.pos[s] = np.arange(s.size)
            self.slots_of_block.append(s)
        self.forward_edge = p["forward"][p["dst"]]
        self.edge_owner = p["parts"][p["dst"]].astype(np.int64)
        self.per_dest = math.ceil(4 * self.dim / AGGREGATOR_BYTES)
        self.capacity = memory_bytes // AGGREGATOR_BYTES


class Switch:
    """The data plane's state: one exchange (layer, direction, seq) and its current block at a time."""

    def __init__(self, plans: list[dict[str, np.ndarray]], memory_bytes: int, workers: int):
        self.layers = [_Layer(p, memory_bytes) for p in plans]
        self.M = workers
        self.conns: dict[int, Conn] = {}
        self.current = None  # (seq, layer, direction)
        self.block = 0
        self.counters = dict.fromkeys(("exchanges", "blocks", "units", "unit_edges", "aggregated_edges", "sums",
                                       "copies", "copied_edges", "bypassed_destinations", "peak_aggregators",
                                       "grad_steps", "aggregate_s"), 0)
        self._grads: dict[int, dict[int, np.ndarray]] = {}

    # -- one block's state ----------------------------------------------------------------------
    def _start_block(self, b: int) -> None:
        L = self.layers[self.current[1]]
        slots = L.slots_of_block[b] if b < L.B else np.zeros(0, np.int64)
        self.block, self.done = b, set()
        self.state = np.zeros(L.need.size, np.int8)  # 0 unseen, 1 aggregating, 2 bypassed
        self.got = np.zeros(L.need.size, np.int64)
        self.acc = np.zeros((slots.size, L.dim), np.float32)
        self.free = L.capacity

    def _check(self, m: Message) -> _Layer:
        if self.current is None:
            if m.layer >= len(self.layers):
                raise ProtocolError(f"layer {m.layer}: the plan has {len(self.layers)} layers")
            self.current = (m.seq, m.layer, m.direction)
            self.counters["exchanges"] += 1
            self._start_block(0)
        if (m.seq, m.layer, m.direction) != self.current or m.block != self.block:
            raise ProtocolError(f"worker {m.sender}: message for exchange {m.seq} layer {m.layer} block {m.block} "
                                f"during exchange {self.current[0]} block {self.block}")
        return self.layers[m.layer]

    def on_message(self, conn: Conn, m: Message) -> None:
        if m.kind == HELLO:
            conn.peer = m.sender
            self.conns[m.sender] = conn
        elif m.kind == UNITS:
            self._units(self._check(m), m)
        elif m.kind == DONE:
            self._done(self._check(m), m)
        elif m.kind == GRAD:
            self._grad(m)
        elif m.kind != BYE:
            raise ProtocolError(f"unexpected message kind {m.kind} from worker {m.sender}")

    def _units(self, L: _Layer, m: Message) -> None:
        t0 = time.perf_counter()
        p, h, b, n = L.p, m.sender, m.block, m.count
        first, end = int(p["unit_ptr"][h * L.B + b]), int(p["unit_ptr"][h * L.B + b + 1])
        if m.dim != L.dim or first + m.offset + n > end:
            raise ProtocolError(f"worker {h}: units {m.offset}..{m.offset + n} of block {b} (it has {end - first}), "
                                f"width {m.dim} (plan: {L.dim})")
        (x,) = m.arrays((np.float32, n * L.dim))
        x = x.reshape(n, L.dim)
        units = np.arange(first + m.offset, first + m.offset + n)
        edges, ue = edge_ranges(p["unit_lo"][units], p["unit_hi"][units])
        k = L.slot_of_edge[edges]
        self.counters["units"] += n
        self.counters["unit_edges"] += edges.size
        # admission: a destination's first contribution takes its aggregators, if the memory has them
        fresh = ~L.forward_edge[edges] & (self.state[k] == 0)
        if fresh.any():
            new, first_at = np.unique(k[fresh], return_index=True)
            new = new[np.argsort(first_at)]
            fits = min(new.size, self.free // L.per_dest) if L.per_dest else new.size
            self.state[new[:fits]], self.state[new[fits:]] = 1, 2
            self.free -= fits * L.per_dest
            self.counters["bypassed_destinations"] += int(new.size - fits)
            self.counters["peak_aggregators"] = max(self.counters["peak_aggregators"], L.capacity - self.free)
        agg = ~L.forward_edge[edges] & (self.state[k] == 1)
        if agg.any():
            slots, inv = np.unique(k[agg], return_inverse=True)
            s = sp.csr_matrix((np.ones(inv.size, np.float32), (inv, ue[agg])), shape=(slots.size, n))
            self.acc[L.pos[slots]] += s @ x
            self.got[slots] += np.bincount(inv, minlength=slots.size)
            self.counters["aggregated_edges"] += int(agg.sum())
            complete = slots[self.got[slots] == L.need[slots]]
            if complete.size:
                self.free += complete.size * L.per_dest
                for w in np.unique(L.owner[complete]).tolist():
                    c = complete[L.owner[complete] == w]
                    self.conns[w].queue(SUMS, p["dest_v"][c].astype(np.int32), L.need[c].astype(np.int32),
                                        self.acc[L.pos[c]], layer=m.layer, direction=m.direction,
                                        block=b, count=c.size, dim=L.dim, seq=m.seq)
                    self.counters["sums"] += int(c.size)
        copy = ~agg
        if copy.any():  # one copy per (unit, destination worker): the plan's edges go by (unit, owner, vertex)
            ce, cu, cw = edges[copy], ue[copy], L.edge_owner[edges[copy]]
            start = np.flatnonzero(np.r_[True, (cu[1:] != cu[:-1]) | (cw[1:] != cw[:-1])])
            for w in np.unique(cw).tolist():
                runs = start[cw[start] == w]
                stop = np.r_[start, ce.size][np.searchsorted(start, runs) + 1]
                ids, _ = edge_ranges(runs, stop)
                ptr = np.r_[0, np.cumsum(stop - runs)].astype(np.int32)
                self.conns[w].queue(COPIES, ptr, p["dst"][ce[ids]].astype(np.int32), x[cu[runs]],
                                    layer=m.layer, direction=m.direction, block=b, count=runs.size, dim=L.dim,
                                    seq=m.seq, sender=h)
                self.counters["copies"] += int(runs.size)
            self.counters["copied_edges"] += int(copy.sum())
        self.counters["aggregate_s"] += time.perf_counter() - t0

    def _done(self, L: _Layer, m: Message) -> None:
        self.done.add(m.sender)
        if len(self.done) < self.M:
            return
        s = L.slots_of_block[self.block]
        if ((self.state[s] == 1) & (self.got[s] < L.need[s])).any():
            raise ProtocolError(f"block {self.block}: every worker is done but aggregators are incomplete")
        for c in self.conns.values():
            c.queue(NEXT, layer=m.layer, direction=m.direction, block=self.block, seq=m.seq)
        self.counters["blocks"] += 1
        if self.block + 1 < L.B:
            self._start_block(self.block + 1)
        else:
            self.current, self.acc = None, None

    def _grad(self, m: Message) -> None:
        (g,) = m.arrays((np.float64, m.count))
        step = self._grads.setdefault(m.seq, {})
        step[m.sender] = g
        if len(step) == self.M:
            total = np.sum([step[w] for w in sorted(step)], axis=0)  # a fixed order: every worker gets the same bits
            for c in self.conns.values():
                c.queue(GRADSUM, total, count=total.size, seq=m.seq)
            del self._grads[m.seq]
            self.counters["grad_steps"] += 1


def serve(config: dict) -> dict:
    """Accept the workers, run the data plane until every worker said BYE; returns the counters."""
    plans = load_plans(config["plans"]) if config.get("plans") else []
    switch = Switch(plans, int(config["memory_bytes"]), int(config["workers"]))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((config["address"], int(config["port"])))
    listener.listen(64)
    print(json.dumps({"ready": True}), flush=True)
    timeout = float(config.get("timeout_s", 120.0))
    conns: list[Conn] = []
    listener.settimeout(timeout)
    for _ in range(switch.M):
        sock, _ = listener.accept()
        conns.append(Conn(sock))
    listener.close()
    byes, backlog = set(), []

    def on_message(conn, m):
        if m.kind == BYE:
            byes.add(m.sender)
        if m.kind == HELLO:
            switch.on_message(conn, m)
            if len(switch.conns) == switch.M:  # every worker is known: what came early, in order
                for early in backlog:
                    switch.on_message(*early)
                backlog.clear()
        elif len(switch.conns) < switch.M:
            backlog.append((conn, m))
        else:
            switch.on_message(conn, m)

    pump(conns, lambda: len(byes) == switch.M, on_message, timeout, "the workers")
    drain(conns)
    for c in conns:
        c.sock.close()
    return switch.counters


def main(argv: list[str]) -> int:
    try:
        counters = serve(json.loads(argv[0]))
    except (ProtocolError, TimeoutError, ConnectionError, OSError, ValueError, KeyError) as e:
        print(f"gnn switch: {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps({k: (round(v, 6) if isinstance(v, float) else int(v)) for k, v in counters.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
