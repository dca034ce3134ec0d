"""One GNN layer's propagation, end to end: dataset → partition → boundary relation → InaPlan →
simulation (→ numeric check). What ``netweave ina`` runs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import NetweaveError
from ..graph import load_dataset
from ..ina import boundary_relation, host_traffic
from ..ina.orders import ORDERS
from ..ina.plan import STRATEGIES, InaPlan, ina_plan
from ..partition import partition_by_method
from ..partition import load_partition
from ..progress import stage
from ..topology import load_topology_spec
from .network import DEFAULT_MEMORY, FROM_TOPOLOGY, SimNetwork, sim_network  # noqa: F401 (DEFAULT_MEMORY: its old home)
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


@dataclass(frozen=True)
class LayerConfig:
    """A layer to simulate. ``topology`` defaults to ``star:n=WORKERS`` at ``gbps`` with 2 µs links
    (§6); ``switch_memory`` :data:`FROM_TOPOLOGY` takes every switch's ``aggregator_memory`` from the
    topology (:data:`DEFAULT_MEMORY` where it gives none), an int overrides it for every switch,
    ``None`` is unlimited (``straw`` → UL); ``feature_dim`` defaults to the dataset's, else 128."""

    dataset: str = "cora"
    workers: int = 8
    topology: str | None = None
    switch_memory: int | str | None = FROM_TOPOLOGY
    strategy: str = "switchgnn"
    order: str = "gamr"
    feature_dim: int | None = None
    gbps: float = 100.0
    seed: int = 0
    start: int | None = None
    method: str = "metis"
    parts_file: str | None = None
    verify: bool = False
    sim: SimConfig = field(default_factory=SimConfig)

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise NetweaveError(f"unknown strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}")
        if self.order not in ORDERS:
            raise NetweaveError(f"unknown order {self.order!r}; use one of {', '.join(ORDERS)}")
        if self.workers < 2:
            raise NetweaveError(f"--workers {self.workers}: propagation across workers needs at least 2")
        if self.feature_dim is not None and self.feature_dim < 1:
            raise NetweaveError(f"--feature-dim {self.feature_dim} must be positive")
        if self.gbps <= 0:
            raise NetweaveError(f"--gbps {self.gbps} must be positive")
        if isinstance(self.switch_memory, str) and self.switch_memory != FROM_TOPOLOGY:
            raise NetweaveError(f"--switch-memory {self.switch_memory!r}: give bytes (100MB), 'unlimited' or "
                                f"{FROM_TOPOLOGY!r}")
        if isinstance(self.switch_memory, int) and self.switch_memory < 0:
            raise NetweaveError(f"--switch-memory {self.switch_memory} B must not be negative")
        self.sim.check()


def simulate_layer(config: LayerConfig) -> tuple[dict, SimResult]:
    """Run one layer; returns the report (units in key names) and the raw :class:`SimResult`."""
    config.check()
    topo = load_topology_spec(config.topology or f"star:n={config.workers},gbps={config.gbps:g},latency_us=2")
    if len(topo.workers) != config.workers:
        raise NetweaveError(f"--workers {config.workers} but topology {topo.name!r} has {len(topo.workers)} hosts; "
                            "make them agree")
    net = sim_network(topo)
    t0 = time.perf_counter()
    with stage(f"loading {config.dataset}"):
        g = load_dataset(config.dataset)
    with stage("partitioning"):
        if config.parts_file:
            parts = load_partition(config.parts_file, g.num_nodes, config.workers)
        else:
            parts = partition_by_method(g, config.method, config.workers, None, config.seed)
    dim = config.feature_dim or g.feature_dim or 128
    feature_bytes = 4 * dim
    t1 = time.perf_counter()
    with stage(f"planning {config.strategy}"):
        rel = boundary_relation(g, parts)
        if config.start is not None and not (0 <= config.start < g.num_nodes and rel.send_ptr[config.start + 1] > rel.send_ptr[config.start]):
            raise NetweaveError(f"--start {config.start} is not a boundary vertex (one with a neighbour on another worker)")
        memory, edge_memory = plan_memory(net, rel, config.switch_memory)
        plan = ina_plan(rel, config.strategy, feature_bytes, memory, config.order, config.seed, config.start,
                        edge_memory)
    t2 = time.perf_counter()
    values = np.random.default_rng(config.seed).standard_normal((g.num_nodes, dim)) if config.verify else None
    with stage(f"simulating {plan.num_units:,} messages"):
        report, result = plan_report(rel, plan, net, config.sim, values)
    report = {"dataset": config.dataset, "num_nodes": g.num_nodes, "num_edges": g.num_edges,
              "workers": config.workers, "topology": topo.name, "order": config.order} | report
    report |= {"load_partition_time_s": t1 - t0, "plan_time_s": t2 - t1}
    if values is not None:
        report["verify_max_rel_error"] = _check(g, parts.parts, values, result.sums)
    return report, result


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


def plan_report(rel, plan: InaPlan, net, sim: SimConfig, values: np.ndarray | None = None) -> tuple[dict, SimResult]:
    """Simulate ``plan`` and report it next to the host-based traffic of the same relation."""
    t0 = time.perf_counter()
    result = simulate(plan, net, sim, values)
    host_bytes = host_traffic(rel, plan.feature_bytes).traffic_bytes
    memory = plan.memory_bytes if np.ndim(plan.memory_bytes) == 0 else [int(b) for b in plan.memory_bytes]
    report = {"strategy": plan.strategy, "switch_memory_bytes": memory, "feature_bytes": plan.feature_bytes,
              "cross_edges": rel.num_cross_edges, "boundary_vertices": int(rel.boundary().size),
              "num_blocks": plan.num_blocks, "partition_levels": int(plan.levels.max()) + 1,
              "traffic_bytes": result.traffic_bytes, "host_traffic_bytes": host_bytes,
              "traffic_reduction": 1.0 - result.traffic_bytes / host_bytes if host_bytes else 0.0}
    delivered = result.timeline[:, 1].sum()
    report |= result.summary() | {"aggregated_share": float(result.timeline[:, 2].sum() / delivered) if delivered else 0.0,
                                  "sim_time_s": time.perf_counter() - t0}
    return report, result


def _check(g, parts: np.ndarray, values: np.ndarray, sums: np.ndarray) -> float:
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
