"""Full-graph GCN training whose embedding exchange goes through the emulated SwitchGNN switch
(:mod:`.gnn_switch`), or peer to peer (BNS-GCN with p = 1), on one emulated star (switchgnn.txt §5).

* :func:`prepare_gnn_job` (in the launcher): load, normalise, METIS-partition, one
  :class:`~netweave.ina.plan.InaPlan` per layer (``switchgnn``, GAMR, ``forward=True``, sized to the
  layer's width), each worker's :class:`~netweave.runtime.ina_exchange.SumLayout` and its peer
  tables; written as ``.npz`` files that the processes load with ``allow_pickle=False``.
* :func:`train_gnn_on_testbed`: the star ``star:n=WORKERS`` with every link at ``gbps`` (HTB on
  the veths), the switch agent in the switch's namespace, one worker process per host namespace;
  per epoch each worker reports its time, its exchange time and bytes; the final logits are
  gathered and compared with :func:`single_process`.
* The workers (``python -m netweave.testbed.gnn_training CONFIG``) run
  :class:`~netweave.runtime.models.DistGNN` unchanged with the sum exchange
  (:class:`~netweave.runtime.ina_exchange.SumExchange`) over one of two transports:

  - :class:`SwitchTransport` (``ina``): per block, the units in the plan's order up to the switch,
    the sums and copies down, DONE/NEXT (§3.3);
  - :class:`PeerTransport` (``p2p``): each worker sends to every other worker the rows of its
    boundary vertices that worker needs (each once per remote worker) over a full mesh of TCP
    streams that the switch's kernel forwards; the receiver sums them.

  Both send ``c_u h_u`` rows and deliver ``R_v = Σ c_u h_u``, so the model is the same; the
  parameter gradients are summed by the switch agent in both (GRAD/GRADSUM).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import NetweaveError
from .gnn_switch import (BYE, COPIES, DONE, EXCHANGE_KINDS, GRAD, GRADSUM, HEADER, HELLO, MAGIC, NEXT, ROWS, SUMS, UNITS,
                         Conn, ProtocolError, load_plans, plan_arrays, pump, save_plans)

EXCHANGES = ("ina", "p2p")
SWITCH_PORT, PEER_PORT = 47100, 47101
CHUNK_UNITS = 128  # units per UNITS message: the switch aggregates each message as it comes


# -- the job ----------------------------------------------------------------------------------------

@dataclass
class GnnJob:
    """A prepared run: its files in ``directory`` and what the launcher reports about it."""

    directory: str
    workers: int
    dims: list[int]
    num_train: int
    graph: object = None
    features: np.ndarray | None = None
    parts: np.ndarray | None = None
    planned: list[dict] = field(default_factory=list)


def prepare_gnn_job(dataset: str, workers: int, memory_bytes: int, directory: str, hidden: int = 16, layers: int = 2,
                    seed: int = 0, blocking: str = "paper") -> GnnJob:
    """Everything the switch and the workers load (see the module docstring), in ``directory``."""
    import scipy.sparse as sp

    from ..graph import load_dataset
    from ..ina import boundary_relation
    from ..ina.plan import ina_plan
    from ..partition import Partition, metis_partition
    from ..runtime.ina_exchange import cross_adjacency, sum_layout
    from ..runtime.job import check_trainable
    from ..runtime.recipe import feature_shift, normalize_rows

    if workers < 2:
        raise NetweaveError(f"--workers {workers}: give at least 2 (one worker exchanges nothing)")
    if layers < 1 or hidden < 1:
        raise NetweaveError(f"--layers {layers} --hidden {hidden}: give positive numbers")
    graph = load_dataset(dataset)
    check_trainable(graph, dataset)
    if workers > graph.num_nodes:
        raise NetweaveError(f"--workers {workers}: {dataset} has only {graph.num_nodes} vertices")
    x = normalize_rows(graph.features, feature_shift(graph.features))
    parts = metis_partition(graph, workers, seed).parts.astype(np.int64)
    rel = boundary_relation(graph, Partition(parts, workers, "metis"))
    dims = [graph.feature_dim] + [hidden] * (layers - 1) + [graph.num_classes]
    plans, planned = [], []
    for layer in range(layers):
        plan = ina_plan(rel, "switchgnn", 4 * dims[layer], memory_bytes, "gamr", seed, blocking=blocking, forward=True)
        plans.append(plan_arrays(plan, dims[layer]))
        planned.append({"layer": layer, "dim": dims[layer], "blocks": plan.num_blocks, "units": plan.num_units,
                        "destinations": int(plan.dest_v.size), "cross_edges": int(plan.dst.size),
                        "forwarded_destinations": int(plan.forward.sum()) if plan.forward is not None else 0})
    save_plans(os.path.join(directory, "plans.npz"), plans)
    cross = cross_adjacency(graph.indptr, graph.indices, parts)
    u, w = rel.sender_worker_pairs()
    for rank in range(workers):
        lay = sum_layout(graph.indptr, graph.indices, parts, rank)
        tables = {}
        for peer in range(workers):
            if peer == rank:
                continue
            send = u[(w == peer) & (parts[u] == rank)]  # my boundary vertices with a neighbour on peer
            recv = u[(w == rank) & (parts[u] == peer)]  # peer's boundary vertices with a neighbour here
            s = sp.coo_matrix(cross[lay.boundary][:, recv])  # R (my boundary) += S @ rows from peer
            tables |= {f"send_{peer}": np.searchsorted(lay.boundary, send), f"recv_{peer}": recv,
                       f"srow_{peer}": s.row.astype(np.int64), f"scol_{peer}": s.col.astype(np.int64)}
        own = lay.own
        np.savez(os.path.join(directory, f"worker{rank}.npz"), **lay.arrays(), **tables, x=x[own],
                 y=graph.labels[own].astype(np.int64), train=np.asarray(graph.train_mask[own], bool))
    planned.append({"p2p_rows": int(u.size), "cross_edges": int(rel.num_cross_edges),
                    "boundary_vertices": int(rel.boundary().size)})
    return GnnJob(directory, workers, dims, int(graph.train_mask.sum()), graph, x, parts, planned)


# -- the transports ---------------------------------------------------------------------------------

def _exchange_bytes(counts: dict[int, int]) -> int:
    return sum(v for k, v in counts.items() if k in EXCHANGE_KINDS)


class SwitchTransport:
    """A worker's end of the SwitchGNN exchange (see :mod:`.gnn_switch`)."""

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

    def exchange(self, layer: int, direction: int, rows: np.ndarray) -> np.ndarray:
        self.seq += 1
        seq, dim = self.seq, rows.shape[1]
        for p, conn in self.conns.items():
            idx = self.send[p]
            conn.queue(ROWS, self.boundary[idx].astype(np.int32), rows[idx], layer=layer, direction=direction, seq=seq,
                       sender=self.rank, count=idx.size, dim=dim)

        def on_message(conn, m):
            if m.kind == BYE:
                return
            if m.kind != ROWS or m.seq < seq:
                raise ProtocolError(f"worker {self.rank}: unexpected message kind {m.kind} (exchange {m.seq})")
            self.pending.setdefault(m.seq, {})[conn.peer] = m  # a faster peer may already send the next one

        conns = list(self.conns.values())
        pump(conns, lambda: len(self.pending.get(seq, {})) == len(conns), on_message, self.timeout_s, "the peers' rows")
        out = np.zeros(rows.shape, np.float64)
        for p, m in self.pending.pop(seq).items():
            ids, x = m.arrays((np.int32, m.count), (np.float32, m.count * dim))
            if m.count != self.recv[p].size or not np.array_equal(ids, self.recv[p]):
                raise ProtocolError(f"worker {self.rank}: worker {p} sent other vertices than the relation's")
            out += self.sum[p] @ x.reshape(m.count, dim)
        return out.astype(np.float32)


# -- training ---------------------------------------------------------------------------------------

def train_epochs(model, x, g, exchange, y, train, num_train: int, epochs: int, lr: float, weight_decay: float,
                 allreduce=None, measure=None, on_epoch=None):
    """Full-graph training with Adam (GCN's recipe: decay on the first layer): per epoch forward,
    loss (sum over the own training vertices / all of them), backward, ``allreduce`` of the
    gradients and the loss (None: one process), step. Returns the final eval-mode logits."""
    import torch
    import torch.nn.functional as F

    from ..runtime.recipe import param_groups

    params = list(model.parameters())
    opt = torch.optim.Adam(param_groups(model.convs, weight_decay, True), lr=lr)
    for epoch in range(epochs):
        before = measure() if measure else {}
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad(set_to_none=False)
        logits = model(x, g, exchange)
        loss = F.cross_entropy(logits[train], y[train], reduction="sum") / num_train
        loss.backward()
        t1 = time.perf_counter()
        flat = torch.cat([p.grad.reshape(-1) for p in params] + [loss.detach().reshape(1)]).double()
        if allreduce is not None:
            flat = torch.from_numpy(allreduce(flat.numpy()))
        at = 0
        for p in params:
            p.grad.copy_(flat[at:at + p.numel()].view_as(p))
            at += p.numel()
        opt.step()
        t2 = time.perf_counter()
        record = {"epoch": epoch + 1, "epoch_s": t2 - t0, "sync_s": t2 - t1, "loss": float(flat[-1])}
        if measure:
            after = measure()
            record |= {k: after[k] - before[k] for k in after}
        if on_epoch:
            on_epoch(record)
    model.eval()
    with torch.no_grad():
        return model(x, g, exchange).numpy()


def single_process(job: GnnJob, epochs: int, lr: float = 0.01, weight_decay: float = 5e-4, dropout: float = 0.5,
                   seed: int = 0) -> tuple[np.ndarray, list[float]]:
    """The same model, data and seed in one process on the whole graph (no exchange): the final
    logits (global order) and the loss of every epoch."""
    import torch

    from ..partition import Partition, comm_relation
    from ..runtime.exchange import Exchange
    from ..runtime.models import DistGNN, local_tensors

    graph = job.graph
    whole = comm_relation(graph, Partition(np.zeros(graph.num_nodes, np.int32), 1, "one")).local_graph(graph, 0)
    ids = whole.global_ids[:whole.num_local]
    torch.manual_seed(seed)
    model = DistGNN("gcn", job.dims, dropout, seed)
    losses = []
    logits = train_epochs(model, torch.from_numpy(np.ascontiguousarray(job.features[ids])),
                          local_tensors(whole, graph.degrees),
                          Exchange("none", whole.global_ids, whole.num_local, graph.num_nodes),
                          torch.from_numpy(graph.labels[ids].astype(np.int64)),
                          torch.from_numpy(np.asarray(graph.train_mask[ids], bool)), job.num_train, epochs, lr,
                          weight_decay, on_epoch=lambda r: losses.append(r["loss"]))
    out = np.zeros_like(logits)
    out[ids] = logits
    return out, losses


# -- the worker process -------------------------------------------------------------------------------

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


def worker_main(cfg: dict) -> None:
    import torch

    from ..runtime.ina_exchange import SumExchange, SumLayout, sum_local_tensors
    from ..runtime.models import DistGNN

    torch.set_num_threads(1)
    rank, workers, timeout = int(cfg["rank"]), int(cfg["workers"]), float(cfg["timeout_s"])
    deadline = time.monotonic() + timeout
    with np.load(os.path.join(cfg["directory"], f"worker{rank}.npz"), allow_pickle=False) as f:
        data = {k: np.asarray(f[k]) for k in f.files}
    layout = SumLayout.from_arrays(data)
    switch = Conn(_connect(tuple(cfg["switch"]), deadline), -1)
    switch.queue(HELLO, sender=rank)
    if cfg["exchange"] == "ina":
        plans = load_plans(os.path.join(cfg["directory"], "plans.npz"))
        transport = SwitchTransport(switch, rank, plans, layout.boundary, timeout)
        conns = [switch]
    else:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((cfg["address"], PEER_PORT))
        listener.listen(workers)
        listener.settimeout(timeout)
        peers = {}
        for p in range(rank):  # connect to the lower ranks, accept the higher ones
            c = Conn(_connect((cfg["peers"][str(p)], PEER_PORT), deadline), p)
            c.queue(HELLO, sender=rank)
            peers[p] = c
        for _ in range(rank + 1, workers):
            sock, _ = listener.accept()
            c = Conn(sock, _hello(sock, timeout))
            peers[c.peer] = c
        listener.close()
        transport = PeerTransport(dict(sorted(peers.items())), rank, data, layout.boundary, timeout)
        conns = [switch, *peers.values()]
    exchange = SumExchange(layout, transport, len(cfg["dims"]) - 1)

    steps = [0]

    def allreduce(flat: np.ndarray) -> np.ndarray:
        got = []
        steps[0] += 1
        switch.queue(GRAD, flat, sender=rank, count=flat.size, seq=steps[0])
        def on_message(conn, m):
            if m.kind == GRADSUM:
                got.append(m)
            elif isinstance(transport, SwitchTransport):  # sums of the next exchange may follow it at once
                transport.early.append(m)
            else:
                raise ProtocolError(f"worker {rank}: unexpected message kind {m.kind} from the switch")

        pump([switch], lambda: bool(got), on_message, timeout, "the summed gradients")
        return got[0].arrays((np.float64, flat.size))[0].copy()

    def measure() -> dict:
        return {"exchange_s": exchange.counter.seconds,
                "sent_bytes": sum(_exchange_bytes(c.sent) for c in conns),
                "received_bytes": sum(_exchange_bytes(c.received) for c in conns)}

    torch.manual_seed(int(cfg["seed"]))
    model = DistGNN("gcn", cfg["dims"], float(cfg["dropout"]), int(cfg["seed"]))
    logits = train_epochs(model, torch.from_numpy(data["x"]), sum_local_tensors(layout), exchange,
                          torch.from_numpy(data["y"]), torch.from_numpy(data["train"]), int(cfg["num_train"]),
                          int(cfg["epochs"]), float(cfg["lr"]), float(cfg["weight_decay"]), allreduce, measure,
                          lambda r: print(json.dumps(r), flush=True))
    np.save(os.path.join(cfg["directory"], f"logits{rank}.npy"), logits)
    for c in conns:
        c.queue(BYE, sender=rank)
    pump([switch], lambda: True, lambda c, m: None, timeout, "the BYE to leave")  # the switch closes after all BYEs
    peers = conns[1:]  # a stream closed with unread data resets: wait for every peer's BYE first
    pump(peers, lambda: all(c.bye for c in peers), lambda c, m: None, timeout, "the peers' BYE")
    print(json.dumps({"done": True, "exchange_calls": exchange.counter.calls}), flush=True)


# -- the launcher -----------------------------------------------------------------------------------

@dataclass
class GnnTestbedRun:
    """What a run reports: per epoch (the slowest worker's time, the exchange time and bytes over all
    workers, the loss), the switch's counters, the veths' byte counters, the logits check."""

    __test__ = False

    exchange: str
    epochs: list[dict] = field(default_factory=list)
    switch: dict = field(default_factory=dict)
    veth: dict = field(default_factory=dict)
    planned: list[dict] = field(default_factory=list)
    logits: np.ndarray | None = None
    single_logits: np.ndarray | None = None
    single_losses: list[float] = field(default_factory=list)

    @property
    def max_logit_diff(self) -> float | None:
        """The largest ``|logit - single-process logit|``; ``inf`` when either side holds a NaN or an
        inf (a diverged run agrees with nothing, so ``diff <= tolerance`` fails, as does
        ``not diff > tolerance``); ``None`` without the check."""
        if self.logits is None or self.single_logits is None:
            return None
        if not (np.isfinite(self.logits).all() and np.isfinite(self.single_logits).all()):
            return float("inf")
        return float(np.abs(self.logits - self.single_logits).max())

    def summary(self) -> dict:
        later = self.epochs[1:] or self.epochs
        med = {k: float(np.median([e[k] for e in later])) for k in ("epoch_s", "exchange_s", "exchange_bytes")} \
            if later else {}
        return {"exchange": self.exchange, "median_epoch_s": med.get("epoch_s"),
                "median_exchange_s": med.get("exchange_s"), "median_exchange_bytes": med.get("exchange_bytes"),
                "max_logit_diff": self.max_logit_diff, "single_process_losses": self.single_losses,
                "planned": self.planned, "switch": self.switch, "veth": self.veth, "epochs": self.epochs}


def _veth_bytes(cluster) -> dict[str, int]:
    """Bytes the hosts' uplinks sent (up) and received (down), from the kernel's counters."""
    from . import netns

    up = down = 0
    for host in cluster.hosts:
        dev = cluster.interface[host, cluster.neighbours(host)[0]]
        stats = json.loads(netns.run(["ip", "-n", cluster.namespace[host], "-j", "-s", "link", "show", "dev", dev]))
        up += int(stats[0]["stats64"]["tx"]["bytes"])
        down += int(stats[0]["stats64"]["rx"]["bytes"])
    return {"up_bytes": up, "down_bytes": down}


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["?"])[-1]


def train_gnn_on_testbed(dataset: str, workers: int = 4, exchange: str = "ina", memory_bytes: int = 2 << 20,
                         gbps: float = 1.0, epochs: int = 3, hidden: int = 16, layers: int = 2, lr: float = 0.01,
                         weight_decay: float = 5e-4, dropout: float = 0.5, seed: int = 0, blocking: str = "paper",
                         latency_us: float = 1.0, timeout_s: float = 300.0, check: bool = True) -> GnnTestbedRun:
    """Train GCN on ``dataset`` with ``workers`` workers on ``star:n=WORKERS,gbps=GBPS`` (see the module)."""
    import tempfile

    from ..topology import load_topology_spec
    from .cluster import plan_cluster
    from .lifecycle import Testbed
    from .netns import python_in, require

    if exchange not in EXCHANGES:
        raise NetweaveError(f"--exchange {exchange!r}: use ina or p2p")
    if gbps <= 0:
        raise NetweaveError(f"--gbps {gbps:g}: give a positive link rate")
    if epochs < 1:
        raise NetweaveError(f"--epochs {epochs}: give at least 1")
    if memory_bytes < 0:
        raise NetweaveError(f"--memory {memory_bytes}: give a non-negative size")
    require()
    run = GnnTestbedRun(exchange)
    with tempfile.TemporaryDirectory(prefix="netweave-gnn-") as directory:
        os.chmod(directory, 0o755)
        job = prepare_gnn_job(dataset, workers, memory_bytes, directory, hidden, layers, seed, blocking)
        run.planned = job.planned
        topo = load_topology_spec(f"star:n={workers},gbps={gbps:g},latency_us={latency_us:g}")
        with Testbed(plan_cluster(topo, scale=1.0)) as cluster:
            switch_name = cluster.switches[0]
            hosts = cluster.hosts
            before = _veth_bytes(cluster)
            procs = []
            try:
                agent = python_in(cluster.namespace[switch_name], "netweave.testbed.gnn_switch", json.dumps({
                    "address": cluster.address[switch_name], "port": SWITCH_PORT, "workers": workers,
                    "memory_bytes": memory_bytes, "timeout_s": timeout_s,
                    "plans": os.path.join(directory, "plans.npz") if exchange == "ina" else None}))
                procs.append(agent)
                if not agent.stdout.readline():
                    raise NetweaveError(f"the switch agent did not start: {_last_line(agent.stderr.read())}")
                common = {"workers": workers, "directory": directory, "exchange": exchange,
                          "switch": [cluster.address[switch_name], SWITCH_PORT], "dims": job.dims,
                          "num_train": job.num_train, "epochs": epochs, "lr": lr, "weight_decay": weight_decay,
                          "dropout": dropout, "seed": seed, "timeout_s": timeout_s,
                          "peers": {str(r): cluster.address[h] for r, h in enumerate(hosts)}}
                for r, h in enumerate(hosts):
                    procs.append(python_in(cluster.namespace[h], "netweave.testbed.gnn_training",
                                           json.dumps(common | {"rank": r, "address": cluster.address[h]})))
                outputs = _wait(procs, ["the switch agent"] + [f"worker {r} ({h})" for r, h in enumerate(hosts)],
                                timeout_s * 4)
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            after = _veth_bytes(cluster)
        run.veth = {k: after[k] - before[k] for k in after}
        run.switch = json.loads(_last_line(outputs[0]))
        per_worker = [[json.loads(line) for line in out.splitlines() if line.startswith('{"epoch"')]
                      for out in outputs[1:]]
        for e in range(epochs):
            rows = [w[e] for w in per_worker]
            run.epochs.append({"epoch": e + 1, "epoch_s": max(r["epoch_s"] for r in rows),
                               "exchange_s": float(np.mean([r["exchange_s"] for r in rows])),
                               "max_exchange_s": max(r["exchange_s"] for r in rows),
                               "sync_s": float(np.mean([r["sync_s"] for r in rows])),
                               "exchange_bytes": sum(r["sent_bytes"] for r in rows),
                               "exchange_received_bytes": sum(r["received_bytes"] for r in rows),
                               "loss": rows[0]["loss"]})
        logits = np.zeros((job.graph.num_nodes, job.dims[-1]), np.float32)
        for r in range(workers):
            logits[job.parts == r] = np.load(os.path.join(directory, f"logits{r}.npy"), allow_pickle=False)
        run.logits = logits
        if check:
            run.single_logits, run.single_losses = single_process(job, epochs, lr, weight_decay, dropout, seed)
    return run


def _wait(procs, names, timeout_s: float) -> list[str]:
    """Wait for every process; one that fails stops the run with its last error line."""
    end = time.monotonic() + timeout_s
    while any(p.poll() is None for p in procs):
        if any(p.poll() not in (None, 0) for p in procs):
            time.sleep(3.0)  # the first to fail names the cause; the others follow from it
            failed = [(name, p) for name, p in zip(names, procs) if p.poll() not in (None, 0)]
            first = min(failed, key=lambda f: f[1] is procs[0])  # a worker's own error before the switch's
            raise NetweaveError(f"{first[0]} failed (exit {first[1].returncode}): "
                                f"{_last_line(first[1].stderr.read())}; the run was stopped")
        if time.monotonic() > end:
            raise NetweaveError(f"the run did not finish in {timeout_s:g} s; it was stopped")
        time.sleep(0.1)
    for name, p in zip(names, procs):
        if p.returncode:
            raise NetweaveError(f"{name} failed (exit {p.returncode}): {_last_line(p.stderr.read())}")
    return [p.stdout.read() for p in procs]


def main(argv: list[str]) -> int:
    try:
        worker_main(json.loads(argv[0]))
    except (ProtocolError, TimeoutError, ConnectionError, OSError, ValueError, KeyError) as e:
        print(f"gnn worker: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
