"""A probe of the kernel data plane: ``python -m netweave.testbed.gnn.probe CONFIG`` (a
:class:`ProbeConfig`) in a host's namespace runs exchanges of seeded random rows
(:func:`probe_rows`) through :class:`~.packet_transport.PacketTransport`, with no model, and
writes what came down to ``out`` (``.npz``): per exchange ``i`` the result ``out{i}`` (float32,
``(num_boundary, dim)``) and every SUM accepted, ``sum{i}_key`` ``(k, 4)`` (block, vertex, chunk, and
the SUM's sender: the worker whose unit completed it), ``sum{i}_row`` (float32, ``(k, VALUES)``, zero past
the chunk's width) and per SUM packet received (duplicates included) ``sum{i}_last`` ``(k, 3)`` (block, sender, the vertex of
its last row, whose completer a SUM of several rows names). Tests compare them with the userspace agent
(:class:`~.switch.Switch`) fed the same rows, bit for bit, and time the data plane alone.

It connects to the switch agent (HELLO, then BYE) as a worker does, so the agent serves it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..net.ports import GNN_DATA, GNN_DOWN
from ..net.role import RoleConfig
from .plans import load_plans
from .tables import VALUES
from .wire import BYE, HELLO, Conn, pump
from .worker import barrier

EXCHANGES = ((0, 0), (1, 0), (1, 1))  # (layer, direction) of a 2-layer GCN's epoch


def probe_rows(seed: int, rank: int, exchange: int, shape: tuple[int, int], direction: int) -> np.ndarray:
    """The rows worker ``rank`` sends in probe exchange ``exchange`` (float32, ``shape``): normal,
    scaled like embeddings (forward) or gradients (backward)."""
    rng = np.random.default_rng([seed, rank, exchange])
    scale = 1e-3 if direction else 1.0
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@dataclass(frozen=True, kw_only=True)
class ProbeConfig(RoleConfig):
    """rank, address (its own), switch (the agent's TCP address), directory (the job's files),
    memory_bytes, overlap and switch_shards (the switch's), rounds (times the exchanges run), seed, out (the
    ``.npz`` it writes), timeout_s, retransmit_s."""

    rank: int
    address: str
    switch: tuple[str, int]
    directory: str
    memory_bytes: int
    overlap: bool = False
    rounds: int = 1
    seed: int = 0
    out: str
    timeout_s: float = 60.0
    retransmit_s: float = 0.05
    link_gbps: float = 0.0
    switch_shards: int = 1


def probe(cfg: ProbeConfig) -> dict:
    from .packet_transport import PacketTransport

    plans = load_plans(os.path.join(cfg.directory, "plans.npz"))
    with np.load(os.path.join(cfg.directory, f"worker{cfg.rank}.npz"), allow_pickle=False) as f:
        boundary = np.asarray(f["boundary"])
    deadline = time.monotonic() + cfg.timeout_s
    while True:
        try:
            tcp = socket.create_connection(cfg.switch, timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    conn = Conn(tcp, -1)
    conn.queue(HELLO, sender=cfg.rank)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((cfg.address, GNN_DOWN))
    t = PacketTransport(sock, (cfg.switch[0], GNN_DATA), cfg.rank, plans, boundary, cfg.memory_bytes,
                        overlap=cfg.overlap, timeout_s=cfg.timeout_s, retransmit_s=cfg.retransmit_s,
                        link_gbps=cfg.link_gbps, shards=cfg.switch_shards)
    t.record = []
    barrier(conn, cfg.rank, cfg.timeout_s)
    saved, seconds = {}, []
    i = 0
    for _ in range(cfg.rounds):
        for layer, direction in EXCHANGES:
            if layer >= len(plans):
                continue
            rows = probe_rows(cfg.seed, cfg.rank, i, (boundary.size, int(plans[layer]["dim"])), direction)
            t.record.clear()
            t.record_last.clear()
            t0 = time.perf_counter()
            out = t.exchange(layer, direction, rows)
            seconds.append(time.perf_counter() - t0)
            saved[f"out{i}"] = out
            saved[f"sum{i}_key"] = (np.concatenate([k for k, _ in t.record]) if t.record
                                    else np.zeros((0, 4), np.int64))
            saved[f"sum{i}_row"] = (np.concatenate([r for _, r in t.record]) if t.record
                                    else np.zeros((0, VALUES), np.float32))
            saved[f"sum{i}_last"] = (np.concatenate(t.record_last) if t.record_last else np.zeros((0, 3), np.int64))
            i += 1
    np.savez(cfg.out, **saved)
    conn.queue(BYE, sender=cfg.rank)
    pump([conn], lambda: True, lambda c, m: None, cfg.timeout_s, "the BYE to leave")
    tcp.close()
    sock.close()
    return {"exchanges": i, "exchange_s": seconds, "transport": t.counters, "bytes": t.bytes}


def main(argv: list[str]) -> int:
    try:
        result = probe(ProbeConfig.from_json(argv[0]))
    except (TimeoutError, ConnectionError, OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"gnn probe: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
