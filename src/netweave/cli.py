"""The ``netweave`` command: one sub-command per layer.

With ``--json`` a command prints exactly one JSON object on stdout; progress and logs go to stderr.
Bad input ends with one line ``netweave: error: …`` on stderr and exit status 2.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from .cli_options import (COST_MODEL_HELP, DATASET_HELP, GAMR_START_HELP, PARTITIONER_HELP, TOPOLOGY_HELP, Algorithm,
                          Comm, CostModelName, JsonOpt, Method, Model, Order, Planner, RayOpt, Strategy, WorkersOpt)
from .errors import NetweaveError
from .report.console import emit_json, finish, out, show, table

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Plan, simulate and run the communication of distributed training.")
graph_app = typer.Typer(no_args_is_help=True, help="Inspect graphs.")
topology_app = typer.Typer(no_args_is_help=True, help="Inspect and export topologies.")
app.add_typer(graph_app, name="graph")
app.add_typer(topology_app, name="topology")


# -- datasets ------------------------------------------------------------------------------------
@app.command()
def datasets(as_json: bool = JsonOpt):
    """List bundled datasets, loadable formats and generators."""
    from .graph import BUNDLED, FORMATS, GENERATORS

    info = {"bundled": BUNDLED, "formats": FORMATS, "generators": {k: v[0] for k, v in GENERATORS.items()}}
    if as_json:
        return emit_json(info)
    out.print(table("bundled (no files needed)", BUNDLED, ("name", "description")))
    out.print(table("file formats (prefix optional: detected from the path)", FORMATS, ("prefix", "spec")))
    out.print(table("generators", info["generators"], ("name", "spec")))


# -- graph ---------------------------------------------------------------------------------------
@graph_app.command("stats")
def graph_stats(dataset: str = typer.Argument(..., help=DATASET_HELP), as_json: bool = JsonOpt):
    """Size, feature and degree statistics of a dataset."""
    from .graph import load_dataset

    t0 = time.perf_counter()
    g = load_dataset(dataset)
    stats = g.stats() | {"load_time_s": time.perf_counter() - t0}
    show(stats, as_json, f"graph {dataset}")


# -- partition -----------------------------------------------------------------------------------

@app.command()
def partition(
    dataset: str = typer.Argument(..., help=DATASET_HELP),
    parts: Optional[int] = typer.Option(None, "--parts", "-k", help="Number of parts (workers)."),
    method: Method = typer.Option(Method.metis, "--method", help="metis (min edge cut), random (balanced), range (MGG Alg. 1), hierarchical (machines, then GPUs; needs --topology)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="Its workers set --parts (and its machines the levels of hierarchical). " + TOPOLOGY_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of METIS / random."),
    feature_dim: Optional[int] = typer.Option(None, "--feature-dim", help="Feature width (float32) for the exchange volume; default: the dataset's, else 128."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the partition (.npz with `parts`)."),
    as_json: bool = JsonOpt,
):
    """Partition a graph and report edge cut, balance, halo and exchange volume."""
    from .scenarios import PartitionScenario

    r = PartitionScenario(dataset=dataset, method=method.value, parts=parts, topology=topology, seed=seed,
                          feature_dim=feature_dim).run()
    finish(r.summary(), r.partition, out_file, as_json,
           f"{method.value} partition of {dataset} into {r.partition.num_parts} parts", hidden=("part_sizes", "halo_sizes"))


# -- plan ----------------------------------------------------------------------------------------


@app.command()
def plan(
    dataset: Optional[str] = typer.Argument(None, help=DATASET_HELP),
    topology: Optional[str] = typer.Option(None, "--topology", help=TOPOLOGY_HELP),
    planner: Planner = typer.Option(Planner.spst, "--planner", help="spst (DGCL Alg. 1) or p2p (direct, one stage)."),
    parts_file: Optional[Path] = typer.Option(None, "--parts-file", help="A partition .npz (from `netweave partition --out`)."),
    parts: Optional[int] = typer.Option(None, "--parts", "-k", help="Parts; must equal the topology's workers (the default)."),
    method: Method = typer.Option(Method.metis, "--method", help=PARTITIONER_HELP),
    feature_dim: Optional[int] = typer.Option(None, "--feature-dim", help="Float32 values per embedding (default: the dataset's, else 128)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the partitioner and of SPST's vertex order."),
    cost_model: Optional[CostModelName] = typer.Option(None, "--cost-model", help=COST_MODEL_HELP + " Both are reported."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the plan (.npz, one row per hop)."),
    validate: Optional[Path] = typer.Option(None, "--validate", help="Check a saved plan (against DATASET and --topology when given)."),
    as_json: bool = JsonOpt,
):
    """Plan the graph allgather (DGCL) and predict its time next to P2P on the same inputs."""
    from .plan.cost import DEFAULT_COST_MODEL
    from .scenarios import ExchangeScenario, PlanCheck

    if validate is not None:
        result = PlanCheck(plan_file=str(validate), dataset=dataset, topology=topology).run().summary()
        return emit_json(result) if as_json else out.print(table(f"{validate}: valid", result))
    if dataset is None or topology is None:
        raise NetweaveError("plan needs DATASET and --topology (or --validate PLAN.npz)")
    r = ExchangeScenario(dataset=dataset, topology=topology, planner=planner.value, method=method.value,
                         cost_model=cost_model.value if cost_model else DEFAULT_COST_MODEL, feature_dim=feature_dim,
                         parts=parts, parts_file=_str(parts_file), seed=seed).run()
    result = r.summary()
    if finish(result, r.plan, out_file, as_json, f"{planner.value} plan of {dataset} on {r.topology_name}",
              hidden=("bytes_per_link", "bytes_per_hop")):
        return
    busiest = sorted(result["bytes_per_hop"].items(), key=lambda kv: -kv[1])[:8]
    out.print(table("busiest physical hops (bytes over all stages)", busiest, ("hop", "bytes")))


# -- train ---------------------------------------------------------------------------------------


@app.command()
def train(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    workers: int = typer.Option(1, "--workers", "-n", help="Processes (one per partition); 1 trains without communication."),
    model: Model = typer.Option(Model.gcn, "--model", help="gcn, sage (mean) or gin, from PyG layers."),
    comm: Comm = typer.Option(Comm.spst, "--comm", help="spst (DGCL plan), p2p (direct, one stage) or allreduce (PyG-SPMD baseline: all-reduce N x D per layer)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="Planned-for topology (default star:n=WORKERS). " + TOPOLOGY_HELP),
    epochs: int = typer.Option(200, "--epochs"),
    hidden: Optional[int] = typer.Option(None, "--hidden", help="Hidden width (default: the model's recipe, gcn 16, sage/gin 64)."),
    layers: int = typer.Option(2, "--layers"),
    lr: Optional[float] = typer.Option(None, "--lr", help="Adam learning rate (default: the recipe's, 0.01)."),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help="L2 coefficient (default: the recipe's, 5e-4; gcn on the first layer only, as Kipf & Welling)."),
    dropout: Optional[float] = typer.Option(None, "--dropout", help="Dropout before every layer, keyed by vertex id (default: the recipe's, 0.5)."),
    normalize_features: bool = typer.Option(True, "--normalize-features/--raw-features", help="Row-normalise the input features as PyG's NormalizeFeatures (the standard recipe)."),
    cost_model: Optional[CostModelName] = typer.Option(None, "--cost-model", help=COST_MODEL_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the model, dropout, partitioner and planner."),
    method: Method = typer.Option(Method.metis, "--method", help=PARTITIONER_HELP),
    parts_file: Optional[Path] = typer.Option(None, "--parts-file", help="A partition .npz with WORKERS parts."),
    plan_file: Optional[Path] = typer.Option(None, "--plan-file", help="A plan .npz (from `netweave plan --out`) for that partition."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for the rendezvous and for any peer."),
    device: str = typer.Option("cpu", "--device", help="cpu (gloo) or cuda (NCCL, one GPU per rank)."),
    dump_logits: Optional[Path] = typer.Option(None, "--dump-logits", help="Write the final (N, C) logits as .npy."),
    as_json: bool = JsonOpt,
):
    """Train a GNN on the full graph across WORKERS processes that exchange embeddings by a plan."""
    from .scenarios import TrainScenario

    report = TrainScenario(
        dataset=dataset, workers=workers, model=model.value, comm=comm.value, topology=topology, epochs=epochs,
        hidden=hidden, layers=layers, lr=lr, weight_decay=weight_decay, dropout=dropout, seed=seed,
        method=method.value, parts_file=_str(parts_file), plan_file=_str(plan_file), timeout_s=timeout, device=device,
        dump_logits=_str(dump_logits), normalize_features=normalize_features,
        **({"cost_model": cost_model.value} if cost_model else {})).run()
    if report is None:  # a torchrun rank other than 0
        return
    if as_json:
        return emit_json(report.summary())
    out.print(table(f"{report.model} on {dataset}, {report.workers} worker(s), {report.comm}", *report.epoch_rows()))
    out.print(table("summary", {k: v for k, v in report.summary().items() if k != "epochs"}))


def _str(path: Optional[Path]) -> Optional[str]:
    return None if path is None else str(path)


# -- ina -----------------------------------------------------------------------------------------


@app.command()
def ina(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    workers: int = typer.Option(8, "--workers", "-n", help="Workers (one partition and one host each)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="A star or leaf-spine with WORKERS hosts (default star:n=WORKERS,gbps=GBPS,latency_us=2). " + TOPOLOGY_HELP),
    switch_memory: str = typer.Option("topology", "--switch-memory", help="Aggregator memory per switch (128 B aggregators): 'topology' (each switch's aggregator_memory, 100MB where the topology gives none), one size for every switch (e.g. 100MB), or 'unlimited'."),
    strategy: Strategy = typer.Option(Strategy.switchgnn, "--strategy", help="host (BNS-GCN), straw (§2.3.2 strawman) or switchgnn (GAMR + multi-level blocks)."),
    order: Order = typer.Option(Order.gamr, "--order", help="Sending order: gamr (priority BFS, §3.2) or random."),
    feature_dim: Optional[int] = typer.Option(None, "--feature-dim", help="D float32 values per feature (default: the dataset's, else 128)."),
    gbps: float = typer.Option(100.0, "--gbps", help="Link speed of the default star."),
    seed: int = typer.Option(0, "--seed", help="Seed of METIS, the orders, loss and background traffic."),
    start: Optional[int] = typer.Option(None, "--start", help=GAMR_START_HELP),
    method: Method = typer.Option(Method.metis, "--method", help=PARTITIONER_HELP),
    parts_file: Optional[Path] = typer.Option(None, "--parts-file", help="A partition .npz with WORKERS parts."),
    loss: float = typer.Option(0.0, "--loss", help="Probability that a message is lost on a link (recovered by timeout + pull, §3.4)."),
    buffer: Optional[str] = typer.Option(None, "--buffer", help="Switch buffer per output port, e.g. 1MB (default unlimited); overflow drops."),
    cc: bool = typer.Option(False, "--cc/--no-cc", help="ECN marking and halve / additive-increase senders (§3.4)."),
    ecn: str = typer.Option("100KB", "--ecn", help="ECN marking threshold of a switch queue."),
    background: float = typer.Option(0.0, "--background", help="Hadoop-like Poisson background load, fraction of line rate (§6.5)."),
    timeout_us: float = typer.Option(500.0, "--timeout-us", help="Silence after which a host pulls what it misses."),
    verify: bool = typer.Option(False, "--verify", help="Carry random features and check the delivered sums against A_cross @ X."),
    timeline: Optional[Path] = typer.Option(None, "--timeline", help="Write the time series (CSV: throughput, aggregators, queue)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write the time series as a PNG (like the paper's Figure 2)."),
    as_json: bool = JsonOpt,
):
    """Simulate one GNN layer's propagation through in-network multicast and aggregation (SwitchGNN)."""
    from .sim import SimConfig
    from .scenarios import InaScenario
    from .sim.layer import parse_switch_memory
    from .report.timeline import plot_timelines
    from .sim.timeline import save_timeline_csv
    from .topology.yaml_io import parse_bytes

    sim = SimConfig(buffer_bytes=None if buffer is None else parse_bytes(buffer, "--buffer"), congestion_control=cc,
                    ecn_bytes=parse_bytes(ecn, "--ecn"), loss=loss, timeout_us=timeout_us,
                    background_load=background, seed=seed)
    config = InaScenario(dataset=dataset, workers=workers, topology=topology,
                         switch_memory=parse_switch_memory(switch_memory), strategy=strategy.value, order=order.value,
                         feature_dim=feature_dim, gbps=gbps, seed=seed, start=start, method=method.value,
                         parts_file=_str(parts_file), verify=verify, sim=sim)
    r = config.run()
    report, result = r.summary(), r.sim
    if timeline is not None:
        save_timeline_csv(result.timeline, timeline)
        report["timeline"] = str(timeline)
    if plot is not None:
        plot_timelines({strategy.value: result.timeline}, plot)
        report["plot"] = str(plot)
    show(report, as_json, f"{strategy.value} on {dataset}, {workers} workers, {report['topology']}")


@app.command()
def timeslot(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    order: Order = typer.Option(Order.gamr, "--order", help="gamr (priority BFS, §3.2.2) or random."),
    k: int = typer.Option(1, "--k", help="Vertices entering (and results leaving) the switch per slot."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random order."),
    start: Optional[int] = typer.Option(None, "--start", help=GAMR_START_HELP),
    as_json: bool = JsonOpt,
):
    """The time-slot model of §3.2.1 (eqs. 3–6): every vertex's aggregator needs its neighbours;
    vertices reach the switch in ORDER, k per slot; reports the completion slot z and the queue."""
    from .scenarios import TimeslotScenario

    report = TimeslotScenario(dataset=dataset, order=order.value, k=k, seed=seed, start=start).run().summary()
    show(report, as_json, f"time-slot model of {dataset}, {order.value} order, k={k}")


# -- route ---------------------------------------------------------------------------------------

@app.command()
def route(
    topology: str = typer.Option(..., "--topology", help="A leaf-spine or fat-tree with INA switches. " + TOPOLOGY_HELP),
    jobs_file: Optional[Path] = typer.Option(None, "--jobs", help="Jobs YAML (jobs: [{name, weight, tasks: [{ps, workers}]}])."),
    workers: Optional[int] = typer.Option(None, "--workers", help="One task of W random workers (instead of --jobs)."),
    ps: Optional[str] = typer.Option(None, "--ps", help="Its PS (default: the first host under an INA switch)."),
    algorithm: Algorithm = typer.Option(Algorithm.aro, "--algorithm", help="aro (exact MILP), ecmp (ATP), grid, aggtree or ps (no INA), one precision per task; with mixed precisions: pahina, atp, grid or ps."),
    precisions: Optional[str] = typer.Option(None, "--precisions", help="Precision-aware routing (PAHInA model): the workers' precision mix, e.g. fp8:5,fp16:3,fp32:2."),
    switch_gbps: float = typer.Option(100.0, "--switch-gbps", help="Aggregated-output capacity per precision of INA switches without ina_capacity_gbps."),
    seed: int = typer.Option(0, "--seed", help="Seed of the workers' placement, the randomised baselines and PAHInA's last tie-break."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds the ARO solver may take."),
    accelerate: str = typer.Option("", "--accelerate", help="ARO's §III-C heuristics, comma-separated: app (pre-pruning, α=0.6), sro (staged), qsr (100 rate levels). Default: none (exact)."),
    evaluate: Optional[Path] = typer.Option(None, "--evaluate", help="Evaluate a routes JSON instead of planning."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the routes JSON."),
    as_json: bool = JsonOpt,
):
    """Route gradient aggregation through INA switches (ARO) or by a baseline, and evaluate the rates."""
    from .route.jobs import parse_precision_mix
    from .route.plan import PrecisionResult
    from .scenarios import RouteCheck, RouteScenario

    if evaluate is not None:
        r = RouteCheck(topology=topology, routes_file=str(evaluate), jobs_file=_str(jobs_file)).run()
        return show(r.summary(), as_json, f"routes {evaluate} on {r.topology_name}")
    result = RouteScenario(
        topology=topology, algorithm=algorithm.value, jobs_file=_str(jobs_file), workers=workers, ps=ps,
        precisions=parse_precision_mix(precisions) if precisions else None, switch_gbps=switch_gbps,
        time_limit_s=time_limit, accelerations=tuple(a.strip() for a in accelerate.split(",") if a.strip()),
        seed=seed).run()
    kind = "(precision-aware)" if isinstance(result, PrecisionResult) else "routing"
    finish(result.summary(), result, out_file, as_json, f"{algorithm.value} {kind} on {result.topology}",
           hidden=("tasks", "output_streams_gbps"))


# -- aggsvc --------------------------------------------------------------------------------------
aggsvc_app = typer.Typer(no_args_is_help=True, help="PAHInA's aggregation service on loopback.")
app.add_typer(aggsvc_app, name="aggsvc")


@aggsvc_app.command("demo")
def aggsvc_demo(
    workers: int = typer.Option(8, "--workers", help="Workers (every fifth sends straight to the PS)."),
    aggregators: int = typer.Option(2, "--aggregators", help="Aggregation nodes between the workers and the PS."),
    loss: float = typer.Option(0.0, "--loss", help="Probability a worker's packet is lost."),
    dup: float = typer.Option(0.0, "--dup", help="Probability a worker's packet is sent twice."),
    reorder: float = typer.Option(0.0, "--reorder", help="Probability a worker's packet is delayed (reordered)."),
    values: int = typer.Option(1000, "--values", help="Gradient values per tensor (one datagram)."),
    precisions: Optional[str] = typer.Option(None, "--precisions", help="The workers' precision mix (default PAHInA §VI's fp8:5,fp16:3,fp32:2)."),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = JsonOpt,
):
    """Send tensors of mixed precisions through real UDP aggregators to a PS; check the sums exactly."""
    from .dataplane.demo import demo
    from .dataplane.service import Faults
    from .route.jobs import parse_precision_mix
    from .scenarios import PRECISION_MIX

    report = demo(workers, aggregators, values=values, faults=Faults(loss, dup, reorder), seed=seed,
                  mix=parse_precision_mix(precisions) if precisions else PRECISION_MIX)
    if not report["exact"]:
        raise NetweaveError("the PS's sums differ from the integer sums of what the workers sent")
    show(report, as_json, "aggregation service on loopback")


# -- kernels -------------------------------------------------------------------------------------
kernels_app = typer.Typer(no_args_is_help=True, help="MGG's multi-GPU aggregation kernels.")
app.add_typer(kernels_app, name="kernels")


@kernels_app.command("bench")
def kernels_bench(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    gpus: int = typer.Option(4, "--gpus", help="GPUs the rows and embeddings are split over (simulated on one device)."),
    dim: int = typer.Option(16, "--dim", help="Embedding width D."),
    ps: int = typer.Option(8, "--ps"), dist: int = typer.Option(2, "--dist"), wpb: int = typer.Option(4, "--wpb"),
    tune_: bool = typer.Option(False, "--tune", help="Run MGG's cross-iteration tuner on measured latencies."),
    repeats: int = typer.Option(5, "--repeats", help="Timed runs per measurement (median; the first run is discarded)."),
    as_json: bool = JsonOpt,
):
    """Latency of the reference, torch.sparse, non-overlapped and MGG kernels (GPU if present, else
    Triton's interpreter on the CPU: correct but slow, for small graphs)."""
    from .graph import load_dataset
    from .kernels import Config
    from .kernels.bench import bench_kernels

    config = Config(ps, dist, wpb)
    config.check()
    report = bench_kernels(load_dataset(dataset), gpus, dim, config, tune_, repeats)
    if as_json:
        return emit_json(report)
    out.print(table(f"MGG kernels on {dataset} ({report['device']})", {k: v for k, v in report.items() if k != "tuner_path"}))


# -- compare -------------------------------------------------------------------------------------
@app.command()
def compare(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    topology: str = typer.Option("dgx1", "--topology", help="GPU server for the embedding exchange. " + TOPOLOGY_HELP),
    epochs: int = typer.Option(30, "--epochs", help="Epochs of the short training run."),
    sections: str = typer.Option("exchange,ina,routing,precision,training", "--sections",
                                 help="Which comparisons to run (comma-separated)."),
    seed: int = typer.Option(0, "--seed"),
    report: Optional[Path] = typer.Option(None, "--report", help="Write report.md, a self-contained report.html, PNG figures and compare.json to DIR."),
    as_json: bool = JsonOpt,
):
    """The main job: every netweave strategy next to its baseline, for each communication problem."""
    from .compare import CompareConfig, compare as run_compare, write_report
    from .report import section_table

    config = CompareConfig(dataset, topology, epochs=epochs, seed=seed,
                           sections=tuple(x.strip() for x in sections.split(",") if x.strip()))
    results = run_compare(config)
    path = write_report(results, report, config) if report is not None else None
    if as_json:
        return emit_json({"sections": [vars(s) for s in results], "report": None if path is None else str(path)})
    for s in results:
        out.print(section_table(s, out.width))
    if path is not None:
        print(f"report written to {path} and {path.with_suffix('.html')}", file=sys.stderr)


# -- sweep ---------------------------------------------------------------------------------------
@app.command("sweep")
def sweep_command(
    config_file: Path = typer.Argument(..., help="Sweep YAML (name, kind: ina|route|precision, grid, fixed)."),
    out_dir: Path = typer.Option(Path("sweep-out"), "--out", help="Directory of results.jsonl (resumed if present)."),
    workers: Optional[int] = WorkersOpt,
    ray: Optional[str] = RayOpt,
    as_json: bool = JsonOpt,
):
    """Run a grid of cases in a process pool (or on Ray), resumably, and show one table."""
    from .sweep import load_config, sweep

    config = load_config(config_file)
    rows = sweep(config, out_dir, workers, ray)
    if as_json:
        return emit_json({"name": config.get("name"), "cases": len(rows), "rows": rows})
    keys = sorted(config["grid"])
    metrics = [k for k in ("traffic_bytes", "completion_time_s", "min_rate_gbps", "objective_gbps", "training_time_s")
               if any(k in r["result"] for r in rows)]
    out.print(table(f"sweep {config.get('name', config_file)} ({len(rows)} cases, {out_dir / 'results.jsonl'})",
                    [tuple(r["params"][k] for k in keys) + tuple(r["result"].get(m) for m in metrics) for r in rows],
                    tuple(keys) + tuple(metrics)))


# -- repro ---------------------------------------------------------------------------------------
@app.command()
def repro(
    name: Optional[str] = typer.Argument(None, help="Which result (see --list), or all."),
    list_: bool = typer.Option(False, "--list", help="List the reproductions."),
    full: bool = typer.Option(False, "--full", help="The paper's scale (slow); the same as --scale full."),
    scale: Optional[str] = typer.Option(None, "--scale", help="tiny (seconds, a smoke test), reduced (the default: minutes) or full."),
    out_dir: Path = typer.Option(Path("repro-out"), "--out", help="Directory for NAME.csv/.png/.md and NAME.jsonl (resumed if present)."),
    workers: Optional[int] = WorkersOpt,
    ray: Optional[str] = RayOpt,
    as_json: bool = JsonOpt,
):
    """Reproduce a paper's headline result: CSV, plot and a paper-vs-netweave table."""
    from .repro import REPROS, reproduce, reproduce_all

    if list_ or name is None:
        rows = [(r.name, r.what, r.paper) for r in REPROS.values()]
        return emit_json({"repros": [dict(zip(("name", "what", "paper"), r)) for r in rows]}) if as_json else \
            out.print(table("netweave repro", rows, ("name", "what", "paper")))
    if name == "all":
        def show(r):
            if not as_json:
                out.print(f"[bold]{r['name']}[/] ({r['case_seconds']:.1f} s of cases): {r['netweave']}")
        results = reproduce_all(out_dir, full, scale, workers, ray, show)
        if as_json:
            return emit_json({"repros": results})
        return out.print(f"paper against netweave: {out_dir / 'summary.md'}")
    result = reproduce(name, out_dir, full, scale, workers, ray)
    if as_json:
        return emit_json(result)
    out.print(table(f"{name} ({result['seconds']:.1f} s, {out_dir})", {"paper": result["paper"], "netweave": result["netweave"]}))


# -- topology ------------------------------------------------------------------------------------
@topology_app.command("show")
def topology_show(spec: str = typer.Argument(..., help=TOPOLOGY_HELP),
                  links: bool = typer.Option(False, "--links", help="List every link."),
                  as_json: bool = JsonOpt):
    """Summarise a topology: nodes by kind, workers, INA switches, link speeds."""
    from .topology import load_topology_spec, topology_to_dict

    topo = load_topology_spec(spec)
    summary = topo.summary()
    if as_json:
        if links:
            summary["links"] = topology_to_dict(topo)["links"]
        return emit_json(summary)
    out.print(table(f"topology {topo.name}", {k: v for k, v in summary.items() if k != "links_by_gbps"}))
    out.print(table("links by speed", summary["links_by_gbps"], ("Gb/s per direction", "links")))
    if links:
        rows = [(l.a, l.b, l.gbps, l.latency_us, l.label or "") for l in topo.links]
        out.print(table("links", rows, ("a", "b", "gbps", "latency_us", "label")))


@topology_app.command("export")
def topology_export(spec: str = typer.Argument(..., help=TOPOLOGY_HELP),
                    out_file: Path = typer.Option(..., "--out", help="YAML file to write.")):
    """Write a topology (builder spec or file) as YAML."""
    from .topology import load_topology_spec, save_topology

    topo = load_topology_spec(spec)
    save_topology(topo, out_file)
    print(f"wrote {out_file} ({len(topo.nodes)} nodes, {len(topo.links)} links)", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning bad input into one error line (exit 2)."""
    try:
        app(args=argv, prog_name="netweave")  # standalone: usage errors print and exit 2 themselves
    except NetweaveError as exc:
        print(f"netweave: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:
        print(f"netweave: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
