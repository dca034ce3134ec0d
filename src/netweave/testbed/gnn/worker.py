"""A worker of full-graph GCN training through the testbed's SwitchGNN exchange (or peer to
peer): ``python -m netweave.testbed.gnn.worker CONFIG`` (a :class:`WorkerConfig`) in its host's
namespace. It runs :class:`~netweave.runtime.models.DistGNN` unchanged with the sum exchange
(:class:`~netweave.runtime.ina_exchange.SumExchange`) over one of two transports:

- :class:`SwitchTransport` (``ina``): per block, the units in the plan's order up to the switch,
  the sums and copies down, DONE/NEXT (§3.3);
- :class:`PeerTransport` (``p2p``): each worker sends to every other worker the rows of its
  boundary vertices that worker needs (each once per remote worker) over a full mesh of TCP
  streams that the switch's kernel forwards; the receiver sums them.

Both send ``c_u h_u`` rows and deliver ``R_v = Σ c_u h_u``, so the model is the same; the parameter
gradients are summed by the switch agent in both (GRAD/GRADSUM: float32 on the wire, summed in
float64, rounded once — the bits float64 on the wire would give, in half the bytes). Per epoch it prints one JSON line
(its time, its exchange time and bytes); its final logits go to the job's directory.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..net.ports import GNN_DATA, GNN_DOWN, GNN_PEER
from ..net.role import RoleConfig
from .job import train_epochs
from .plans import load_plans
from .slices import SlicedTransport, sliced_boundary
from .wire import (BYE, COPIES, DONE, EXCHANGE_KINDS, GRAD, GRAD_CHUNK, GRADSUM, HEADER, HELLO, MAGIC, NEXT, ROWS, SUMS, UNITS, Conn,
                   ProtocolError, pump)

CHUNK_UNITS = 128  # units per UNITS message: the switch aggregates each message as it comes


def _exchange_bytes(counts: dict[int, int]) -> int:
    return sum(v for k, v in counts.items() if k in EXCHANGE_KINDS)


class SwitchTransport:
    """A worker's end of the SwitchGNN exchange (see :mod:`.switch`)."""

    def __init__(self, conn: Conn, rank: int, plans: list[dict], boundary: np.ndarray, timeout_s: float):
        self.conn, self.rank, self.timeout_s, self.seq = conn, rank, timeout_s, 0
        self.layers = []
        for p in plans:
            B = int(p["num_blocks"])
            blocks = []
            for b in range(B):
                u0, u1 = p["unit_ptr"][rank * B + b], p["unit_ptr"][rank * B + b + 1]
                d0, d1 = p["dest_ptr"][rank * B + b], p["dest_ptr"][rank * B + b + 1]
                senders = p["src"][p["unit_lo"][u0:u1]]
                need = int((p["dest_hi"][d0:d1] - p["dest_lo"][d0:d1]).sum())
                blocks.append((np.searchsorted(boundary, senders), need))
            self.layers.append(blocks)
        self.boundary = boundary
        self.early = []

    def hold(self, conn: Conn, m) -> None:
        """A message of a later exchange that came while the worker summed its gradients (a faster
        worker began the exchange, and the switch completed sums of this worker's that wait for
        none of its units): the exchange reads it first."""
        self.early.append(m)

    def exchange(self, layer: int, direction: int, rows: np.ndarray) -> np.ndarray:
        import scipy.sparse as sp

        self.seq += 1
        seq, dim = self.seq, rows.shape[1]
        out = np.zeros(rows.shape, np.float64)
        state = {"remaining": 0, "next": False}
        tag = dict(layer=layer, direction=direction, seq=seq, sender=self.rank, dim=dim)

        def on_message(conn, m):
            if (m.seq, m.block) > (seq, block):  # the next block's, read together with this block's NEXT
                self.early.append(m)
                return
            if m.kind not in (SUMS, COPIES, NEXT) or m.seq != seq or m.block != block:
                raise ProtocolError(f"worker {self.rank}: unexpected message kind {m.kind} (exchange {m.seq}, block "
                                    f"{m.block}) in exchange {seq} block {block}")
            if m.kind == NEXT:
                state["next"] = True
                return
            if m.kind == SUMS:
                ids, counts, x = m.arrays((np.int32, m.count), (np.int32, m.count), (np.float32, m.count * dim))
                at = np.searchsorted(self.boundary, ids)
                out[at] += x.reshape(m.count, dim)
                state["remaining"] -= int(counts.sum())
            else:
                (ptr,) = m.arrays((np.int32, m.count + 1))
                _, ids, x = m.arrays((np.int32, m.count + 1), (np.int32, int(ptr[-1])), (np.float32, m.count * dim))
                which = np.repeat(np.arange(m.count), np.diff(ptr))
                s = sp.csr_matrix((np.ones(ids.size), (np.searchsorted(self.boundary, ids), which)),
                                  shape=(out.shape[0], m.count))
                out[:] += s @ x.reshape(m.count, dim)
                state["remaining"] -= int(ids.size)

        for block, (unit_rows, need) in enumerate(self.layers[layer]):
            state["remaining"], state["next"] = need, False
            early, self.early = self.early, []
            for m in early:
                on_message(self.conn, m)
            for at in range(0, unit_rows.size, CHUNK_UNITS):
                chunk = unit_rows[at:at + CHUNK_UNITS]
                self.conn.queue(UNITS, rows[chunk], block=block, count=chunk.size, offset=at, **tag)
            pump([self.conn], lambda: state["remaining"] <= 0, on_message, self.timeout_s, f"block {block}'s sums")
            if state["remaining"] < 0:
                raise ProtocolError(f"worker {self.rank}: more contributions than the plan's in block {block}")
            self.conn.queue(DONE, block=block, **tag)
            pump([self.conn], lambda: state["next"], on_message, self.timeout_s, f"NEXT of block {block}")
        return out.astype(np.float32)


class PeerTransport:
    """A worker's end of the peer-to-peer exchange: its boundary rows to every worker that needs
    them (one copy per remote worker, BNS-GCN with p = 1), the sums taken at the receiver."""

    def __init__(self, conns: dict[int, Conn], rank: int, tables, boundary: np.ndarray, timeout_s: float):
        import scipy.sparse as sp

        self.conns, self.rank, self.timeout_s, self.seq = conns, rank, timeout_s, 0
        self.boundary, num_boundary = boundary, boundary.size
        self.send = {p: np.asarray(tables[f"send_{p}"]) for p in conns}
        self.recv = {p: np.asarray(tables[f"recv_{p}"]) for p in conns}
        self.sum = {p: sp.csr_matrix((np.ones(tables[f"srow_{p}"].size), (tables[f"srow_{p}"], tables[f"scol_{p}"])),
                                     shape=(num_boundary, self.recv[p].size)) for p in conns}
        self.pending: dict[int, dict[int, object]] = {}
        self.dim = 0  # the width of the exchange begun

    def exchange(self, layer: int, direction: int, rows: np.ndarray) -> np.ndarray:
        self.begin(layer, direction, rows)
        return self.end()

    def begin(self, layer: int, direction: int, rows: np.ndarray) -> None:
        """Queue each peer's rows and hand the streams what they take now; :meth:`end` sends the
        rest and sums what came."""
        self.seq += 1
        self.dim = rows.shape[1]
        for p, conn in self.conns.items():
            idx = self.send[p]
            conn.queue(ROWS, self.boundary[idx].astype(np.int32), rows[idx], layer=layer, direction=direction,
                       seq=self.seq, sender=self.rank, count=idx.size, dim=self.dim)
            conn.flush()

    def end(self) -> np.ndarray:
        seq, dim = self.seq, self.dim

        def on_message(conn, m):
            if m.kind == BYE:
                return
            if m.kind != ROWS or m.seq < seq:
                raise ProtocolError(f"worker {self.rank}: unexpected message kind {m.kind} (exchange {m.seq})")
            self.pending.setdefault(m.seq, {})[conn.peer] = m  # a faster peer may already send the next one

        conns = list(self.conns.values())
        pump(conns, lambda: len(self.pending.get(seq, {})) == len(conns), on_message, self.timeout_s, "the peers' rows")
        out = np.zeros((self.boundary.size, dim), np.float64)
        for p, m in self.pending.pop(seq).items():
            ids, x = m.arrays((np.int32, m.count), (np.float32, m.count * dim))
            if m.count != self.recv[p].size or not np.array_equal(ids, self.recv[p]):
                raise ProtocolError(f"worker {self.rank}: worker {p} sent other vertices than the relation's")
            out += self.sum[p] @ x.reshape(m.count, dim)
        return out.astype(np.float32)


def grad_sum(switch: Conn, rank: int, values: np.ndarray, seq: int, timeout_s: float, *, chunk: int = GRAD_CHUNK,
             on_other=None, what: str = "the summed gradients") -> np.ndarray:
    """The sum over every worker of ``values`` (float32, ``(n,)``) through the switch agent: GRAD
    messages of ``chunk`` values (0: one message) up, GRADSUM of each chunk down as soon as every
    worker's came (beyond the paper: a streamed all-reduce, as SwitchML's slots, so that the sums
    come down the links while the rest goes up). ``on_other(conn, message)``: any other message."""
    values = np.ascontiguousarray(values, np.float32)
    n = values.size
    step = chunk if chunk > 0 else n
    for at in range(0, n, step):
        part = values[at:at + step]
        switch.queue(GRAD, part, sender=rank, count=part.size, offset=at, dim=n, seq=seq)
    out, have = np.empty(n, np.float32), np.zeros(n, bool)

    def on_message(conn, m):
        if m.kind != GRADSUM:
            if on_other is None:
                raise ProtocolError(f"worker {rank}: unexpected message kind {m.kind} from the switch")
            on_other(conn, m)
            return
        if m.seq != seq or m.dim != n or m.offset + m.count > n:
            raise ProtocolError(f"worker {rank}: a gradient sum of step {m.seq} ({m.offset}+{m.count} of {m.dim}) "
                                f"while summing step {seq} ({n} values)")
        out[m.offset:m.offset + m.count] = m.arrays((np.float32, m.count))[0]
        have[m.offset:m.offset + m.count] = True

    pump([switch], lambda: bool(have.all()), on_message, timeout_s, what)
    return out


def barrier(switch: Conn, rank: int, timeout_s: float) -> None:
    """Wait until every worker got here: a gradient sum of one zero (step 0) through the switch agent."""
    grad_sum(switch, rank, np.zeros(1, np.float32), 0, timeout_s, on_other=lambda c, m: None,
             what="the other workers (start)")


def _connect(address: tuple[str, int], deadline: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(address, timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _hello(sock: socket.socket, timeout_s: float) -> int:
    """Read exactly the HELLO that opens a peer's stream (a header, no payload: nothing after it is
    consumed) and return the peer's rank."""
    sock.settimeout(timeout_s)
    header = b""
    while len(header) < HEADER.size:
        more = sock.recv(HEADER.size - len(header))
        if not more:
            raise ConnectionError("a peer closed its stream before its HELLO")
        header += more
    magic, kind, *_, sender, _count, _dim, _offset, _seq, size = HEADER.unpack(header)
    if magic != MAGIC or kind != HELLO or size:
        raise ProtocolError("a peer's stream did not open with HELLO")
    return int(sender)


def peer_mesh(rank: int, workers: int, address: tuple[str, int], peers: dict[int, tuple[str, int]], deadline: float,
              timeout_s: float) -> dict[int, Conn]:
    """This worker's streams to every other (the peer-to-peer exchange's mesh), rank → :class:`Conn`:
    it connects to the lower ranks, sending each its HELLO at once, and accepts the higher ones,
    reading theirs. (A HELLO left queued until the first exchange made each rank wait for the next
    one's whole set-up: the first epoch of 8 workers took 15 s on 2 cores, 45 s on 16.)"""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(workers)
        listener.settimeout(timeout_s)
        mesh = {}
        for p in range(rank):
            c = Conn(_connect(peers[p], deadline), p)
            c.queue(HELLO, sender=rank)
            c.flush()  # a 40-byte header: a fresh stream takes it whole
            if c.out:
                raise ConnectionError(f"worker {rank} could not send its HELLO to worker {p}")
            mesh[p] = c
        for _ in range(rank + 1, workers):
            sock, _ = listener.accept()
            c = Conn(sock, _hello(sock, timeout_s))
            mesh[c.peer] = c
    finally:
        listener.close()
    return dict(sorted(mesh.items()))


@dataclass(frozen=True, kw_only=True)
class WorkerConfig(RoleConfig):
    """One worker's role.

    Attributes:
        rank: its index (its partition); workers: how many; address: its own; peers: rank → address
        (the peer-to-peer mesh); switch: the switch agent's (address, port); exchange: ``ina`` or
        ``p2p``; dataplane: ``user`` (the agent, TCP) or ``xdp`` (the kernel data plane, UDP:
        :mod:`.packet_transport`, with the switch's ``memory_bytes``, ``overlap``, the pulls'
        ``retransmit_s``, the links' rate ``link_gbps``, ``congestion_control``: §3.4's ECN-driven
        rate, :mod:`.rate`; ``fast_pull``: pull as soon as every worker's END came;
        ``switch_shards``: the switch's CPUs that aggregate, each sending its copy of every END); directory: where the job's files are (:mod:`.job`); dims: the layers' widths;
        transform_first: exchange ``h W`` where a layer narrows; overlap_local: with it, sum the own
        neighbours' rows while the exchange is on the wire (:meth:`~netweave.runtime.ina_exchange.SumExchange.propagate`);
        grad_chunk: gradient values a GRAD message (:func:`grad_sum`);
        num_train: training vertices of the whole graph; epochs, lr, weight_decay, dropout, seed:
        the recipe; timeout_s: how long it waits for a peer or the switch.
    """

    rank: int
    workers: int
    address: str
    peers: dict[int, str]
    switch: tuple[str, int]
    exchange: str
    directory: str
    dims: tuple[int, ...]
    num_train: int
    epochs: int
    lr: float
    weight_decay: float
    dropout: float
    seed: int
    timeout_s: float
    dataplane: str = "user"
    memory_bytes: int = 0
    overlap: bool = False
    retransmit_s: float = 0.2
    link_gbps: float = 0.0
    congestion_control: bool = False
    fast_pull: bool = True
    switch_shards: int = 1
    transform_first: bool = True
    overlap_local: bool = True
    grad_chunk: int = GRAD_CHUNK


def worker(cfg: WorkerConfig) -> None:
    """Train this worker's partition until the last epoch; its logits go to the job's directory."""
    import numba
    import torch

    from ...runtime.ina_exchange import SumExchange, SumLayout, sum_local_tensors
    from ...runtime.models import DistGNN

    # one thread a worker, the testbed's hosts share the machine's cores: numba's parallel dropout
    # would otherwise start a thread a core whose wait spins (libgomp) on cores the others need
    torch.set_num_threads(1)
    numba.set_num_threads(1)
    rank, workers, timeout = cfg.rank, cfg.workers, cfg.timeout_s
    deadline = time.monotonic() + timeout
    with np.load(os.path.join(cfg.directory, f"worker{rank}.npz"), allow_pickle=False) as f:
        data = {k: np.asarray(f[k]) for k in f.files}
    layout = SumLayout.from_arrays(data)
    switch = Conn(_connect(cfg.switch, deadline), -1)
    switch.queue(HELLO, sender=rank)
    switch.flush()  # now: the agent may wait for it before it serves anyone
    if cfg.exchange == "ina":  # the plans' vertices: the graph's, or their column slices' (.slices)
        plans = load_plans(os.path.join(cfg.directory, "plans.npz"))
        slices = [int(p["slices"]) for p in plans]
        boundary = sliced_boundary(layout.boundary, plans[0]["parts"].size // slices[0], max(slices))
    if cfg.exchange == "ina" and cfg.dataplane == "xdp":
        from .packet_transport import PacketTransport
        from .rate import RateControl

        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((cfg.address, GNN_DOWN))
        transport = PacketTransport(sock, (cfg.switch[0], GNN_DATA), rank, plans, boundary, cfg.memory_bytes,
                                    overlap=cfg.overlap, timeout_s=timeout, retransmit_s=cfg.retransmit_s,
                                    link_gbps=cfg.link_gbps,
                                    rate=RateControl(cfg.link_gbps * 1e9) if cfg.congestion_control else None,
                                    fast_pull=cfg.fast_pull, shards=cfg.switch_shards)
        conns = [switch]
    elif cfg.exchange == "ina":
        transport = SwitchTransport(switch, rank, plans, boundary, timeout)
        conns = [switch]
    else:
        peers = peer_mesh(rank, workers, (cfg.address, GNN_PEER), {p: (a, GNN_PEER) for p, a in cfg.peers.items()},
                          deadline, timeout)
        transport = PeerTransport(peers, rank, data, layout.boundary, timeout)
        conns = [switch, *peers.values()]
    if cfg.exchange == "ina" and max(slices) > 1:
        transport = SlicedTransport(transport, slices, max(slices))
    exchange = SumExchange(layout, transport, len(cfg.dims) - 1, overlap_local=cfg.overlap_local)
    if cfg.exchange == "ina" and cfg.dataplane == "xdp":  # every worker's UDP socket is bound before any packet
        barrier(switch, rank, timeout)

    steps = [0]

    def allreduce(flat: np.ndarray) -> np.ndarray:
        steps[0] += 1
        # float32 on the wire: the gradients' own precision (flat is their float64 copy, exact). Sums
        # of the next exchange may follow the gradients at once: the transport on the switch's stream
        # holds them (through SlicedTransport too); on any other, the switch's stream has none.
        return grad_sum(switch, rank, flat.astype(np.float32), steps[0], timeout, chunk=cfg.grad_chunk,
                        on_other=getattr(transport, "hold", None)).astype(np.float64)

    def measure() -> dict:
        udp = getattr(transport, "bytes", {"sent": 0, "received": 0})
        return {"exchange_s": exchange.counter.seconds,
                "sent_bytes": sum(_exchange_bytes(c.sent) for c in conns) + udp["sent"],
                "received_bytes": sum(_exchange_bytes(c.received) for c in conns) + udp["received"]}

    reported = [0]

    def report(record: dict) -> None:  # an epoch's line, with when each of its exchanges began (for stragglers)
        entered = exchange.counter.entered
        print(json.dumps(record | {"entered": entered[reported[0]:]}), flush=True)
        reported[0] = len(entered)

    torch.manual_seed(cfg.seed)
    model = DistGNN("gcn", list(cfg.dims), cfg.dropout, cfg.seed, cfg.transform_first)
    logits = train_epochs(model, torch.from_numpy(data["x"]), sum_local_tensors(layout), exchange,
                          y=torch.from_numpy(data["y"]), train=torch.from_numpy(data["train"]), num_train=cfg.num_train,
                          epochs=cfg.epochs, lr=cfg.lr, weight_decay=cfg.weight_decay, allreduce=allreduce,
                          measure=measure, on_epoch=report)
    np.save(os.path.join(cfg.directory, f"logits{rank}.npy"), logits)
    for c in conns:
        c.queue(BYE, sender=rank)
    pump([switch], lambda: True, lambda c, m: None, timeout, "the BYE to leave")  # the switch closes after all BYEs
    peers = conns[1:]  # a stream closed with unread data resets: wait for every peer's BYE first
    pump(peers, lambda: all(c.bye for c in peers), lambda c, m: None, timeout, "the peers' BYE")
    counters = dict(getattr(transport, "counters", {}))
    rate = getattr(transport, "rate", None)
    if rate is not None:
        counters |= {"rate_cuts": rate.cuts, "cnps_received": rate.cnps, "lowest_rate_kbit": int(rate.lowest_bps / 1e3)}
    print(json.dumps({"done": True, "exchange_calls": exchange.counter.calls, "transport": counters,
                      "cpus": sorted(os.sched_getaffinity(0))}), flush=True)


def main(argv: list[str]) -> int:
    try:
        worker(WorkerConfig.from_json(argv[0]))
    except (ProtocolError, TimeoutError, ConnectionError, OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"gnn worker: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
