"""``netweave compare``: every strategy netweave has for each communication problem, next to its
baseline, measured in one run (issue 9).

Sections (each a list of rows; a section whose optional dependency is missing is skipped with one line):
1. **exchange** — DGCL: the graph allgather of DATASET on the GPU server ``--topology`` (``dgx1``), P2P vs
   SPST, predicted time and bytes per link class (NVLink, PCIe-QPI-PCIe …) under the α–β cost model
   with the topology's transport (NCCL's constants on GPUs, gloo's measured ones on hosts;
   ``transport`` overrides) and under DGCL's §5.1.
2. **ina** — SwitchGNN: one layer through an INA switch whose aggregators cannot hold it (the paper's
   regime), host vs strawman vs SwitchGNN; DATASET when given (else a Reddit-like graph), on
   ``--topology`` when it is a star or leaf-spine of hosts (else a star of 32 hosts).
3. **routing** — ARO: gradient aggregation, PS / ECMP / GRID / AggTree / ARO, in ``--topology`` when its
   switches aggregate (else an 8x8 leaf-spine); the graph plays no part.
4. **precision** — PAHInA: precision-heterogeneous aggregation, PS / ATP / GRID / PAHInA training time, in
   ``--topology`` when its switches aggregate (else a k=8 fat-tree); the graph plays no part.
5. **training** — a real distributed run of DATASET (4 workers on this machine, SPST plan against the
   all-reduce baseline) for the recipe's epochs, with its convergence, accuracy, bytes and the epoch
   time's median and interquartile range (needs torch); the GPUs of ``--topology`` play no part.

Every section says which of DATASET and ``--topology`` it used, and why not where it could not
(:attr:`~netweave.report.section.Section.inputs`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import NetweaveError
from .report.section import PaperFigure, Section

# The papers' figures behind the sections (their values, drawn as ratios to the reference row)
SWITCHGNN_FIG18 = PaperFigure("SwitchGNN §6.4 / Fig. 18: Reddit, 128 workers, 100 MB (81 % less traffic)",
                              "traffic_MB", {"host": 1.0, "switchgnn": 0.19}, relative_to="host")
ARO_FIG7A = PaperFigure("ARO Fig. 7a: 24x24 leaf-spine, 200 workers", "rate_gbps",
                        {"ecmp": 7.92, "grid": 1.75, "aggtree": 8.76, "aro": 26.33}, relative_to="aro")
PAHINA_FIG9 = PaperFigure("PAHInA §VI-C / Fig. 9: 100 workers (−87.9 / −72.2 / −32.9 % vs PS / ATP / GRID)",
                          "training_time_s", {"ps": 1.0, "atp": 0.121 / 0.278, "grid": 0.121 / 0.671, "pahina": 0.121},
                          relative_to="ps")


DEFAULT_DATASET = "cora"  # the exchange and training sections' graph when no DATASET is given
# SwitchGNN's regime (§6): a Reddit-like graph (602 features) whose layer does not fit the switch, at
# 1 % of Reddit and 32 hosts so that it simulates in seconds (the ina section's graph without DATASET)
DEFAULT_INA_DATASET = "reddit-like:scale=0.01"
DEFAULT_ROUTING_TOPOLOGY = "leafspine:leaves=8,spines=8,hosts=8,ina=0.3,pipelines=4,seed=1"
DEFAULT_PRECISION_TOPOLOGY = "fattree:k=8,ina=0.05,seed=1,gbps=10"


@dataclass(frozen=True)
class CompareConfig:
    """What ``netweave compare`` runs. ``dataset`` (DATASET) and ``topology`` (``--topology``) are the
    user's; every section takes them where it can (module docstring). The ``ina_*``, ``routing_*`` and
    ``precision_*`` fields override what a section uses in their place (``None``: the user's when it
    fits, else the section's default). ``epochs``: the training recipe's (GCN, Kipf & Welling: 200)."""

    dataset: str | None = None
    topology: str = "dgx1"
    ina_dataset: str | None = None
    ina_topology: str | None = None
    ina_workers: int = 32
    switch_memory: int = 2_000_000
    routing_topology: str | None = None
    routing_workers: int = 40
    precision_topology: str | None = None
    precision_workers: int = 50
    train_workers: int = 4
    epochs: int = 200
    seed: int = 0
    sections: tuple[str, ...] = ("exchange", "ina", "routing", "precision", "training")
    transport: str | None = None  # the exchange section's α–β constants (None: the topology's)

    @property
    def graph(self) -> str:
        """The dataset of the exchange and training sections."""
        return self.dataset or DEFAULT_DATASET

    def check(self) -> None:
        """Refuse, with one line and before any section runs, what some section would refuse later:
        no, unknown or repeated sections, and counts below what a section needs."""
        known = CompareConfig.sections
        if not self.sections:
            raise NetweaveError(f"no section given; choose from {', '.join(known)} (comma-separated)")
        unknown = [s for s in self.sections if s not in known]
        if unknown:
            raise NetweaveError(f"unknown section {', '.join(sorted(set(unknown)))}; choose from {', '.join(known)}")
        repeated = sorted({s for s in self.sections if self.sections.count(s) > 1})
        if repeated:
            raise NetweaveError(f"section {repeated[0]} given twice in --sections; name each once")
        rules = [(self.epochs >= 1, f"--epochs {self.epochs} must be at least 1"),
                 (self.train_workers >= 1, f"train_workers {self.train_workers} must be at least 1"),
                 (self.ina_workers >= 2, f"ina_workers {self.ina_workers} must be at least 2"),
                 (self.routing_workers >= 1, f"routing_workers {self.routing_workers} must be at least 1"),
                 (self.precision_workers >= 1, f"precision_workers {self.precision_workers} must be at least 1"),
                 (self.switch_memory >= 0, f"switch_memory {self.switch_memory} B must not be negative")]
        for ok, message in rules:
            if not ok:
                raise NetweaveError(message)


def _preflight(c: CompareConfig):
    """What the user chose, loaded once before any section runs, so that a bad topology or dataset
    (or one that cannot be trained on) fails in one line at once, not after minutes of other
    sections; returns the dataset's graph (None when no section needs it) and the topology (None when
    no section looks at it) for the sections to share."""
    from .graph import load_dataset
    from .topology import load_topology_spec

    topo = load_topology_spec(c.topology)
    if "exchange" not in c.sections and "training" not in c.sections:
        if c.dataset is not None and "ina" in c.sections:
            load_dataset(c.dataset)  # the ina section's graph: a bad one fails now, not after the others
        return None, topo
    graph = load_dataset(c.graph)
    if "training" in c.sections and _training_skipped() is None:
        from .runtime.job import check_trainable

        check_trainable(graph, c.graph)
        if graph.num_nodes < c.train_workers:
            raise NetweaveError(f"{c.graph} has {graph.num_nodes} vertices, fewer than the training section's "
                                f"{c.train_workers} workers; use a larger dataset")
    return graph, topo


def _simulable(topo) -> bool:
    """The switch simulator takes ``topo``: hosts on a star or a leaf-spine."""
    from .sim.network import sim_network

    try:
        sim_network(topo)
    except NetweaveError:
        return False
    return True


def _aggregating(topo) -> bool:
    """Gradient aggregation can be routed in ``topo``: its workers are hosts and some switch aggregates."""
    return bool(topo.workers) and all(topo.node(w).kind == "host" for w in topo.workers) and \
        any(n.kind == "switch" and n.ina for n in topo.nodes)


def _kind(topo) -> str:
    gpus = sum(topo.node(w).kind == "gpu" for w in topo.workers)
    return f"a GPU server ({gpus} GPUs)" if gpus else f"a network of {len(topo.workers)} hosts"


def _training_skipped() -> str | None:
    """Why the training section is skipped (torch or PyG missing), or None."""
    try:
        import torch  # noqa: F401
        import torch_geometric  # noqa: F401
    except ImportError as exc:
        return f"skipped: training needs torch ({exc.name} is missing); enable it with pip install -e '.[train]'"
    return None


def exchange(c: CompareConfig, graph=None) -> Section:
    from .plan.cost import DEFAULT_COST_MODEL, DGCL_MODEL
    from .scenarios import ExchangeScenario

    scenarios = [ExchangeScenario(dataset=c.graph, topology=c.topology, cost_model=model, seed=c.seed,
                                  transport=c.transport)
                 for model in (DEFAULT_COST_MODEL, DGCL_MODEL.name)]  # the default first, then the paper's §5.1
    inputs = scenarios[0].prepare(graph)
    results = [sc.run(inputs) for sc in scenarios]
    links, carrier = results[0].links, results[0].transport
    plans = [(r, name, plan, cost) for r in results
             for name, plan, cost in (("p2p", r.p2p, r.p2p_cost), ("spst", r.plan, r.cost)) if plan is not None]
    classes = list(dict.fromkeys(k for *_, cost in plans for k in links.bytes_by_class(cost.link_bytes)))
    class_columns = tuple(f"{k}_MB" for k in classes)
    s = Section(name="exchange", title=f"Embedding exchange (DGCL) of {c.graph} on {results[0].topology_name}, "
                                       f"{results[0].plan.feature_bytes} B per embedding; α–β on the {carrier.name} "
                                       "transport; bytes per link class",
                columns=("planner", "cost_model", "predicted_time_ms", "stages", *class_columns, "total_MB", "speedup"),
                baseline="p2p", metrics=("predicted_time_ms", *class_columns),
                inputs=f"graph {c.graph} ({'DATASET' if c.dataset else 'the default: no DATASET given'}); "
                       f"topology {c.topology} (--topology)")
    for r, name, plan, cost in plans:
        by_class = links.bytes_by_class(cost.link_bytes)
        s.rows.append({"planner": name, "cost_model": cost.model, "predicted_time_ms": cost.total_s * 1e3,
                       "stages": plan.num_stages, **{f"{k}_MB": by_class.get(k, 0) / 1e6 for k in classes},
                       "total_MB": float(cost.link_bytes.sum()) / 1e6,
                       "speedup": (r.p2p_cost.total_s / cost.total_s) if r.p2p_cost is not None and cost.total_s > 0
                       else None})
    ab, paper = (next((row for row in s.rows if row["planner"] == "spst" and row["cost_model"] == m), {})
                 for m in (DEFAULT_COST_MODEL, DGCL_MODEL.name))
    constants = (f"α = {_us(carrier.stage_overhead_s)} per stage, ℓ = {_us(carrier.message_latency_s)} per message, "
                 f"o = {_us(carrier.message_overhead_s)} per message of the busiest rank, η = {carrier.bandwidth_efficiency:g}")
    s.note = (f"SPST relays embeddings over the fast links so that fewer bytes cross the slow ones: each link-class "
              f"panel compares the bytes P2P and SPST put on that class. Under DGCL's bandwidth-only §5.1 SPST is "
              f"{_times(paper.get('speedup'))} P2P's speed; under the α–β model with the {carrier.name} transport "
              f"({constants}) every stage has a price, SPST keeps {ab.get('stages', '–')} stage(s) and is "
              f"{_times(ab.get('speedup'))} P2P's speed.")
    s.differs = (f"Times are predicted, not measured on GPUs. The α–β model is netweave's addition to §5.1; its "
                 f"{carrier.name} constants are {carrier.source.split(':', 1)[0]} ({carrier.source.split(':', 1)[-1].strip()}).")
    return s


def _us(seconds: float) -> str:
    """``seconds`` in µs or ms, for a sentence."""
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.3g} µs"


def _times(speedup: float | None) -> str:
    return "–" if speedup is None else f"{speedup:.2f} ×"


def ina(c: CompareConfig, topo=None) -> Section:
    from .scenarios import InaScenario
    from .sim import SimConfig

    dataset = c.ina_dataset or c.dataset or DEFAULT_INA_DATASET
    graph_why = ("given by ina_dataset" if c.ina_dataset else "DATASET" if c.dataset else
                 "the default: no DATASET given, a graph whose layer does not fit the switch (SwitchGNN §6's regime)")
    network, workers = c.ina_topology, c.ina_workers
    if network is None and topo is not None and _simulable(topo):
        network, workers, net_why = c.topology, len(topo.workers), "--topology"
    elif network is not None:
        net_why = "given by ina_topology"
        from .topology import load_topology_spec

        workers = len(load_topology_spec(network).workers)
    else:
        net_why = (f"--topology {c.topology} is {_kind(topo)}, not hosts on switches that aggregate, which "
                   "the switch simulator needs" if topo is not None else "the default")
    runs = [InaScenario(dataset=dataset, workers=workers, topology=network, strategy=strategy, switch_memory=memory,
                        order=order, seed=c.seed, sim=SimConfig(seed=c.seed), blocking=blocking)
            for strategy, memory, order, blocking in (("host", None, "random", "auto"), ("straw", None, "random", "auto"),
                                                      ("straw", c.switch_memory, "random", "auto"),
                                                      ("switchgnn", c.switch_memory, "gamr", "paper"),
                                                      ("switchgnn", c.switch_memory, "gamr", "auto"))]
    inputs = runs[0].prepare()
    s = Section(name="ina", title=f"One GCN layer of {dataset} through an INA switch ({workers} hosts on "
                                  f"{inputs.topology_name}, {c.switch_memory / 1e6:g} MB of aggregators)",
                columns=("strategy", "memory", "traffic_MB", "traffic_reduction", "completion_us", "max_queue_KB",
                         "blocks"), baseline="host", metrics=("traffic_MB", "completion_us"),
                note="When the layer does not fit the switch's aggregators, the strawman aggregates what fits (about "
                     "half of the host-based traffic, no faster); SwitchGNN's GAMR order and multi-level blocks keep "
                     "most of it in the switch and finish sooner than host-based exchange. 'switchgnn auto' is "
                     "netweave's: the blocking (or host exchange) its cost model predicts fastest for this layer.",
                differs="Simulated, not a Tofino; a Reddit-like graph at 1 % of Reddit on 32 hosts with 2 MB of "
                        "aggregators, where the paper runs full Reddit on 128 workers with 10-100 MB."
                if dataset == DEFAULT_INA_DATASET else
                f"Simulated, not a Tofino; {dataset} on {workers} hosts with {c.switch_memory / 1e6:g} MB of aggregators, "
                "where the paper runs Reddit on 128 workers with 10-100 MB.", paper=SWITCHGNN_FIG18,
                inputs=f"graph {dataset} ({graph_why}); network {network or inputs.topology_name} ({net_why})")
    for sc in runs:
        r = sc.run(inputs).summary()
        s.rows.append({"strategy": sc.strategy if "choice" not in r  # the cost model's pick, beyond the paper:
                       else f"switchgnn auto: {r['choice']['blocking']}" + (" overlap" if r["choice"]["overlap"] else ""),
                       "memory": "–" if sc.strategy == "host" else ("UL" if sc.switch_memory is None
                                                                     else f"{sc.switch_memory / 1e6:g} MB"),
                       "traffic_MB": r["traffic_bytes"] / 1e6, "traffic_reduction": r["traffic_reduction"],
                       "completion_us": r["completion_time_s"] * 1e6, "max_queue_KB": r["max_queue_bytes"] / 1e3,
                       "blocks": r["num_blocks"]})
    paper_blocks = next(r["blocks"] for r in s.rows if r["strategy"] == "switchgnn")
    if paper_blocks <= 1:
        s.note += (f" Here the layer fits {c.switch_memory / 1e6:g} MB in one block, so the paper's regime does not "
                   "apply: give a larger graph or more workers.")
    return s


def _aggregation_network(c: CompareConfig, topo, override: str | None, default: str, workers: int
                         ) -> tuple[str, int, str]:
    """The topology, workers and the reason for a gradient-aggregation section: ``override``, else
    ``--topology`` when its switches aggregate, else ``default``."""
    graph = "; DATASET plays no part: gradient aggregation does not depend on the graph"
    if override is not None:
        return override, workers, "given in the configuration" + graph
    if topo is not None and _aggregating(topo):
        return c.topology, min(workers, len(topo.workers) - 1), "--topology" + graph
    why = (f"--topology {c.topology} is {_kind(topo)} without switches that aggregate" if topo is not None
           else "the default")
    return default, workers, why + graph


def routing(c: CompareConfig, topo=None) -> Section:
    from .route.allreduce import KINDS as ALLREDUCE_KINDS
    from .scenarios import RouteScenario

    network, workers, why = _aggregation_network(c, topo, c.routing_topology, DEFAULT_ROUTING_TOPOLOGY,
                                                 c.routing_workers)
    results = {a: RouteScenario(topology=network, algorithm=a, workers=workers, seed=c.seed).run()
               for a in ("ps", "ecmp", "grid", "aggtree", "aro")}
    s = Section(name="routing", title=f"Gradient aggregation of {workers} workers in {results['ps'].topology} "
                                      "(INA switches)", inputs=f"topology {network} ({why})",
                columns=("algorithm", "rate_gbps", "rate_x_ps", "solve_ms", "optimal"), baseline="ps",
                metrics=("rate_gbps",),
                note="ARO routes each task's flows so that they meet at INA pipelines and merge there, so its slowest "
                     "task aggregates several times faster than through a plain PS; ECMP, GRID and AggTree do not "
                     "see the pipelines. The rows marked (no INA) are what users run without it: a host ring and "
                     "tree all-reduce, bound by the links, in the same unit (gradient bytes per worker per second, "
                     "the result's way back included, where the INA rows count the upload only).",
                differs=f"Rates from netweave's max-min evaluator in {results['ps'].topology} with {workers} workers "
                        "(the paper: a 24x24 leaf-spine with 200), solved exactly with HiGHS.", paper=ARO_FIG7A)
    base = results["ps"].min_rate_gbps
    for algorithm, r in results.items():
        s.rows.append({"algorithm": algorithm, "rate_gbps": r.min_rate_gbps, "rate_x_ps": r.min_rate_gbps / base,
                       "solve_ms": r.solve_time_s * 1e3, "optimal": r.optimal})
    for kind in ALLREDUCE_KINDS:  # what users run without INA: the host all-reduce's bound, in the same unit
        rate = min(rates[kind] for rates in results["ps"].allreduce_rates_gbps.values())
        s.rows.append({"algorithm": f"{kind} (no INA)", "rate_gbps": rate, "rate_x_ps": rate / base,
                       "solve_ms": None, "optimal": None})
    return s


def precision(c: CompareConfig, topo=None) -> Section:
    from .route.allreduce import KINDS as ALLREDUCE_KINDS
    from .scenarios import PRECISION_MIX, RouteScenario

    network, workers, why = _aggregation_network(c, topo, c.precision_topology, DEFAULT_PRECISION_TOPOLOGY,
                                                 c.precision_workers)
    metrics = {a: RouteScenario(topology=network, algorithm=a, workers=workers,
                                precisions=PRECISION_MIX, seed=c.seed).run() for a in ("ps", "atp", "grid", "pahina")}
    s = Section(name="precision", title=f"Precision-heterogeneous aggregation (fp8:fp16:fp32 = 5:3:2) of "
                                        f"{workers} workers in {metrics['ps'].topology}", inputs=f"topology {network} ({why})",
                columns=("scheme", "training_time_s", "time_reduction", "ina_efficiency", "min_rate_gbps"),
                baseline="ps", metrics=("training_time_s", "ina_efficiency"),
                note="PAHInA aggregates each precision at a nearby switch with capacity for it, without up-casting, "
                     "and rates the workers by eq. 2, so training takes a fraction of GRID's and ATP's time. The rows "
                     "marked (no INA) are what users run without it: a host all-reduce of fp32 gradients, ring or "
                     "tree, bound by their busiest link (route/allreduce.py).",
                differs="Training time from netweave's model with its constants (100 MB of fp32 gradients, 1000 "
                        "iterations); ties between equal paths go to fewer hops, then less load, then a seeded "
                        "order (the paper leaves them open).", paper=PAHINA_FIG9)
    base = metrics["ps"].metrics.training_time_s
    rows = [(scheme, r.metrics) for scheme, r in metrics.items()]
    rows += [(f"{kind} (no INA)", metrics["ps"].allreduce[kind]) for kind in ALLREDUCE_KINDS]
    for scheme, m in rows:
        s.rows.append({"scheme": scheme, "training_time_s": m.training_time_s,
                       "time_reduction": 1 - m.training_time_s / base, "ina_efficiency": m.ina_efficiency,
                       "min_rate_gbps": m.min_worker_rate_gbps})
    return s


CONVERGED_POINTS = 0.01  # validation accuracy: the last window within 1 point of the best, and not still rising


def convergence(val_acc: list[float]) -> tuple[bool, str]:
    """Whether a run trained to convergence, and why: over the last fifth of the epochs (at least 10)
    the validation accuracy came within :data:`CONVERGED_POINTS` of its best and rose by less than that
    on the window before."""
    n = len(val_acc)
    window = max(10, n // 5)
    if n < 2 * window:
        return False, f"not converged: {n} epochs are too few to tell (the recipe trains 200)"
    best = max(val_acc)
    last, before = val_acc[-window:], val_acc[-2 * window:-window]
    rise = sum(last) / window - sum(before) / window
    if max(last) >= best - CONVERGED_POINTS and rise < CONVERGED_POINTS:
        return True, (f"converged: validation accuracy within {100 * CONVERGED_POINTS:.0f} point of its best "
                      f"({best:.3f}) over the last {window} epochs")
    return False, (f"not converged after {n} epochs: validation accuracy still rising ({100 * rise:+.1f} points "
                   f"over the last {window} epochs; best {best:.3f}); train longer with --epochs")


def spread_ms(values: list[float]) -> tuple[float, float, float]:
    """Median, first and third quartile of ``values`` (seconds), in milliseconds."""
    import numpy as np

    q1, median, q3 = np.percentile(np.asarray(values) * 1e3, [25, 50, 75])
    return float(median), float(q1), float(q3)


def training(c: CompareConfig, topo=None) -> Section:
    s = Section(name="training", title=f"Distributed GCN training of {c.graph}: {c.train_workers} workers, "
                                       f"{c.epochs} epochs",
                columns=("comm", "test_acc", "best_val_acc", "converged", "exchange_MB_per_epoch", "epoch_ms",
                         "epoch_q1_ms", "epoch_q3_ms", "exchange_ms"), baseline="allreduce",
                metrics=("exchange_MB_per_epoch", "epoch_ms"), spread={"epoch_ms": ("epoch_q1_ms", "epoch_q3_ms")},
                note="Both exchanges give the same logits, hence the same accuracy; the plan sends only the halo "
                     "embeddings, the all-reduce baseline the whole N x D matrix of every layer. Epoch times are "
                     "the median and quartiles over every epoch after the first.",
                differs="gloo over loopback with the processes sharing this machine's cores: the epoch time "
                        "measures volume and software overhead, not a GPU cluster.",
                inputs=f"graph {c.graph} ({'DATASET' if c.dataset else 'the default: no DATASET given'}); "
                       f"--topology {c.topology} plays no part: {c.train_workers} gloo processes on this machine, "
                       f"the plan made for their loopback links (star:n={c.train_workers})")
    skipped = _training_skipped()
    if skipped is not None:
        s.skipped = skipped
        return s
    from .scenarios import TrainScenario

    said = []
    for comm in ("allreduce", "spst"):
        r = TrainScenario(dataset=c.graph, workers=c.train_workers, model="gcn", comm=comm, epochs=c.epochs,
                          seed=c.seed, timeout_s=300).run()
        steady = r.epochs[1:] or r.epochs
        done, why = convergence([e.val_acc for e in r.epochs])
        epoch, q1, q3 = spread_ms([e.epoch_s for e in steady])
        s.rows.append({"comm": comm, "test_acc": r.test_acc_at_best_val, "best_val_acc": r.best_val_acc,
                       "converged": "yes" if done else "no", "exchange_MB_per_epoch": r.exchange_bytes_per_epoch / 1e6,
                       "epoch_ms": epoch, "epoch_q1_ms": q1, "epoch_q3_ms": q3,
                       "exchange_ms": spread_ms([e.comm_s for e in steady])[0]})
        said.append(f"{comm}: {why}")
    a, b = s.rows
    overlap = a["epoch_q1_ms"] <= b["epoch_q3_ms"] and b["epoch_q1_ms"] <= a["epoch_q3_ms"]
    s.note += (" Test accuracy at the epoch of best validation accuracy. " + "; ".join(said) + "."
               + (" The two runs' interquartile ranges overlap: this machine measured no difference in epoch time."
                  if overlap else ""))
    return s


def compare(c: CompareConfig) -> list[Section]:
    """Run every requested section; each is timed. The whole configuration, the topology and the
    dataset are checked first (:meth:`CompareConfig.check`, :func:`_preflight`)."""
    from .progress import stage

    c.check()
    graph, topo = _preflight(c)
    runners = {"exchange": lambda: exchange(c, graph), "ina": lambda: ina(c, topo), "routing": lambda: routing(c, topo),
               "precision": lambda: precision(c, topo), "training": lambda: training(c, topo)}
    out = []
    for name in c.sections:
        t0 = time.perf_counter()
        with stage(f"compare: {name} section"):
            section = runners[name]()
        section.seconds = time.perf_counter() - t0
        out.append(section)
    return out


def write_report(sections: list[Section], directory: str | Path, config: CompareConfig) -> Path:
    """``report.md``, the self-contained ``report.html``, a figure per section (``NAME.png``) and
    ``compare.json`` (``{"sections": [every section's fields], "run": the run's metadata}``) in
    ``directory``; returns ``report.md``'s path."""
    from .report import write_report as write

    from .run_info import run_metadata

    path = write(sections, directory, "netweave compare", f"Dataset {config.dataset or 'not given'}, topology "
                 f"{config.topology}, seed {config.seed}. Each section shows every strategy next to its baseline, "
                 "measured in this run, and which of the dataset and topology it used.")
    (path.parent / "compare.json").write_text(json.dumps({"sections": [s.summary() for s in sections],
                                                          "run": run_metadata()}, indent=1, default=str))
    return path
