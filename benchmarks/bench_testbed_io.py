"""Benchmark: batched datagram I/O (``netweave.testbed.batchio``: sendmmsg/recvmmsg through ctypes)
against a Python ``sendto``/``recv_into`` loop, on loopback (127.0.0.1), 1 KiB datagrams.

Per method and repeat, one process sends ``--datagrams`` datagrams to a socket whose receive
buffer holds them all (``SO_RCVBUFFORCE`` as root; otherwise the count is cut to what the default
buffer holds, and the JSON says so), then receives them all; the two phases are timed apart:

* ``send_pps``: datagrams per second of the send phase. On loopback the sender's system call also
  delivers the datagram into the receiver's queue, so this is the costlier side.
* ``recv_pps``: datagrams per second of the receive phase.
* ``pps`` = datagrams / (send + receive time): one datagram's full cost, both ends, one core;
  ``gbps`` = pps × 1024 × 8 (payload).

Methods: ``batch`` (the C library), ``batch-fallback`` (batchio's pure-Python slow path, the
same API) and ``loop`` (plain ``sock.sendto``/``sock.recv_into`` per datagram). Medians of
``--repeats``. Writes ``benchmarks/results/testbed_io.json`` and prints a Markdown table.
Usage: python benchmarks/bench_testbed_io.py [--datagrams 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import time
from pathlib import Path

import numpy as np

from netweave.testbed.net import batchio

HERE = Path(__file__).resolve().parent
SIZE = 1024


def sockets(want_bytes: int) -> tuple[socket.socket, socket.socket, bool]:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    forced = batchio.set_receive_buffer(rx, want_bytes)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return tx, rx, forced


def once(method: str, n: int) -> dict:
    tx, rx, _ = sockets(n * 4096)
    buf = np.random.default_rng(0).integers(0, 256, (n, SIZE), dtype=np.uint8)
    lengths = np.full(n, SIZE)
    out = np.zeros((n, SIZE), np.uint8)
    got_lengths = np.zeros(n, np.uint32)
    address = rx.getsockname()
    with tx, rx:
        if method == "loop":
            t0 = time.perf_counter()
            for i in range(n):
                tx.sendto(buf[i], address)
            t1 = time.perf_counter()
            rx.settimeout(0.5)
            got = 0
            try:
                for i in range(n):
                    rx.recv_into(out[i])
                    got += 1
            except socket.timeout:
                pass
            t2 = time.perf_counter()
        else:
            batchio.set_backend("native" if method == "batch" else "python")
            t0 = time.perf_counter()
            sent = batchio.send_batch(tx, buf, lengths, address)
            t1 = time.perf_counter()
            got = 0
            while got < n:
                k = batchio.recv_batch(rx, out[got:], got_lengths[got:], timeout_s=0.5)
                if not k:
                    break
                got += k
            t2 = time.perf_counter()
            assert sent == n
    if got == n:
        assert np.array_equal(out, buf), "received bytes differ from those sent"
    recv_s = t2 - t1 - (0.5 if got < n else 0.0)  # a short run ends in one timeout
    return {"method": method, "datagrams": n, "received": got, "send_s": t1 - t0, "recv_s": recv_s,
            "send_pps": n / (t1 - t0), "recv_pps": got / recv_s, "pps": got / (t1 - t0 + recv_s),
            "gbps": got / (t1 - t0 + recv_s) * SIZE * 8 / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datagrams", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n = args.datagrams
    tx, rx, forced = sockets(n * 4096)
    if not forced:  # without root the receive buffer is capped (net.core.rmem_max): send what it holds
        n = min(n, rx.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 4096)
    tx.close()
    rx.close()
    backend_before = batchio.set_backend("auto")
    methods = ["batch", "batch-fallback", "loop"] if backend_before == "native" else ["batch-fallback", "loop"]
    runs = {m: [] for m in methods}
    for _ in range(args.repeats):  # interleaved, so that a burst of load hits every method alike
        for m in methods:
            runs[m].append(once(m, n))
    batchio.set_backend(backend_before)
    rows = []
    for m, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("send_pps", "recv_pps", "pps", "gbps")}
        rows.append({"method": m, **med, "lost": sum(r["datagrams"] - r["received"] for r in rs), "runs": rs})
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
            "command": f"python benchmarks/bench_testbed_io.py --datagrams {args.datagrams} --repeats {args.repeats}",
            "load_1min": os.getloadavg()[0], "datagram_bytes": SIZE, "datagrams_per_run": n,
            "receive_buffer_forced": forced, "batchio_backend": backend_before}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "testbed_io.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"\n{meta['command']} — {meta['machine']}, load {meta['load_1min']:.1f}, {n} datagrams of {SIZE} B "
          f"per run, medians of {args.repeats}\n")
    print("| method | send datagrams/s | receive datagrams/s | both ends, datagrams/s | Gb/s of payload | lost |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['send_pps']:,.0f} | {r['recv_pps']:,.0f} | {r['pps']:,.0f} | {r['gbps']:.2f} | "
              f"{r['lost']} |")
    by = {r["method"]: r for r in rows}
    if "batch" in by:
        print(f"\nsendmmsg/recvmmsg move {by['batch']['pps'] / by['loop']['pps']:.1f}x the datagrams per second of "
              f"the Python loop (send {by['batch']['send_pps'] / by['loop']['send_pps']:.1f}x, "
              f"receive {by['batch']['recv_pps'] / by['loop']['recv_pps']:.1f}x).")


if __name__ == "__main__":
    main()
