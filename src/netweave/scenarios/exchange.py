"""DGCL's graph allgather as a scenario: dataset → partition → relation → P2P / SPST plan → cost.

What ``netweave plan`` runs and what ``compare``'s exchange section shows. The planner is DGCL's
SPST (Algorithms 1–2) or P2P; the cost model is the commands' default α–β or the paper's §5.1
(``netweave.plan.cost``), and SPST's P2P guard compares on it. The α–β constants are the
transport's (``netweave.plan.transport``): ``nccl`` on a topology of GPUs, ``gloo`` on one of
hosts, unless ``transport`` names one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import NetweaveError
from ..graph import Graph
from ..partition import CommRelation
from ..plan import GraphCommPlan, PlanCost, WorkerLinks
from ..plan.cost import DEFAULT_COST_MODEL, DGCL_MODEL
from ..plan.transport import Transport
from .defaults import feature_bytes, feature_dim

PLANNERS = ("p2p", "spst")


@dataclass(frozen=True, kw_only=True)
class ExchangeScenario:
    """One graph allgather to plan and cost.

    Attributes:
        dataset: dataset spec; topology: topology spec (its workers are the parts, in rank order).
        planner: ``spst`` or ``p2p``; cost_model: ``alpha-beta`` or ``dgcl``.
        transport: whose α–β constants: ``gloo``, ``nccl``, or None for the topology's (GPU
            workers: nccl, hosts: gloo).
        feature_dim: float32 values per embedding (default: the dataset's, else 128).
        method: partitioner when no ``parts_file``; parts: must equal the topology's workers (the default).
        seed: seed of the partitioner and SPST's vertex order.
    """

    dataset: str = "cora"
    topology: str = "dgx1"
    planner: str = "spst"
    cost_model: str = DEFAULT_COST_MODEL
    transport: str | None = None
    feature_dim: int | None = None
    method: str = "metis"
    parts: int | None = None
    parts_file: str | None = None
    seed: int = 0

    def check(self) -> None:
        """Reject an unknown planner, cost model or transport with one line."""
        from ..plan.cost import cost_model
        from ..plan.transport import transport

        if self.planner not in PLANNERS:
            raise NetweaveError(f"unknown planner {self.planner!r}; use one of {', '.join(PLANNERS)}")
        cost_model(self.cost_model)
        if self.transport is not None:
            transport(self.transport)

    def prepare(self, graph: Graph | None = None) -> "ExchangeInputs":
        """Load, partition and relate: the inputs every planner and cost model of this scenario
        shares (a caller that runs several planners or models passes them to :meth:`run`);
        ``graph``: the dataset, when the caller has already loaded it."""
        from ..graph import load_dataset
        from ..partition import comm_relation, load_partition, partition_by_method
        from ..plan import worker_links
        from ..plan.transport import transport_for
        from ..topology import load_topology_spec

        topo = load_topology_spec(self.topology)
        graph = graph if graph is not None else load_dataset(self.dataset)
        if len(topo.workers) > graph.num_nodes:
            raise NetweaveError(f"topology {topo.name} has {len(topo.workers)} workers, more than the {graph.num_nodes} "
                                f"vertices of {self.dataset}; use a topology with at most {graph.num_nodes} workers")
        links = worker_links(topo)
        t0 = time.perf_counter()
        if self.parts_file is not None:
            parts = load_partition(self.parts_file, graph.num_nodes, links.num_workers)
        else:
            parts = partition_by_method(graph, self.method, self.parts, topo, self.seed)
        comm = comm_relation(graph, parts)
        return ExchangeInputs(key=self.inputs_key(), graph=graph, topology_name=topo.name, links=links, comm=comm,
                              partition_time_s=time.perf_counter() - t0, topology_transport=transport_for(topo))

    def inputs_key(self) -> tuple:
        """The fields that :meth:`prepare` depends on."""
        return (self.dataset, self.topology, self.method, self.parts, self.parts_file, self.seed)

    def run(self, inputs: "ExchangeInputs | None" = None) -> "ExchangeResult":
        """Plan and cost; ``inputs`` from :meth:`prepare` of a scenario with the same :meth:`inputs_key`."""
        from ..plan import p2p_plan, plan_cost, spst_plan
        from ..plan.cost import alpha_beta, cost_model
        from ..plan.transport import transport

        self.check()
        if inputs is None:
            inputs = self.prepare()
        elif inputs.key != self.inputs_key():
            raise ValueError(f"inputs prepared for {inputs.key}, not {self.inputs_key()}")
        carrier = inputs.topology_transport if self.transport is None else transport(self.transport)
        model = cost_model(self.cost_model, carrier)
        links, comm = inputs.links, inputs.comm
        fb = feature_bytes(feature_dim(self.feature_dim, inputs.graph))
        t1 = time.perf_counter()
        direct = p2p_plan(comm, links, fb) if links.complete else None
        t2 = time.perf_counter()
        if self.planner == "spst":
            plan = spst_plan(comm, links, fb, self.seed, model=model)
        elif direct is None:
            raise NetweaveError(f"p2p needs a logical link between every pair of workers of {inputs.topology_name}; "
                                "use --planner spst")
        else:
            plan = direct
        t3 = time.perf_counter()
        costs = {name: plan_cost(plan, links, m) for name, m in (("alpha-beta", alpha_beta(carrier)),
                                                                  ("dgcl", DGCL_MODEL))}
        return ExchangeResult(
            scenario=self, topology_name=inputs.topology_name, plan=plan, links=links, cost=costs[model.name],
            transport=carrier,
            p2p=direct, p2p_cost=None if direct is None else plan_cost(direct, links, model),
            time_by_model_s={name: c.total_s for name, c in costs.items()},
            partition_time_s=inputs.partition_time_s,
            planning_time_s=(t3 - t2) if self.planner == "spst" else (t2 - t1))


@dataclass(frozen=True, kw_only=True, eq=False)
class ExchangeInputs:
    """What :meth:`ExchangeScenario.prepare` returns: the graph, the topology's logical links and
    the partition's communication relation; ``key`` names the scenario fields they came from."""

    key: tuple
    graph: Graph
    topology_name: str
    links: WorkerLinks
    comm: CommRelation
    partition_time_s: float
    topology_transport: Transport


@dataclass(frozen=True, kw_only=True)
class ExchangeResult:
    """A planned and costed exchange.

    Attributes:
        plan: the plan (its ``.save`` writes the plan ``.npz`` of docs/formats.md); links: the topology's logical links.
        cost: the plan's cost on the scenario's model; p2p, p2p_cost: the P2P plan and its cost on the
            same model (None when some pair of workers has no logical link).
        time_by_model_s: the plan's predicted seconds under every cost model, by name.
        transport: whose constants the α–β model used (reported even under §5.1, which has none).
    """

    scenario: ExchangeScenario
    topology_name: str
    plan: GraphCommPlan
    links: object
    cost: PlanCost
    transport: Transport
    p2p: GraphCommPlan | None
    p2p_cost: PlanCost | None
    time_by_model_s: dict[str, float] = field(default_factory=dict)
    partition_time_s: float = 0.0
    planning_time_s: float = 0.0

    @property
    def speedup_vs_p2p(self) -> float | None:
        """P2P's predicted time over the plan's (> 1: the plan is faster)."""
        if self.p2p_cost is None or self.cost.total_s <= 0:
            return None
        return self.p2p_cost.total_s / self.cost.total_s

    def summary(self) -> dict:
        """The JSON report of ``netweave plan`` (units in key names)."""
        s, links = self.scenario, self.links
        per_link, per_hop = self.cost.link_bytes.sum(axis=0), self.cost.hop_bytes.sum(axis=0)
        return {
            "dataset": s.dataset, "topology": self.topology_name, "planner": s.planner,
            "num_workers": links.num_workers, "feature_bytes": self.plan.feature_bytes,
            "num_hops": self.plan.num_hops, "num_stages": self.plan.num_stages, "cost_model": self.cost.model,
            "transport": self.transport.name, "transport_constants": self.transport.constants(),
            "transport_source": self.transport.source, "predicted_time_s": self.cost.total_s,
            **{f"{name.replace('-', '_')}_predicted_time_s": t for name, t in self.time_by_model_s.items()},
            "stage_times_s": self.cost.stage_times_s.tolist(),
            "p2p_predicted_time_s": None if self.p2p_cost is None else self.p2p_cost.total_s,
            "speedup_vs_p2p": self.speedup_vs_p2p, "total_bytes": int(per_link.sum()),
            "bytes_per_link_class": links.bytes_by_class(per_link),
            "p2p_bytes_per_link_class": None if self.p2p_cost is None else links.bytes_by_class(self.p2p_cost.link_bytes),
            "bytes_per_link": {links.link_name(l): int(b) for l, b in enumerate(per_link) if b},
            "bytes_per_hop": {links.hop_names[h]: int(b) for h, b in enumerate(per_hop) if b},
            "planning_time_s": self.planning_time_s, "partition_time_s": self.partition_time_s,
        }


@dataclass(frozen=True, kw_only=True)
class PlanCheck:
    """Validate a saved plan (``netweave plan --validate``): on its own, and against the partition
    of ``dataset`` it was made for and the workers of ``topology`` when they are given."""

    plan_file: str
    dataset: str | None = None
    topology: str | None = None

    def run(self) -> "PlanCheckResult":
        from ..graph import load_dataset
        from ..partition import Partition, comm_relation
        from ..plan import load_plan, validate_plan, worker_links
        from ..topology import load_topology_spec

        saved = load_plan(self.plan_file)
        comm = links = None
        if self.dataset is not None:
            graph = load_dataset(self.dataset)
            parts = Partition(saved.parts, saved.num_workers, "plan")
            parts.check_matches(graph.num_nodes, self.plan_file)
            comm = comm_relation(graph, parts)
        if self.topology is not None:
            links = worker_links(load_topology_spec(self.topology))
            if links.workers != saved.workers:
                raise NetweaveError(f"{self.plan_file} was planned for workers {list(saved.workers)[:4]}…, "
                                    f"not {self.topology}'s")
        validate_plan(saved, comm, links)  # raises with the first problem
        return PlanCheckResult(check=self, plan=saved)


@dataclass(frozen=True, kw_only=True)
class PlanCheckResult:
    """A plan that passed :class:`PlanCheck`."""

    check: PlanCheck
    plan: GraphCommPlan

    def summary(self) -> dict:
        return {"valid": True, "plan": self.check.plan_file, "planner": self.plan.planner,
                "num_hops": self.plan.num_hops, "num_stages": self.plan.num_stages,
                "checked_against_dataset": self.check.dataset is not None,
                "checked_against_topology": self.check.topology is not None}
