"""Partition a graph by method name, for the command line and the training launcher."""

from __future__ import annotations

from ..errors import NetweaveError
from ..graph import Graph
from ..topology import Topology, load_topology_spec
from .hierarchical import hierarchical_partition
from .metis import metis_partition
from .partition import Partition
from .random import random_partition
from .range import range_partition

METHODS = ("metis", "metis32", "random", "range", "hierarchical")


def partition_by_method(graph: Graph, method: str, parts: int | None, topology: str | Topology | None,
                        seed: int) -> Partition:
    """Partition ``graph`` by ``method`` (one of :data:`METHODS`).

    ``topology`` (a spec or a :class:`Topology`) gives the machines for ``hierarchical`` and, when
    given, the number of parts (its workers); ``parts`` must then agree with it.
    """
    topo = load_topology_spec(topology) if isinstance(topology, str) else topology
    if topo is not None:
        workers = len(topo.workers)
        if parts is not None and parts != workers:
            raise NetweaveError(f"{parts} parts requested but the topology has {workers} workers; "
                                "drop the part count or use a topology with that many workers")
        parts = workers
    if method not in METHODS:
        raise NetweaveError(f"unknown partition method {method!r}; choose one of {', '.join(METHODS)}")
    if method == "hierarchical":
        if topo is None:
            raise NetweaveError("--method hierarchical needs --topology (its machines and GPUs define the levels)")
        return hierarchical_partition(graph, topo.machines(), seed)
    if parts is None:
        raise NetweaveError("--parts K is required (the number of workers)")
    if method in ("metis", "metis32"):
        return metis_partition(graph, parts, seed, bits=32 if method == "metis32" else 64)
    if method == "random":
        return random_partition(graph, parts, seed)
    return range_partition(graph, parts)
