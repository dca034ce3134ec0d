"""The emulated SwitchGNN switch: multicast and aggregation of a GCN's embedding exchange in
userspace, in the switch namespace of a star cluster (switchgnn.txt §3; the paper's switch is a
Tofino, §4).

Run as ``python -m netweave.testbed.gnn.switch CONFIG`` (a :class:`SwitchConfig`) in the switch's namespace. It
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
  (int64 fixed point, :mod:`.fixed`: exact, so the order of arrival does not matter and the kernel
  data plane gives the same bits; one sparse integer product per received batch: no Python loop
  per edge). A destination gets
  ``footprint(D)`` aggregators of 128 bytes (16 lanes of 8 bytes: :func:`.tables.footprint`) when its first contribution
  arrives and the memory has them (``memory_bytes / 128`` in all); otherwise it is *bypassed* for
  the block. A complete sum (its count reaches the destination's cross edges in the block) goes
  down to the destination's worker at once (SUMS: vertex, count, row as float32) and frees its
  aggregators;
* destinations the plan forwards (``plan.forward``) and bypassed ones go down as copies: one copy
  per (unit, worker) carrying the row and the list of that worker's destinations it is for (COPIES);
* block synchronisation (§3.3): a worker that holds all sums of the block sends DONE; when all
  have, the switch multicasts NEXT and the next block (or the next exchange, after the last) starts.

Aggregators are admitted per received batch (a batch's completions free memory after the batch):
slightly conservative against a per-packet switch; the exchange stays exact either way.

The switch also sums the parameter gradients (GRAD → GRADSUM, an in-network all-reduce as in
SwitchML/ATP; float32 on the wire, summed in float64), the same for the INA and the peer-to-peer
exchange, so their epochs differ only in the embedding exchange. It is streamed (beyond the
paper): a chunk's sum (:data:`~.wire.GRAD_CHUNK` values) goes down as soon as every worker's
chunk came, while the rest is still going up.

The wire format is :mod:`.wire`, the plans' arrays :mod:`.plans`.

With ``dataplane="xdp"`` the agent loads the kernel data plane (:mod:`.kswitch`,
``bpf/gnn_switch.bpf.c``) at the tc ingress of the switch's ports and the workers exchange
embeddings with it in UDP packets (:mod:`.packet_transport`); the agent then only sums the
gradients and reports the data plane's counters and BPF run-time statistics at the end.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...errors import NetweaveError
from ..net.role import RoleConfig
from .fixed import AGGREGATOR_BYTES, frac_bits, from_fixed, to_fixed
from .tables import footprint
from .plans import edge_ranges, load_plans
from .wire import BYE, COPIES, DONE, GRAD, GRADSUM, HELLO, NEXT, SUMS, UNITS, Conn, Message, ProtocolError, drain, pump


@dataclass(frozen=True, kw_only=True)
class SwitchConfig(RoleConfig):
    """The switch agent's role: where it listens (``address``, ``port``), how many ``workers``
    connect, its aggregator memory, the plans' ``.npz`` (None: the peer-to-peer exchange, where the
    switch only sums the gradients) and how long it waits for a worker."""

    address: str
    port: int
    workers: int
    memory_bytes: int
    plans: str | None = None
    timeout_s: float = 120.0
    dataplane: str = "user"
    ports: dict[int, tuple[str, str, str, str]] | None = None  # xdp: rank -> (interface, address, its MAC, port MAC)
    data_port: int = 0  # xdp: the UDP port of the data plane (the switch's)
    worker_port: int = 0  # xdp: the workers' UDP port
    overlap: bool = False
    ecn_bytes: int = 0  # xdp: mark SwitchGNN packets leaving a port whose queue is longer (0: no marking)
    link_kbit: int = 0  # xdp with ecn_bytes: the ports' HTB rate
    switch_cpus: tuple[int, ...] = ()  # xdp: shard s's CPU, which handles its packets (none: wherever they arrive)
    switch_shards: int = 1  # xdp: the aggregators spread over that many CPUs (switch_cpus), one a shard


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
        self.per_dest = footprint(self.dim)  # 8-byte lanes, placed as the kernel data plane does (.tables)
        self.capacity = memory_bytes // AGGREGATOR_BYTES


class Switch:
    """The data plane's state: one exchange (layer, direction, seq) and its current block at a time."""

    def __init__(self, plans: list[dict[str, np.ndarray]], memory_bytes: int, workers: int):
        self.layers = [_Layer(p, memory_bytes) for p in plans]
        self.M = workers
        self.conns: dict[int, Conn] = {}
        self.current = None  # (seq, layer, direction)
        self.block = 0
        self.counters = dict.fromkeys(("exchanges", "blocks", "units", "unit_values", "unit_edges", "aggregated_edges",
                                       "sums",
                                       "copies", "copied_edges", "bypassed_destinations", "peak_aggregators",
                                       "grad_steps", "aggregate_s", "aggregate_wall_s"), 0)
        self._grads: dict[tuple[int, int], dict[int, np.ndarray]] = {}  # (step, offset) -> sender -> values

    # -- one block's state ----------------------------------------------------------------------
    def _start_block(self, b: int) -> None:
        L = self.layers[self.current[1]]
        slots = L.slots_of_block[b] if b < L.B else np.zeros(0, np.int64)
        self.block, self.done = b, set()
        self.state = np.zeros(L.need.size, np.int8)  # 0 unseen, 1 aggregating, 2 bypassed
        self.got = np.zeros(L.need.size, np.int64)
        self.acc = np.zeros((slots.size, L.dim), np.int64)
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
        """One UNITS message: admit, aggregate, send the sums it completed and the copies. Its cost
        is counted as the agent's CPU time (``aggregate_s``: this thread's, what the kernel's BPF
        run time is beside it) and as wall time (``aggregate_wall_s``: also while the agent waited
        for a CPU that the workers held)."""
        t0, c0 = time.perf_counter(), time.thread_time()
        p, h, b, n = L.p, m.sender, m.block, m.count
        first, end = int(p["unit_ptr"][h * L.B + b]), int(p["unit_ptr"][h * L.B + b + 1])
        if m.dim != L.dim or first + m.offset + n > end:
            raise ProtocolError(f"worker {h}: units {m.offset}..{m.offset + n} of block {b} (it has {end - first}), "
                                f"width {m.dim} (plan: {L.dim})")
        (x,) = m.arrays((np.float32, n * L.dim))
        x = x.reshape(n, L.dim)
        frac = frac_bits(m.direction)
        units = np.arange(first + m.offset, first + m.offset + n)
        edges, ue = edge_ranges(p["unit_lo"][units], p["unit_hi"][units])
        k = L.slot_of_edge[edges]
        self.counters["units"] += n
        self.counters["unit_values"] += n * L.dim
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
            s = sp.csr_matrix((np.ones(inv.size, np.int64), (inv, ue[agg])), shape=(slots.size, n))
            fixed, saturated = to_fixed(x, frac)
            if saturated:
                raise ProtocolError(f"worker {h}: a value of block {b} exceeds the fixed-point range (layer {m.layer})")
            self.acc[L.pos[slots]] += s @ fixed
            self.got[slots] += np.bincount(inv, minlength=slots.size)
            self.counters["aggregated_edges"] += int(agg.sum())
            complete = slots[self.got[slots] == L.need[slots]]
            if complete.size:
                self.free += complete.size * L.per_dest
                for w in np.unique(L.owner[complete]).tolist():
                    c = complete[L.owner[complete] == w]
                    self.conns[w].queue(SUMS, p["dest_v"][c].astype(np.int32), L.need[c].astype(np.int32),
                                        from_fixed(self.acc[L.pos[c]], frac), layer=m.layer, direction=m.direction,
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
        self.counters["aggregate_s"] += time.thread_time() - c0
        self.counters["aggregate_wall_s"] += time.perf_counter() - t0

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
        """One worker's chunk of a step's gradients (values ``offset`` .. ``offset + count`` of
        ``dim``); once every worker's chunk is in, its sum goes down at once, while later chunks
        may still be going up."""
        if m.sender >= self.M or m.offset + m.count > m.dim or m.count == 0:
            raise ProtocolError(f"worker {m.sender}: gradient values {m.offset}..{m.offset + m.count} of {m.dim}")
        (g,) = m.arrays((np.float32, m.count))
        key = (m.seq, m.offset)
        step = self._grads.setdefault(key, {})
        if any(x.size != m.count for x in step.values()) or m.sender in step:
            raise ProtocolError(f"worker {m.sender}: gradient chunk at {m.offset} of step {m.seq} does not match "
                                "the other workers'")
        step[m.sender] = g.astype(np.float64)
        if len(step) == self.M:  # float64 in a fixed order, rounded once: every worker gets the same bits
            total = np.sum([step[w] for w in sorted(step)], axis=0).astype(np.float32)
            for c in self.conns.values():
                c.queue(GRADSUM, total, count=total.size, offset=m.offset, dim=m.dim, seq=m.seq)
            del self._grads[key]
            if m.offset + m.count == m.dim:  # a step's chunks complete in order (each stream is ordered)
                self.counters["grad_steps"] += 1


def _kernel(config: SwitchConfig, plans):
    """The kernel data plane, loaded and attached (``dataplane == "xdp"``)."""
    from .kswitch import KernelSwitch, Port
    from .tables import switch_tables

    if not config.ports or not config.data_port or not config.worker_port:
        raise ValueError("the kernel data plane needs the switch's ports and the data plane's UDP ports")
    tables = switch_tables(plans, config.memory_bytes, config.overlap, shards=config.switch_shards)
    ports = {r: Port(*p) for r, p in config.ports.items()}
    return KernelSwitch(tables, ports, config.address, config.data_port, config.worker_port, cpus=config.switch_cpus)


def serve(config: SwitchConfig) -> dict:
    """Accept the workers, run the data plane until every worker said BYE; returns the counters."""
    plans = load_plans(config.plans) if config.plans else []
    if config.dataplane not in ("user", "xdp"):
        raise ValueError(f"dataplane {config.dataplane!r}: use xdp or user")
    kernel = _kernel(config, plans) if config.dataplane == "xdp" and plans else None
    marker = None
    try:
        if kernel and config.ecn_bytes:
            from .ecn import EcnMarker

            marker = EcnMarker({p[0]: config.link_kbit for p in config.ports.values()}, config.ecn_bytes)
        counters = _serve(config, [] if kernel else plans)
        if kernel:
            counters |= {f"kernel_{k}": v for k, v in kernel.counters().items()}
            counters |= {f"bpf_{k}": v for k, v in kernel.run_stats().items()}
        if marker:
            counters |= {f"ecn_{k}": v for k, v in marker.counters().items()}
        return counters
    finally:
        for plane in (marker, kernel):
            if plane:
                plane.close()


def _serve(config: SwitchConfig, plans) -> dict:
    switch = Switch(plans, config.memory_bytes, config.workers)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((config.address, config.port))
    listener.listen(64)
    print(json.dumps({"ready": True}), flush=True)
    timeout = config.timeout_s
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
        counters = serve(SwitchConfig.from_json(argv[0]))
    except (ProtocolError, TimeoutError, ConnectionError, OSError, ValueError, KeyError, NetweaveError) as e:
        print(f"gnn switch: {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps({k: (round(v, 6) if isinstance(v, float) else int(v)) for k, v in counters.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
