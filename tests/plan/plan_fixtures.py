"""Helpers shared by the planner tests."""

import numpy as np

from netweave.partition import Partition, comm_relation
from netweave.topology import topology_from_dict


def fig6_topology(nv_gbps=400.0, pcie_gbps=80.0, qpi_gbps=40.0):
    """Figure 6 of dgcl.txt: d1,d2 on CPU0 and d3,d4 on CPU1 (PCIe), QPI between the CPUs, and
    NVLinks d1-d2, d2-d3, d3-d4."""
    nodes = [{"name": f"d{i}", "kind": "gpu"} for i in range(1, 5)]
    nodes += [{"name": "CPU0", "kind": "cpu"}, {"name": "CPU1", "kind": "cpu"}]
    links = [{"a": "d1", "b": "CPU0", "gbps": pcie_gbps}, {"a": "d2", "b": "CPU0", "gbps": pcie_gbps},
             {"a": "d3", "b": "CPU1", "gbps": pcie_gbps}, {"a": "d4", "b": "CPU1", "gbps": pcie_gbps},
             {"a": "CPU0", "b": "CPU1", "gbps": qpi_gbps},
             {"a": "d1", "b": "d2", "gbps": nv_gbps}, {"a": "d2", "b": "d3", "gbps": nv_gbps},
             {"a": "d3", "b": "d4", "gbps": nv_gbps}]
    return topology_from_dict({"name": "fig6", "nodes": nodes, "links": links})


def relation(graph, parts):
    parts = np.asarray(parts)
    return comm_relation(graph, Partition(parts, int(parts.max()) + 1))

