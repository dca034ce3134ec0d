"""Hadoop-like background traffic (switchgnn.txt §6.5): flows between random host pairs whose sizes
follow a data-centre Hadoop workload and whose arrivals at every host are a Poisson process.

The size distribution is a coarse empirical CDF shaped like the Facebook Hadoop cluster of Roy et
al. (SIGCOMM 2015) that DCQCN/HPCC-style simulations use: most flows are a few KB, a heavy tail
reaches 10 MB. Flows are sent at line rate, open loop (no congestion control), in MTU packets.
"""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError

#: flow sizes (bytes) and their cumulative probabilities
HADOOP_SIZES = np.array([250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 100_000, 300_000, 1_000_000,
                         3_000_000, 10_000_000], dtype=np.int64)
HADOOP_CDF = np.array([0.10, 0.20, 0.30, 0.40, 0.53, 0.60, 0.70, 0.80, 0.90, 0.95, 0.98, 1.0])


def mean_flow_bytes() -> float:
    """Mean flow size of :data:`HADOOP_SIZES` (bytes)."""
    return float((np.diff(HADOOP_CDF, prepend=0.0) * HADOOP_SIZES).sum())


def mean_gap_s(load: float, host_bytes_per_s: float) -> float:
    """Mean time between flow arrivals at one host so that background flows use ``load`` (0..1) of
    its line rate; 0 when ``load`` is 0 (no background)."""
    if not 0.0 <= load < 1.0:
        raise NetweaveError(f"background load {load} must be in [0, 1)")
    return 0.0 if load == 0 else mean_flow_bytes() / (load * host_bytes_per_s)
