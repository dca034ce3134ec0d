"""Partitioning as a scenario: dataset → partition → communication relation → its statistics.

What ``netweave partition`` runs: edge cut, balance, halo and the exchange volume of one layer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .defaults import feature_bytes, feature_dim

if TYPE_CHECKING:
    from ..partition import Partition, PartitionStats


@dataclass(frozen=True, kw_only=True)
class PartitionScenario:
    """Partition ``dataset`` and measure the partition.

    Attributes:
        method: metis, metis32, random, range or hierarchical (needs ``topology``); parts: number of parts
        (default: the topology's workers); seed: seed of METIS / random.
        feature_dim: float32 values per embedding for the exchange volume (default: the dataset's, else 128).
    """

    dataset: str
    method: str = "metis"
    parts: int | None = None
    topology: str | None = None
    seed: int = 0
    feature_dim: int | None = None

    def run(self) -> "PartitionResult":
        from ..graph import load_dataset
        from ..partition import comm_relation, partition_by_method, partition_stats

        t0 = time.perf_counter()
        g = load_dataset(self.dataset)
        t1 = time.perf_counter()
        p = partition_by_method(g, self.method, self.parts, self.topology, self.seed)
        t2 = time.perf_counter()
        comm = comm_relation(g, p)
        t3 = time.perf_counter()
        dim = feature_dim(self.feature_dim, g)
        return PartitionResult(scenario=self, num_nodes=g.num_nodes, num_edges=g.num_edges, feature_dim=dim,
                               partition=p, stats=partition_stats(g, p, comm, feature_bytes(dim)),
                               load_time_s=t1 - t0, partition_time_s=t2 - t1, comm_relation_time_s=t3 - t2)


@dataclass(frozen=True, kw_only=True, eq=False)
class PartitionResult:
    """A partition of a graph of ``num_nodes`` vertices and ``num_edges`` edges, and its statistics
    (for embeddings of ``feature_dim`` float32 values)."""

    scenario: PartitionScenario
    num_nodes: int
    num_edges: int
    feature_dim: int
    partition: Partition
    stats: PartitionStats
    load_time_s: float
    partition_time_s: float
    comm_relation_time_s: float

    def summary(self) -> dict:
        """The JSON report of ``netweave partition`` (units in key names)."""
        s = self.scenario
        return {"dataset": s.dataset, "num_nodes": self.num_nodes, "num_edges": self.num_edges, "seed": s.seed,
                "feature_dim": self.feature_dim, **self.stats.summary(), "load_time_s": self.load_time_s,
                "partition_time_s": self.partition_time_s, "comm_relation_time_s": self.comm_relation_time_s}
