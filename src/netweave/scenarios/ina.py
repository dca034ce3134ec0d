"""SwitchGNN's layer as a scenario: dataset → partition → boundary relation → InaPlan → simulation
(→ numeric check). What ``netweave ina`` and ``sweep`` (kind ``ina``) run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import NetweaveError
from ..sim.layer import LayerReport
from ..graph import Graph
from ..ina.boundary import BoundaryRelation
from ..sim.network import FROM_TOPOLOGY, SimNetwork
from ..sim.simulate import SimConfig, SimResult

if TYPE_CHECKING:
    from ..ina.choose import Choice
from .defaults import feature_bytes, feature_dim


@dataclass(frozen=True, kw_only=True)
class InaScenario:
    """A layer to simulate.

    ``topology`` defaults to ``star:n=WORKERS`` at ``gbps`` with 2 µs links (§6). ``switch_memory``
    :data:`~netweave.sim.network.FROM_TOPOLOGY` takes every switch's ``aggregator_memory`` from the
    topology (100 MB where it gives none), an int (bytes) or a size (``"2MB"``, as on the command
    line) overrides it for every switch, ``None`` or ``"unlimited"`` is unlimited (``straw`` → UL). ``feature_dim`` defaults to the dataset's, else 128. ``verify``
    carries random features and checks the delivered sums against ``A_cross @ X``.

    ``blocking`` (``switchgnn`` only): ``auto`` prices every candidate blocking with and without
    double-buffered blocks, and host-based exchange, on the cost model and runs the cheapest
    (:func:`~netweave.ina.choose.choose_plan`; beyond the paper); ``paper`` is §3.3's multi-level
    METIS blocks with a barrier each; any other of :data:`~netweave.ina.plan.BLOCKINGS` is run as
    given, forwarding the destinations an aggregator cannot help (:mod:`~netweave.ina.forward`),
    double-buffered when ``overlap``.
    """

    dataset: str = "cora"
    workers: int = 8
    topology: str | None = None
    switch_memory: int | str | None = FROM_TOPOLOGY
    strategy: str = "switchgnn"
    blocking: str = "auto"
    overlap: bool = False
    order: str = "gamr"
    feature_dim: int | None = None
    gbps: float = 100.0
    seed: int = 0
    start: int | None = None
    method: str = "metis"
    parts_file: str | None = None
    verify: bool = False
    sim: SimConfig = field(default_factory=SimConfig)

    def __post_init__(self) -> None:
        """A size given as on the command line (``"2MB"``, ``"unlimited"``, ``"topology"``) is held as
        bytes, ``None`` or :data:`~netweave.sim.network.FROM_TOPOLOGY`."""
        from ..sim.layer import parse_switch_memory

        if isinstance(self.switch_memory, str) or isinstance(self.switch_memory, float):
            object.__setattr__(self, "switch_memory", parse_switch_memory(self.switch_memory, "switch_memory"))

    def check(self) -> None:
        from ..ina.orders import ORDERS
        from ..ina.plan import BLOCKINGS, STRATEGIES

        if self.strategy not in STRATEGIES:
            raise NetweaveError(f"unknown strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}")
        if self.blocking != "auto" and self.blocking not in BLOCKINGS:
            raise NetweaveError(f"unknown blocking {self.blocking!r}; use auto or one of {', '.join(BLOCKINGS)}")
        if self.overlap and self.blocking == "auto":
            raise NetweaveError("--overlap goes with an explicit --blocking; --blocking auto tries both")
        if self.order not in ORDERS:
            raise NetweaveError(f"unknown order {self.order!r}; use one of {', '.join(ORDERS)}")
        if self.workers < 2:
            raise NetweaveError(f"--workers {self.workers}: propagation across workers needs at least 2")
        if not np.isfinite(self.gbps):
            raise NetweaveError(f"--gbps {self.gbps} must be a finite number of Gb/s, e.g. --gbps 100")
        if self.gbps <= 0:
            raise NetweaveError(f"--gbps {self.gbps} must be positive")
        if isinstance(self.switch_memory, int) and self.switch_memory < 0:
            raise NetweaveError(f"--switch-memory {self.switch_memory} B must not be negative")
        self.sim.check()

    def inputs_key(self) -> tuple:
        """The fields that :meth:`prepare` depends on."""
        return (self.dataset, self.workers, self.topology, self.gbps, self.method, self.parts_file, self.seed)

    def prepare(self) -> "InaInputs":
        """Topology, graph, partition and boundary relation: what every strategy, order and memory
        of this layer shares (a caller that runs several passes them to :meth:`run`)."""
        from ..graph import load_dataset
        from ..ina import boundary_relation
        from ..partition import load_partition, partition_by_method
        from ..progress import stage
        from ..sim.network import sim_network
        from ..topology import load_topology_spec

        self.check()
        topo = load_topology_spec(self.topology or f"star:n={self.workers},gbps={self.gbps:g},latency_us=2")
        if len(topo.workers) != self.workers:
            raise NetweaveError(f"--workers {self.workers} but topology {topo.name!r} has {len(topo.workers)} hosts; "
                                "make them agree")
        net = sim_network(topo)
        t0 = time.perf_counter()
        with stage(f"loading {self.dataset}"):
            g = load_dataset(self.dataset)
        if self.workers > g.num_nodes:
            raise NetweaveError(f"--workers {self.workers} exceeds the {g.num_nodes} vertices of {self.dataset}; "
                                f"use at most {g.num_nodes} (one partition per worker)")
        with stage("partitioning"):
            if self.parts_file:
                parts = load_partition(self.parts_file, g.num_nodes, self.workers)
            else:
                parts = partition_by_method(g, self.method, self.workers, None, self.seed)
        t1 = time.perf_counter()
        with stage("boundary relation"):
            rel = boundary_relation(g, parts)
        return InaInputs(key=self.inputs_key(), topology_name=topo.name, net=net, graph=g, parts=parts.parts,
                         relation=rel, load_partition_time_s=t1 - t0, relation_time_s=time.perf_counter() - t1)

    def run(self, inputs: "InaInputs | None" = None) -> "InaResult":
        """Plan and simulate; ``inputs`` from :meth:`prepare` of a scenario with the same :meth:`inputs_key`."""
        from ..ina.choose import choose_plan
        from ..ina.plan import ina_plan
        from ..progress import stage
        from ..sim.layer import check_sums, plan_memory, plan_report

        self.check()
        if inputs is None:
            inputs = self.prepare()
        elif inputs.key != self.inputs_key():
            raise ValueError(f"inputs prepared for {inputs.key}, not {self.inputs_key()}")
        g, rel = inputs.graph, inputs.relation
        dim = feature_dim(self.feature_dim, g)
        t1 = time.perf_counter()
        with stage(f"planning {self.strategy}"):
            if self.start is not None and not (0 <= self.start < g.num_nodes
                                               and rel.send_ptr[self.start + 1] > rel.send_ptr[self.start]):
                raise NetweaveError(f"--start {self.start} is not a boundary vertex (one with a neighbour on another worker)")
            memory, edge_memory = plan_memory(inputs.net, rel, self.switch_memory)
            choice = None
            if self.strategy == "switchgnn" and self.blocking == "auto":
                choice = choose_plan(rel, inputs.net, feature_bytes(dim), memory, edge_memory, self.order, self.seed,
                                     self.start)
                plan = choice.plan
            else:  # host, straw, or an explicit blocking (which forwards what gains nothing, beyond the paper)
                plan = ina_plan(rel, self.strategy, feature_bytes(dim), memory, self.order, self.seed, self.start,
                                edge_memory, self.blocking, self.overlap)
        t2 = time.perf_counter()
        values = np.random.default_rng(self.seed).standard_normal((g.num_nodes, dim)) if self.verify else None
        with stage(f"simulating {plan.num_units:,} messages"):
            layer = plan_report(rel, plan, inputs.net, self.sim, values)
        error = None if values is None else check_sums(g, inputs.parts, values, layer.result.sums)
        return InaResult(scenario=self, topology_name=inputs.topology_name, num_nodes=g.num_nodes,
                         num_edges=g.num_edges, layer=layer, load_partition_time_s=inputs.load_partition_time_s,
                         plan_time_s=inputs.relation_time_s + t2 - t1, verify_max_rel_error=error, choice=choice)


@dataclass(frozen=True, kw_only=True, eq=False)
class InaInputs:
    """What :meth:`InaScenario.prepare` returns; ``key`` names the scenario fields they came from.

    Attributes:
        net: the simulator's network of the topology; parts: (N,) worker of each vertex;
        relation: the partition's boundary relation (who needs whose features).
    """

    key: tuple
    topology_name: str
    net: SimNetwork
    graph: Graph
    parts: np.ndarray
    relation: BoundaryRelation
    load_partition_time_s: float
    relation_time_s: float


@dataclass(frozen=True, kw_only=True, eq=False)
class InaResult:
    """A simulated layer: ``layer`` holds the plan, the simulator's result and the host baseline;
    ``verify_max_rel_error`` is set when the scenario verified the sums; ``choice`` holds every
    candidate the cost model priced when ``blocking`` was ``auto``."""

    scenario: InaScenario
    topology_name: str
    num_nodes: int
    num_edges: int
    layer: LayerReport
    load_partition_time_s: float
    plan_time_s: float  # the boundary relation and the plan
    verify_max_rel_error: float | None = None
    choice: "Choice | None" = None

    @property
    def sim(self) -> SimResult:
        return self.layer.result

    def summary(self) -> dict:
        """The JSON report of ``netweave ina`` (units in key names)."""
        s = self.scenario
        out = {"dataset": s.dataset, "num_nodes": self.num_nodes, "num_edges": self.num_edges, "workers": s.workers,
               "topology": self.topology_name, "order": s.order, **self.layer.summary(),
               "load_partition_time_s": self.load_partition_time_s, "plan_time_s": self.plan_time_s}
        out["strategy"] = s.strategy  # a switchgnn layer stays switchgnn when its choice was host exchange
        if s.strategy == "switchgnn":
            out |= {"blocking": s.blocking, "overlap": self.layer.plan.overlap}
        if self.choice is not None:
            out |= {"choice": self.choice.summary()}
        if self.verify_max_rel_error is not None:
            out["verify_max_rel_error"] = self.verify_max_rel_error
        return out


@dataclass(frozen=True, kw_only=True)
class TimeslotScenario:
    """SwitchGNN's time-slot model (§3.2.1, eqs. 3–6) of one switch aggregating ``dataset``: every
    vertex's aggregator needs its neighbours; vertices arrive in ``order`` (gamr or random), ``k`` per slot.
    What ``netweave timeslot`` runs."""

    dataset: str = "cora"
    order: str = "gamr"
    k: int = 1
    seed: int = 0
    start: int | None = None

    def run(self) -> "TimeslotResult":
        from ..graph import load_dataset
        from ..ina import gamr_order, graph_timeslot

        if self.k < 1:
            raise NetweaveError(f"--k {self.k} must be at least 1")
        g = load_dataset(self.dataset)
        t0 = time.perf_counter()
        if self.order == "gamr":
            seq = gamr_order(g.indptr, g.indices, start=self.start)
        else:
            seq = np.random.default_rng(self.seed).permutation(g.num_nodes)
        t1 = time.perf_counter()
        r = graph_timeslot(g.indptr, g.indices, seq, self.k)
        return TimeslotResult(scenario=self, num_nodes=g.num_nodes, z=r.z, f=r.f, Q=r.Q,
                              order_time_s=t1 - t0, model_time_s=time.perf_counter() - t1)


@dataclass(frozen=True, kw_only=True, eq=False)
class TimeslotResult:
    """The model's completion slot ``z``, vertices arriving per slot ``f`` and queue ``Q`` per slot."""

    scenario: TimeslotScenario
    num_nodes: int
    z: int
    f: np.ndarray
    Q: np.ndarray
    order_time_s: float
    model_time_s: float

    def summary(self) -> dict:
        """The JSON report of ``netweave timeslot``."""
        s, slots = self.scenario, self.f.size
        return {"dataset": s.dataset, "num_nodes": self.num_nodes, "order": s.order, "k": s.k, "z": self.z,
                "arrival_slots": slots, "drain_slots": self.z - slots, "max_queue": int(self.Q.max(initial=0)),
                "mean_queue": float(self.Q.mean()) if slots else 0.0,
                "output_busy_share": float(self.f.sum() / (s.k * self.z)) if self.z else 0.0,
                "order_time_s": self.order_time_s, "model_time_s": self.model_time_s}
