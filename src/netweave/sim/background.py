"""Hadoop-like background traffic (switchgnn.txt §6.5): flows between random host pairs whose sizes
follow a data-centre Hadoop workload and whose arrivals at every host are a Poisson process.

The size distribution is Facebook's Hadoop cluster (Roy et al., "Inside the Social Network's
(Datacenter) Network", SIGCOMM 2015) as tabulated for the HPCC simulations (FbHdp_distribution.txt):
half the flows are under 700 bytes, 1 % above 2 MB, up to 10 MB; sizes between the table's points
are interpolated linearly, as HPCC's generator does (:func:`flow_sizes`; the simulator's kernel
the same way). The simulator sends flows at line rate, open loop, in MTU packets; the testbed's
:mod:`netweave.testbed.net.background` over TCP, drawn from the same table.
"""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError

#: flow sizes (bytes) and their cumulative probabilities (the table's percent / 100)
HADOOP_SIZES = np.array([0, 100, 200, 300, 350, 400, 500, 600, 700, 1_000, 2_000, 7_000, 30_000, 50_000, 80_000,
                         120_000, 300_000, 1_000_000, 2_000_000, 10_000_000], dtype=np.int64)
HADOOP_CDF = np.array([0, 1, 2, 5, 15, 20, 30, 40, 50, 60, 67, 70, 72, 82, 87, 90, 95, 97.5, 99, 100]) / 100


def flow_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` flow sizes (bytes, at least 1) drawn from the table by inverse transform."""
    return np.maximum(1, np.interp(rng.uniform(0, 1, n), HADOOP_CDF, HADOOP_SIZES)).astype(np.int64)


def mean_flow_bytes() -> float:
    """Mean flow size of the table (bytes; uniform between its points): 120,420.75."""
    return float(np.sum(np.diff(HADOOP_CDF) * (HADOOP_SIZES[1:] + HADOOP_SIZES[:-1]) / 2))


def mean_gap_s(load: float, host_bytes_per_s: float) -> float:
    """Mean time between flow arrivals at one host so that background flows use ``load`` (0..1) of
    its line rate; 0 when ``load`` is 0 (no background)."""
    if not 0.0 <= load < 1.0:
        raise NetweaveError(f"background load {load} must be in [0, 1)")
    return 0.0 if load == 0 else mean_flow_bytes() / (load * host_bytes_per_s)
