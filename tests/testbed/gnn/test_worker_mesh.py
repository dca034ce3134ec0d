"""The peer-to-peer exchange's mesh (:func:`~netweave.testbed.gnn.worker.peer_mesh`): every worker
gets a stream to every other, each named by the HELLO that opened it, and no worker waits for
another's first exchange to learn who connected. No root: loopback TCP."""

from __future__ import annotations

import socket
import threading
import time

from netweave.testbed.gnn.worker import peer_mesh


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_every_worker_meets_every_other_before_any_exchange():
    workers, timeout_s = 4, 5.0
    ports = _free_ports(workers)
    addresses = {r: ("127.0.0.1", port) for r, port in enumerate(ports)}
    meshes, errors = {}, []

    def worker(rank):  # builds its mesh and does nothing after it: no exchange flushes a HELLO late
        try:
            meshes[rank] = peer_mesh(rank, workers, addresses[rank], addresses, time.monotonic() + timeout_s, timeout_s)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((rank, repr(e)))

    threads = [threading.Thread(target=worker, args=(r,), daemon=True) for r in reversed(range(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s * 3)  # a HELLO left queued stalls the lower ranks until their timeout: an error
    assert not errors
    assert sorted(meshes) == list(range(workers))
    for rank, mesh in meshes.items():
        assert list(mesh) == [p for p in range(workers) if p != rank]
        assert all(c.peer == p for p, c in mesh.items())
    for mesh in meshes.values():
        for c in mesh.values():
            c.sock.close()
