"""The emulated cluster as scenarios (:mod:`netweave.testbed`): a cluster alone (``testbed up``),
data-parallel training through in-network aggregation (``testbed train``) and GCN training through
the SwitchGNN exchange (``testbed gnn``). Each checks its settings here, once, before anything is
created."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NetweaveError


@dataclass(frozen=True, kw_only=True)
class ClusterScenario:
    """``topology`` (spec or YAML) with every link rate × ``scale``; ``routes_file``: a routes JSON
    whose per-worker paths are pinned (default: shortest paths)."""

    topology: str
    scale: float = 0.01
    routes_file: str | None = None

    def plan(self):
        """The :class:`~netweave.testbed.ClusterPlan` (pure: nothing is created)."""
        from ..route.plan import read_routes_tasks
        from ..testbed import plan_cluster
        from ..topology import load_topology_spec

        topo = load_topology_spec(self.topology)
        routes = None if self.routes_file is None else read_routes_tasks(self.routes_file)
        return plan_cluster(topo, self.scale, routes)

    def up(self) -> "ClusterResult":
        """Create the cluster and leave it for ``netweave testbed down``."""
        from ..testbed.net.lifecycle import create

        plan = self.plan()
        create(plan, keep=True)
        return ClusterResult(scenario=self, plan=plan)


@dataclass(frozen=True, kw_only=True, eq=False)
class ClusterResult:
    """A cluster that exists: its plan (names, addresses, shaping, routes)."""

    scenario: ClusterScenario
    plan: object

    @property
    def prefix(self) -> str:
        return self.plan.prefix

    def summary(self) -> dict:
        p = self.plan
        return {"prefix": p.prefix, "topology": p.topology.name, "scale": p.scale, "namespaces": len(p.namespace),
                "links": len(p.topology.links), "pinned_flows": len(p.flows),
                "addresses": dict(sorted(p.address.items())), "down": "netweave testbed down"}


@dataclass(frozen=True, kw_only=True)
class TestbedTrainScenario:
    """Data-parallel training through in-network aggregation on an emulated cluster (``netweave
    testbed train``): what runs, checked here once (every bad value is one line, before anything
    is created), then :func:`netweave.testbed.agg.train`.

    ``workers`` and ``precisions`` (``fp8:2,fp16:2``) say who trains: two fp8 workers and the rest
    fp16 (PAHInA §VI-B) unless ``precisions`` says otherwise; ``topology`` defaults to
    ``star:n=WORKERS+1`` (its first host is the PS). The rest are :class:`~netweave.testbed.agg.TrainRun`'s.
    """

    __test__ = False

    workers: int | None = None
    precisions: str | None = None
    routing: str = "pahina"
    dataplane: str = "xdp"
    topology: str | None = None
    model: str = "lenet5"
    data: str = "digits"
    epochs: int = 5
    steps: int | None = None
    scale: float = 0.1
    batch: int = 64
    switch_gbps: float = 100.0
    lr: float = 0.05
    seed: int = 0
    timeout_s: float = 60.0
    eval_samples: int | None = None
    mode: str = "stream"

    def worker_precisions(self) -> list[str]:
        """One precision per worker, from ``workers`` and ``precisions`` (checked)."""
        from ..route.jobs import parse_precision_mix

        n = self.workers
        if n is not None and n < 1:
            raise NetweaveError(f"--workers {n}: give at least 1")
        default = "fp8:2,fp16:2" if n is None else f"fp8:{min(2, n)},fp16:{max(0, n - 2)}"
        counts = parse_precision_mix(self.precisions or default)
        if any(v != int(v) for v in counts.values()):
            raise NetweaveError(f"--precisions {self.precisions}: give whole worker counts, e.g. fp8:2,fp16:2")
        if self.steps is not None and self.steps < 1:
            raise NetweaveError(f"--steps {self.steps}: give at least 1")
        workers = [p for p, k in counts.items() for _ in range(int(k))]
        if n is not None and len(workers) != n:
            raise NetweaveError(f"--precisions {self.precisions} gives {len(workers)} workers, --workers {n}: "
                                "make them agree (or give only one of them)")
        return workers

    def prepare(self):
        """The checked :class:`~netweave.testbed.agg.TrainRun` (nothing is created)."""
        from ..testbed.agg import SCHEMES, TrainRun
        from ..testbed.agg.data import DATASETS
        from ..testbed.agg.models import MODELS
        from ..topology import load_topology_spec

        precisions = self.worker_precisions()
        for ok, message in [
            (self.routing in SCHEMES, f"--routing {self.routing!r}: use one of {', '.join(SCHEMES)}"),
            (self.model in MODELS, f"--model {self.model!r}: use one of {', '.join(MODELS)}"),
            (self.data in DATASETS, f"--data {self.data!r}: use one of {', '.join(DATASETS)}"),
            (self.dataplane in ("xdp", "user"), f"--dataplane {self.dataplane!r}: use xdp or user"),
            (self.mode in ("stream", "ps"), f"--mode {self.mode!r}: use stream or ps"),
            (bool(precisions) and all(p in ("fp8", "fp16", "fp32") for p in precisions),
             "--precisions: give each worker fp8, fp16 or fp32"),
            (self.batch % max(len(precisions), 1) == 0,
             f"--batch {self.batch} must be a multiple of the {len(precisions)} workers"),
        ]:
            if not ok:
                raise NetweaveError(message)
        topo = load_topology_spec(self.topology or f"star:n={len(precisions) + 1}")
        return TrainRun(topology=topo, precisions=tuple(precisions), routing=self.routing, dataplane=self.dataplane,
                        model=self.model, data=self.data, epochs=self.epochs, steps=self.steps, scale=self.scale,
                        batch=self.batch, lr=self.lr, seed=self.seed, switch_gbps=self.switch_gbps,
                        timeout_s=self.timeout_s, eval_samples=self.eval_samples, mode=self.mode)

    def run(self, on_epoch=None) -> "TestbedTrainResult":
        """Train (as root); ``on_epoch(record)`` after every epoch."""
        from ..testbed.agg import train

        run = self.prepare()
        return TestbedTrainResult(scenario=self, run=train(run, on_epoch), precisions=list(run.precisions))


@dataclass(frozen=True, kw_only=True, eq=False)
class TestbedTrainResult:
    """A training run on the testbed: its epochs, the PS's final line, the switches' counters and
    the placement (:class:`~netweave.testbed.agg.TestbedRun`)."""

    scenario: TestbedTrainScenario
    run: object
    precisions: list[str]

    def cpu_bound_epochs(self) -> list[int]:
        """The epochs after the first (which starts every process) that the CPUs, not the links,
        bound (:mod:`netweave.testbed.net.accounting`)."""
        return [e["epoch"] for e in self.run.epochs[1:] if e.get("bound") == "cpu"]

    def network_bound_scale(self) -> float | None:
        """After CPU-bound epochs, a ``--scale`` at which they would have been network-bound
        (:func:`netweave.testbed.net.accounting.scale_to_bind` of the least busy link share)."""
        from ..testbed.net.accounting import scale_to_bind

        shares = [e["busiest_link_busy"] for e in self.run.epochs[1:] if e.get("bound") == "cpu"]
        return scale_to_bind(self.scenario.scale, min(shares)) if shares else None

    def summary(self) -> dict:
        s, r = self.scenario, self.run
        return {"workers": self.precisions, "routing": s.routing, "dataplane": s.dataplane if r.agents else None,
                "mode": s.mode if s.routing not in ("ring", "ps") else None,
                "scale": s.scale, "model": s.model, "data": s.data, **(r.plan.summary() if r.plan else {}),
                **r.summary, "network_bound_scale": self.network_bound_scale(), "epochs": r.epochs,
                "switches": r.agents}


@dataclass(frozen=True, kw_only=True)
class TestbedGnnScenario:
    """Full-graph GCN training whose embedding exchange goes through the emulated SwitchGNN switch
    (``exchange="ina"``) or peer to peer (``"p2p"``) on ``star:n=WORKERS`` with every link at
    ``gbps`` (``netweave testbed gnn``); ``memory`` is the switch's aggregator memory (``2MB``, or
    bytes); ``dataplane`` the switch's: ``auto`` (the kernel's where libbpf is and its programs
    are compiled or clang can compile them), ``xdp`` (tc-BPF in the kernel) or ``user`` (the
    userspace agent, the reference); ``overlap`` double-buffers the blocks (kernel data plane);
    ``check`` also trains in one process and reports the largest logit difference;
    ``congestion_control`` turns on §3.4's ECN-driven rates (the
    switch marks at ``ecn_kb`` KB of queue; kernel data plane); ``background`` adds Poisson flows of
    Hadoop sizes between the hosts at that fraction of the link rate (§6.5); ``switch_buffer_kb``
    bounds every switch port's queue (0: 10,000 packets); ``fast_pull`` pulls what is missing once
    every worker's END of a block came (False: §3.4's timer alone); ``transform_first`` exchanges
    ``h W`` where a layer narrows, PyG ``GCNConv``'s order (False: the layer's input ``h``);
    ``pin_switch`` runs the kernel data plane on one CPU (False: wherever a packet arrives);
    ``switch_cpus`` spreads its aggregators over that many CPUs, the last ones (0: one for each
    CPU the workers leave free, up to 8); ``isolate_switch`` runs the workers and the agent on the
    CPUs the switch's shards leave free when those are one a worker or more (False: any CPU);
    ``overlap_local`` sums each worker's own neighbours' rows while its exchange is on the wire
    (False: after it); ``column_slices`` sends INA's rows as that many column slices, each slice's
    sums coming down while the next goes up (1: whole rows; 0: through the kernel data plane 2
    where a model of the plan says the sums come down sooner, else 1; whole rows through the
    userspace agent)."""

    __test__ = False

    dataset: str
    workers: int = 4
    exchange: str = "ina"
    memory: str | int = "2MB"
    gbps: float = 1.0
    epochs: int = 3
    hidden: int = 16
    layers: int = 2
    blocking: str = "paper"
    dataplane: str = "auto"
    overlap: bool = False
    check: bool = True
    seed: int = 0
    congestion_control: bool = False
    ecn_kb: float = 64.0
    background: float = 0.0
    switch_buffer_kb: float = 0.0
    fast_pull: bool = True
    transform_first: bool = True
    pin_switch: bool = True
    switch_cpus: int = 0
    isolate_switch: bool = True
    overlap_local: bool = True
    column_slices: int = 0

    @property
    def memory_bytes(self) -> int:
        from ..topology.yaml_io import parse_bytes

        return parse_bytes(self.memory, "--memory")

    def run(self) -> "TestbedGnnResult":
        """Train (as root)."""
        from ..testbed.gnn import train_gnn_on_testbed
        from ..testbed.gnn.launch import DATAPLANES

        if self.workers < 2:
            raise NetweaveError(f"--workers {self.workers}: give at least 2")
        if self.dataplane not in DATAPLANES:
            raise NetweaveError(f"--dataplane {self.dataplane!r}: use auto, xdp or user")
        if self.overlap and self.dataplane == "user":
            raise NetweaveError("--overlap: overlapped blocks need the kernel data plane (--dataplane auto or xdp)")
        if self.congestion_control and (self.dataplane == "user" or self.exchange != "ina"):
            raise NetweaveError("--congestion-control: the ECN-driven rates need the kernel data plane (--exchange ina, "
                                "--dataplane auto or xdp)")
        return TestbedGnnResult(scenario=self, run=train_gnn_on_testbed(
            self.dataset, workers=self.workers, exchange=self.exchange, memory_bytes=self.memory_bytes, gbps=self.gbps,
            epochs=self.epochs, hidden=self.hidden, layers=self.layers, seed=self.seed, blocking=self.blocking,
            dataplane=self.dataplane, overlap=self.overlap, check=self.check,
            congestion_control=self.congestion_control, ecn_kb=self.ecn_kb, background=self.background,
            switch_buffer_kb=self.switch_buffer_kb, fast_pull=self.fast_pull, transform_first=self.transform_first,
            pin_switch=self.pin_switch, switch_cpus=self.switch_cpus, isolate_switch=self.isolate_switch,
            overlap_local=self.overlap_local, column_slices=self.column_slices))


@dataclass(frozen=True, kw_only=True, eq=False)
class TestbedGnnResult:
    """A GCN run on the testbed (:class:`~netweave.testbed.gnn.GnnTestbedRun`: epochs, the switch's
    and the veths' counters, the logits check)."""

    scenario: TestbedGnnScenario
    run: object

    def summary(self) -> dict:
        s = self.scenario
        return {"dataset": s.dataset, "workers": s.workers, "memory_bytes": s.memory_bytes, "gbps": s.gbps,
                "transform_first": s.transform_first, "overlap_local": s.overlap_local,
                "column_slices": s.column_slices,
                **self.run.summary()}
