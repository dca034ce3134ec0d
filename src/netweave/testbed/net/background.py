"""Background traffic for the testbed: flows between hosts that are not the job's, as the
SwitchGNN paper injects to test its congestion control (switchgnn.txt §6.5: "The background flows
are randomly generated across all workers. The flow size follows the realistic datacenter workload
of Hadoop and their arrival rate follows the Poisson distribution").

One role per host (``python -m netweave.testbed.net.background CONFIG``): flows arrive as a Poisson
process whose rate makes the host send ``load`` × its link rate on average; each flow goes to a
peer drawn uniformly and carries a size drawn from Facebook's Hadoop flow sizes, the table the
simulator uses too (:mod:`netweave.sim.background`). Flows are TCP, as
datacentre flows are: a flow's bytes are written, after those of the flows before it, to the one
connection this host keeps to that peer, so the kernel's congestion control (the namespace's
default: ``bbr`` on the testbed's machine) shares the links with the job's traffic instead of
blasting the queues full (the paper does not say how its background flows are sent). Each role
also drains what the others send it. It ends when its stdin closes (the launcher is done) or after
``duration_s``, and prints its totals as one JSON line.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import time
from dataclasses import dataclass

import numpy as np

from ...errors import NetweaveError
from ...sim.background import flow_sizes, mean_flow_bytes
from .ports import BACKGROUND
from .role import RoleConfig

CHUNK = 1 << 16  # bytes written to a connection at a time


@dataclass(frozen=True)
class BackgroundConfig(RoleConfig):
    """One host's background traffic: its ``address``, the ``peers``' addresses, the offered
    ``load`` (a fraction of ``link_gbps``), the seed, and the longest it runs."""

    address: str
    peers: tuple[str, ...]
    load: float
    link_gbps: float
    seed: int = 0
    duration_s: float = 600.0


def run(cfg: BackgroundConfig) -> dict:
    """Send Poisson flows until stdin closes or ``duration_s`` passes; return the totals."""
    if not 0 < cfg.load < 1 or cfg.link_gbps <= 0 or not cfg.peers:
        raise ValueError(f"background traffic needs a load in (0, 1), a link rate and peers, not {cfg}")
    rng = np.random.default_rng(cfg.seed)
    gap_s = mean_flow_bytes() * 8 / (cfg.load * cfg.link_gbps * 1e9)  # mean time between flows
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((cfg.address, BACKGROUND))
    listener.listen(len(cfg.peers))
    listener.setblocking(False)
    incoming: list[socket.socket] = []
    out: dict[str, socket.socket] = {}  # peer -> the connection this host's flows to it share
    backlog = dict.fromkeys(cfg.peers, 0)  # bytes of arrived flows not yet written, per peer
    chunk = bytes(CHUNK)
    totals = dict.fromkeys(("flows", "sent_bytes", "received_bytes", "refused_flows"), 0)
    start = now = time.monotonic()
    arrival = start + rng.exponential(gap_s)
    try:
        while now - start < cfg.duration_s:
            while arrival <= now:
                peer = cfg.peers[int(rng.integers(len(cfg.peers)))]
                size = int(flow_sizes(rng, 1)[0])
                if _connected(out, peer, cfg.address):
                    backlog[peer] += size
                    totals["flows"] += 1
                else:
                    totals["refused_flows"] += 1  # the peer is not listening (yet, or any more)
                arrival += rng.exponential(gap_s)
            busy = [out[p] for p in cfg.peers if backlog[p] and p in out]
            wait = max(0.0, min(arrival - now, 0.05))
            readable, writable, _ = select.select([sys.stdin, listener, *incoming], busy, [], wait)
            if sys.stdin in readable and not sys.stdin.readline():
                break  # the launcher is done
            for sock in readable:
                if sock is listener:
                    with contextlib.suppress(BlockingIOError):
                        conn, _ = listener.accept()
                        conn.setblocking(False)
                        incoming.append(conn)
                elif sock is not sys.stdin:
                    try:
                        data = sock.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    except ConnectionError:
                        data = b""
                    if not data:  # the peer closed it
                        incoming.remove(sock)
                        sock.close()
                    totals["received_bytes"] += len(data)
            for peer in cfg.peers:
                if out.get(peer) in writable:
                    try:
                        n = out[peer].send(chunk[:min(CHUNK, backlog[peer])])
                    except BlockingIOError:
                        n = 0
                    except ConnectionError:
                        out.pop(peer).close()
                        n, backlog[peer] = 0, 0
                    backlog[peer] -= n
                    totals["sent_bytes"] += n
            now = time.monotonic()
    finally:
        for sock in [listener, *incoming, *out.values()]:
            sock.close()
    return {**totals, "seconds": round(now - start, 3)}


def _connected(out: dict, peer: str, address: str) -> bool:
    """Whether this host has a connection to ``peer`` (made now if not: a blocking connect within
    the star, bound to ``address``; False when the peer refuses)."""
    if peer in out:
        return True
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((address, 0))
    sock.settimeout(1.0)
    try:
        sock.connect((peer, BACKGROUND))
    except OSError:
        sock.close()
        return False
    sock.setblocking(False)
    out[peer] = sock
    return True


def main(argv: list[str]) -> int:
    try:
        print(json.dumps(run(BackgroundConfig.from_json(argv[0]))), flush=True)
    except (ValueError, TypeError, OSError, NetweaveError) as e:
        print(f"background traffic: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
