"""Background traffic for the testbed: flows between hosts that are not the job's, as the
SwitchGNN paper injects to test its congestion control (switchgnn.txt §6.5: "The background flows
are randomly generated across all workers. The flow size follows the realistic datacenter workload
of Hadoop and their arrival rate follows the Poisson distribution").

One role per host (``python -m netweave.testbed.net.background CONFIG``): flows arrive as a Poisson
process whose rate makes the host send ``load`` × its link rate on average; each flow goes to a
peer drawn uniformly and carries a size drawn from :data:`HADOOP_CDF`, sent as UDP datagrams as
fast as the host's uplink (its HTB class) takes them, with no congestion control (the flows load
the network; they are not measured). Each role also drains what the others send it. It ends when
its stdin closes (the launcher is done) or after ``duration_s``, and prints its totals as one JSON
line.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import time
from dataclasses import dataclass

import numpy as np

from ...errors import NetweaveError
from . import batchio
from .ports import BACKGROUND, datagram_payload
from .role import RoleConfig

#: Flow sizes of Facebook's Hadoop cluster (Roy et al., "Inside the Social Network's (Datacenter)
#: Network", SIGCOMM 2015), as tabulated for the HPCC simulations (FbHdp_distribution.txt): (bytes,
#: cumulative percent); sizes between points are interpolated linearly. Mean 120 KB.
HADOOP_CDF = np.array([(0, 0), (100, 1), (200, 2), (300, 5), (350, 15), (400, 20), (500, 30), (600, 40), (700, 50),
                       (1000, 60), (2000, 67), (7000, 70), (30000, 72), (50000, 82), (80000, 87), (120000, 90),
                       (300000, 95), (1000000, 97.5), (2000000, 99), (10000000, 100)], dtype=np.float64)
PACKET = 1400  # bytes of UDP payload per background datagram (at most; a flow's last is shorter)


def flow_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` flow sizes (bytes, at least 1) drawn from :data:`HADOOP_CDF` by inverse transform."""
    return np.maximum(1, np.interp(rng.uniform(0, 100, n), HADOOP_CDF[:, 1], HADOOP_CDF[:, 0])).astype(np.int64)


def mean_flow_bytes() -> float:
    """The mean of :data:`HADOOP_CDF` (piecewise-uniform between its points)."""
    b, p = HADOOP_CDF[:, 0], HADOOP_CDF[:, 1] / 100
    return float(np.sum(np.diff(p) * (b[1:] + b[:-1]) / 2))


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
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((cfg.address, BACKGROUND))
    sock.setblocking(False)
    rows = np.zeros((64, datagram_payload()), np.uint8)
    got = np.zeros(64, np.int64)
    lengths = np.zeros(64, np.int64)
    out = np.zeros((64, PACKET), np.uint8)
    start = now = time.monotonic()
    arrival = start + rng.exponential(gap_s)
    backlog: list[tuple[str, int]] = []  # flows arrived and not yet sent: (peer, bytes left)
    flows = sent = received = 0
    while now - start < cfg.duration_s:
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
            break  # the launcher is done
        while arrival <= now:
            backlog.append((cfg.peers[int(rng.integers(len(cfg.peers)))], int(flow_sizes(rng, 1)[0])))
            arrival += rng.exponential(gap_s)
            flows += 1
        if backlog:  # up to 64 datagrams of the oldest flow, then look again
            peer, left = backlog[0]
            k = min(64, -(-left // PACKET))
            lengths[:k] = PACKET
            lengths[k - 1] = min(PACKET, left - (k - 1) * PACKET)
            try:
                batchio.send_batch(sock, out[:k], lengths[:k], (peer, BACKGROUND), timeout_s=1.0)
            except OSError:
                pass  # a full queue drops background traffic; nothing measures it
            sent += int(lengths[:k].sum())
            left -= int(lengths[:k].sum())
            if left > 0:
                backlog[0] = (peer, left)
            else:
                backlog.pop(0)
        while (k := batchio.recv_batch(sock, rows, got, 0.0)) > 0:
            received += int(got[:k].sum())
        if not backlog:
            time.sleep(max(0.0, min(arrival - time.monotonic(), 0.01)))
        now = time.monotonic()
    sock.close()
    return {"flows": flows, "sent_bytes": sent, "received_bytes": received, "seconds": round(now - start, 3)}


def main(argv: list[str]) -> int:
    try:
        print(json.dumps(run(BackgroundConfig.from_json(argv[0]))), flush=True)
    except (ValueError, TypeError, OSError, NetweaveError) as e:
        print(f"background traffic: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
