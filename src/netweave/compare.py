"""``netweave compare``: every strategy netweave has for each communication problem, next to its
baseline, measured in one run (issue 9).

Sections (each a list of rows; a section whose optional dependency is missing is skipped with one line):
1. **exchange** — DGCL: the graph allgather on a GPU server (``dgx1``), P2P vs SPST, predicted time and
   bytes per link class (NVLink, PCIe-QPI-PCIe …) under the α–β cost model with the topology's
   transport (NCCL's constants on GPUs, gloo's measured ones on hosts; ``transport`` overrides) and
   under DGCL's §5.1.
2. **ina** — SwitchGNN: one layer of a Reddit-like graph through an INA switch whose aggregators cannot
   hold it (the paper's regime), host vs strawman vs SwitchGNN.
3. **routing** — ARO: gradient aggregation in a leaf-spine with INA switches, PS / ECMP / GRID / AggTree / ARO.
4. **precision** — PAHInA: precision-heterogeneous aggregation, PS / ATP / GRID / PAHInA training time.
5. **training** — a short real distributed run (4 workers, SPST plan): accuracy and bytes (needs torch).
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


@dataclass(frozen=True)
class CompareConfig:
    dataset: str = "cora"
    exchange_topology: str = "dgx1"
    # SwitchGNN's regime (§6): a Reddit-like graph (602 features) whose layer does not fit the
    # switch, at 1 % of Reddit and 32 hosts so that it simulates in seconds
    ina_dataset: str = "reddit-like:scale=0.01"
    ina_workers: int = 32
    switch_memory: int = 2_000_000
    routing_topology: str = "leafspine:leaves=8,spines=8,hosts=8,ina=0.3,pipelines=4,seed=1"
    routing_workers: int = 40
    precision_topology: str = "fattree:k=8,ina=0.05,seed=1,gbps=10"
    precision_workers: int = 50
    train_workers: int = 4
    epochs: int = 30
    seed: int = 0
    sections: tuple[str, ...] = ("exchange", "ina", "routing", "precision", "training")
    transport: str | None = None  # the exchange section's α–β constants (None: the topology's)

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
    sections; returns the dataset's graph (None when no section needs it) for the sections to share."""
    if "exchange" not in c.sections and "training" not in c.sections:
        return None
    from .graph import load_dataset
    from .topology import load_topology_spec

    if "exchange" in c.sections:
        load_topology_spec(c.exchange_topology)
    graph = load_dataset(c.dataset)
    if "training" in c.sections and _training_skipped() is None:
        from .runtime.job import check_trainable

        check_trainable(graph, c.dataset)
        if graph.num_nodes < c.train_workers:
            raise NetweaveError(f"{c.dataset} has {graph.num_nodes} vertices, fewer than the training section's "
                                f"{c.train_workers} workers; use a larger dataset")
    return graph


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

    scenarios = [ExchangeScenario(dataset=c.dataset, topology=c.exchange_topology, cost_model=model, seed=c.seed,
                                  transport=c.transport)
                 for model in (DEFAULT_COST_MODEL, DGCL_MODEL.name)]  # the default first, then the paper's §5.1
    inputs = scenarios[0].prepare(graph)
    results = [sc.run(inputs) for sc in scenarios]
    links, carrier = results[0].links, results[0].transport
    plans = [(r, name, plan, cost) for r in results
             for name, plan, cost in (("p2p", r.p2p, r.p2p_cost), ("spst", r.plan, r.cost)) if plan is not None]
    classes = list(dict.fromkeys(k for *_, cost in plans for k in links.bytes_by_class(cost.link_bytes)))
    class_columns = tuple(f"{k}_MB" for k in classes)
    s = Section(name="exchange", title=f"Embedding exchange (DGCL) of {c.dataset} on {results[0].topology_name}, "
                                       f"{results[0].plan.feature_bytes} B per embedding; α–β on the {carrier.name} "
                                       "transport; bytes per link class",
                columns=("planner", "cost_model", "predicted_time_ms", "stages", *class_columns, "total_MB", "speedup"),
                baseline="p2p", metrics=("predicted_time_ms", *class_columns))
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


def ina(c: CompareConfig) -> Section:
    from .scenarios import InaScenario
    from .sim import SimConfig

    runs = [InaScenario(dataset=c.ina_dataset, workers=c.ina_workers, strategy=strategy, switch_memory=memory,
                        order=order, seed=c.seed, sim=SimConfig(seed=c.seed), blocking=blocking)
            for strategy, memory, order, blocking in (("host", None, "random", "auto"), ("straw", None, "random", "auto"),
                                                      ("straw", c.switch_memory, "random", "auto"),
                                                      ("switchgnn", c.switch_memory, "gamr", "paper"),
                                                      ("switchgnn", c.switch_memory, "gamr", "auto"))]
    inputs = runs[0].prepare()
    s = Section(name="ina", title=f"One GCN layer of {c.ina_dataset} through an INA switch ({c.ina_workers} hosts, "
                                  f"100 Gb/s, {c.switch_memory / 1e6:g} MB of aggregators)",
                columns=("strategy", "memory", "traffic_MB", "traffic_reduction", "completion_us", "max_queue_KB",
                         "blocks"), baseline="host", metrics=("traffic_MB", "completion_us"),
                note="When the layer does not fit the switch's aggregators, the strawman aggregates what fits (about "
                     "half of the host-based traffic, no faster); SwitchGNN's GAMR order and multi-level blocks keep "
                     "most of it in the switch and finish sooner than host-based exchange. 'switchgnn auto' is "
                     "netweave's: the blocking (or host exchange) its cost model predicts fastest for this layer.",
                differs="Simulated, not a Tofino; a Reddit-like graph at 1 % of Reddit on 32 hosts with 2 MB of "
                        "aggregators, where the paper runs full Reddit on 128 workers with 10-100 MB.", paper=SWITCHGNN_FIG18)
    for sc in runs:
        r = sc.run(inputs).summary()
        s.rows.append({"strategy": sc.strategy if "choice" not in r  # the cost model's pick, beyond the paper:
                       else f"switchgnn auto: {r['choice']['blocking']}" + (" overlap" if r["choice"]["overlap"] else ""),
                       "memory": "–" if sc.strategy == "host" else ("UL" if sc.switch_memory is None
                                                                     else f"{sc.switch_memory / 1e6:g} MB"),
                       "traffic_MB": r["traffic_bytes"] / 1e6, "traffic_reduction": r["traffic_reduction"],
                       "completion_us": r["completion_time_s"] * 1e6, "max_queue_KB": r["max_queue_bytes"] / 1e3,
                       "blocks": r["num_blocks"]})
    return s


def routing(c: CompareConfig) -> Section:
    from .scenarios import RouteScenario

    results = {a: RouteScenario(topology=c.routing_topology, algorithm=a, workers=c.routing_workers, seed=c.seed).run()
               for a in ("ps", "ecmp", "grid", "aggtree", "aro")}
    s = Section(name="routing", title=f"Gradient aggregation of {c.routing_workers} workers in {results['ps'].topology} "
                                      "(INA, 4 pipelines)",
                columns=("algorithm", "rate_gbps", "rate_x_ps", "solve_ms", "optimal"), baseline="ps",
                metrics=("rate_gbps",),
                note="ARO routes each task's flows so that they meet at INA pipelines and merge there, so its slowest "
                     "task aggregates several times faster than through a plain PS; ECMP, GRID and AggTree do not "
                     "see the pipelines.",
                differs="Rates from netweave's max-min evaluator on an 8x8 leaf-spine with 40 workers (the paper: "
                        "24x24 with 200), solved exactly with HiGHS.", paper=ARO_FIG7A)
    base = results["ps"].min_rate_gbps
    for algorithm, r in results.items():
        s.rows.append({"algorithm": algorithm, "rate_gbps": r.min_rate_gbps, "rate_x_ps": r.min_rate_gbps / base,
                       "solve_ms": r.solve_time_s * 1e3, "optimal": r.optimal})
    return s


def precision(c: CompareConfig) -> Section:
    from .scenarios import PRECISION_MIX, RouteScenario

    metrics = {a: RouteScenario(topology=c.precision_topology, algorithm=a, workers=c.precision_workers,
                                precisions=PRECISION_MIX, seed=c.seed).run() for a in ("ps", "atp", "grid", "pahina")}
    s = Section(name="precision", title=f"Precision-heterogeneous aggregation (fp8:fp16:fp32 = 5:3:2) of "
                                        f"{c.precision_workers} workers in {metrics['ps'].topology}",
                columns=("scheme", "training_time_s", "time_reduction", "ina_efficiency", "min_rate_gbps"),
                baseline="ps", metrics=("training_time_s", "ina_efficiency"),
                note="PAHInA aggregates each precision at a nearby switch with capacity for it, without up-casting, "
                     "and rates the workers by eq. 2, so training takes a fraction of GRID's and ATP's time.",
                differs="Training time from netweave's model with its constants (100 MB of fp32 gradients, 1000 "
                        "iterations); ties between equal paths go to fewer hops, then less load, then a seeded "
                        "order (the paper leaves them open).", paper=PAHINA_FIG9)
    base = metrics["ps"].metrics.training_time_s
    for scheme, r in metrics.items():
        m = r.metrics
        s.rows.append({"scheme": scheme, "training_time_s": m.training_time_s,
                       "time_reduction": 1 - m.training_time_s / base, "ina_efficiency": m.ina_efficiency,
                       "min_rate_gbps": m.min_worker_rate_gbps})
    return s


def training(c: CompareConfig) -> Section:
    s = Section(name="training", title=f"Distributed GCN training of {c.dataset}: {c.train_workers} workers, "
                                       f"{c.epochs} epochs",
                columns=("comm", "test_acc", "exchange_MB_per_epoch", "epoch_ms"), baseline="allreduce",
                metrics=("exchange_MB_per_epoch", "epoch_ms"),
                note="Both exchanges give the same logits, hence the same accuracy; the plan sends only the halo "
                     "embeddings, the all-reduce baseline the whole N x D matrix of every layer.",
                differs="gloo over loopback with the processes sharing this machine's cores: the epoch time "
                        "measures volume and software overhead, not a GPU cluster.")
    skipped = _training_skipped()
    if skipped is not None:
        s.skipped = skipped
        return s
    from .scenarios import TrainScenario

    for comm in ("allreduce", "spst"):
        r = TrainScenario(dataset=c.dataset, workers=c.train_workers, model="gcn", comm=comm, epochs=c.epochs,
                          seed=c.seed, timeout_s=300).run()
        s.rows.append({"comm": comm, "test_acc": r.final_test_acc, "exchange_MB_per_epoch": r.exchange_bytes_per_epoch / 1e6,
                       "epoch_ms": r.median_epoch_s * 1e3})
    return s


def compare(c: CompareConfig) -> list[Section]:
    """Run every requested section; each is timed. The whole configuration, the topology and the
    dataset are checked first (:meth:`CompareConfig.check`, :func:`_preflight`)."""
    c.check()
    graph = _preflight(c)
    runners = {"exchange": lambda: exchange(c, graph), "ina": lambda: ina(c), "routing": lambda: routing(c),
               "precision": lambda: precision(c), "training": lambda: training(c)}
    out = []
    for name in c.sections:
        t0 = time.perf_counter()
        section = runners[name]()
        section.seconds = time.perf_counter() - t0
        out.append(section)
    return out


def write_report(sections: list[Section], directory: str | Path, config: CompareConfig) -> Path:
    """``report.md``, the self-contained ``report.html``, a figure per section (``NAME.png``) and
    ``compare.json`` (every section's fields) in ``directory``; returns ``report.md``'s path."""
    from .report import write_report as write

    path = write(sections, directory, "netweave compare", f"Dataset {config.dataset}, seed {config.seed}. Each section "
                 "shows every strategy next to its baseline, measured in this run.")
    (path.parent / "compare.json").write_text(json.dumps([s.summary() for s in sections], indent=1, default=str))
    return path
