"""One GNN layer through the simulated network: the switch memories to plan with, the simulated
plan next to host-based exchange (:class:`LayerReport`), and the check of the delivered sums.
The scenario that wires a whole layer is :class:`netweave.scenarios.InaScenario`."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..ina import host_traffic
from ..ina.plan import InaPlan
from .network import DEFAULT_MEMORY, FROM_TOPOLOGY, SimNetwork  # noqa: F401 (DEFAULT_MEMORY: its old home)
from .simulate import SimConfig, SimResult, simulate


def parse_switch_memory(raw, where: str = "--switch-memory") -> int | str | None:
    """``100MB`` -> bytes; ``unlimited`` (or ``ul``, ``inf``) -> None; ``topology`` ->
    :data:`FROM_TOPOLOGY` (each switch's ``aggregator_memory``, 100MB where the topology gives none)."""
    from ..topology.yaml_io import parse_bytes

    if isinstance(raw, str) and raw.strip().lower() in ("unlimited", "ul", "inf"):
        return None
    if isinstance(raw, str) and raw.strip().lower() == FROM_TOPOLOGY:
        return FROM_TOPOLOGY
    try:
        return parse_bytes(raw, where)
    except NetweaveError as exc:
        raise NetweaveError(f"{exc}, or 'unlimited', or {FROM_TOPOLOGY!r} (each switch's aggregator_memory)") from None


def plan_memory(net: SimNetwork, rel, switch_memory: int | str | None = FROM_TOPOLOGY
                ) -> tuple[int | np.ndarray | None, np.ndarray | None]:
    """The ``memory_bytes`` and ``edge_memory`` to plan ``rel`` on ``net`` with (see :func:`ina_plan`):
    one int when every switch has the same memory (the paper's setting), else the memory per switch
    and, per cross edge, the smallest memory among the switches that aggregate it."""
    memory = net.switch_memory(switch_memory)
    if memory is None:
        return None, None
    if memory.min() == memory.max():
        return int(memory[0]), None
    return memory, net.edge_memory(memory, rel.parts[rel.senders()], rel.parts[rel.dst], rel.dst)


@dataclass(frozen=True, eq=False)
class LayerReport:
    """One simulated layer next to the host-based traffic of the same relation.

    Attributes:
        plan: the simulated :class:`InaPlan`; result: the simulator's :class:`SimResult`.
        host_traffic_bytes: what host-based exchange (BNS-GCN) sends for the same relation.
        cross_edges, boundary_vertices: size of the relation; sim_time_s: wall time of the simulation.
    """

    plan: InaPlan
    result: SimResult
    host_traffic_bytes: int
    cross_edges: int
    boundary_vertices: int
    sim_time_s: float

    @property
    def traffic_reduction(self) -> float:
        """``1 − traffic / host traffic``: positive when the strategy sends less than host-based exchange."""
        return 1.0 - self.result.traffic_bytes / self.host_traffic_bytes if self.host_traffic_bytes else 0.0

    @property
    def aggregated_share(self) -> float:
        """Share of the delivered bytes that arrived aggregated."""
        delivered = self.result.timeline[:, 1].sum()
        return float(self.result.timeline[:, 2].sum() / delivered) if delivered else 0.0

    def summary(self) -> dict:
        plan = self.plan
        memory = plan.memory_bytes if np.ndim(plan.memory_bytes) == 0 else [int(b) for b in plan.memory_bytes]
        return {"strategy": plan.strategy, "switch_memory_bytes": memory, "feature_bytes": plan.feature_bytes,
                "cross_edges": self.cross_edges, "boundary_vertices": self.boundary_vertices,
                "num_blocks": plan.num_blocks, "partition_levels": int(plan.levels.max()) + 1,
                "traffic_bytes": self.result.traffic_bytes, "host_traffic_bytes": self.host_traffic_bytes,
                "traffic_reduction": self.traffic_reduction, **self.result.summary(),
                "aggregated_share": self.aggregated_share, "sim_time_s": self.sim_time_s}


def plan_report(rel, plan: InaPlan, net, sim: SimConfig, values: np.ndarray | None = None) -> LayerReport:
    """Simulate ``plan`` and report it next to the host-based traffic of the same relation."""
    t0 = time.perf_counter()
    result = simulate(plan, net, sim, values)
    return LayerReport(plan, result, host_traffic(rel, plan.feature_bytes).traffic_bytes, rel.num_cross_edges,
                       int(rel.boundary().size), time.perf_counter() - t0)


def check_sums(g, parts: np.ndarray, values: np.ndarray, sums: np.ndarray) -> float:
    """Largest error of the delivered sums against the sparse product ``A_cross @ X``; fails loudly."""
    from scipy.sparse import csr_array

    src = g.edge_sources()
    cross = parts[src] != parts[g.indices]
    a = csr_array((np.ones(int(cross.sum())), (g.indices[cross], src[cross])), shape=(g.num_nodes, g.num_nodes))
    expected = a @ values
    err = float(np.abs(sums - expected).max(initial=0.0) / max(np.abs(expected).max(initial=0.0), 1.0))
    if not err < 1e-9:
        raise NetweaveError(f"verification failed: delivered sums differ from the sparse product by {err:.3g} (relative)")
    return err
