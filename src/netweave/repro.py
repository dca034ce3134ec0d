"""``netweave repro NAME``: the papers' headline results. Each writes ``NAME.csv``, ``NAME.png`` and
``NAME.md`` (a "paper vs netweave" table quoting the paper) into the output directory.

Scales (:data:`SCALES`):

- ``reduced`` (default): minutes on a 2-core machine.
- ``full``: the papers' settings. DGCL runs on reddit-like at Reddit's size (233 K vertices,
  57 M edges; about 9 GB per process), ARO and PAHInA on their topologies with 30 and 10 seeds.
  SwitchGNN's Figures 17 and 18 run twice (128 workers each): the paper's multi-level METIS blocking
  on a tenth of Reddit's vertices at Reddit's degree (the switch memory scaled by the same tenth, as
  the aggregator demand scales with the vertices), and at Reddit's own size with the paper's
  memories, blocked by whole destinations in GAMR order (``--blocking destination``, beyond the
  paper): the paper's blocking needs about an hour of METIS per memory there (BENCHMARKS.md). The
  Reddit-size cases take 4.5–6.5 min and 11 GB each, so these two run in one process.
- ``tiny``: seconds, for tests.
"""

from __future__ import annotations

import csv
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .cases import run_cases
from .errors import NetweaveError
from .outputs import output_dir


SCALES = {  # reddit-like scales (DGCL/MGG graph; SwitchGNN graph, its switch memory scaled alike; SwitchGNN at
    # Reddit's own size with destination blocks, full only), INA workers and
    # memories (the paper's MB), ARO leaves/workers/seeds, PAHInA fat-tree k, workers and seeds
    "tiny": {"reddit": 0.005, "ina_reddit": 0.005, "ina_workers": 8, "memories": (20, 100), "leaves": 6, "aro_seeds": 1,
             "aro_workers": 20, "k": 4, "pahina_workers": (4, 8), "pahina_seeds": 1},
    "reduced": {"reddit": 0.1, "ina_reddit": 0.02, "ina_workers": 128, "memories": (10, 20, 50, 100), "leaves": 24,
                "aro_seeds": 3, "aro_workers": 200, "k": 8, "pahina_workers": (25, 50, 75, 100), "pahina_seeds": 2},
    "full": {"reddit": 1.0, "ina_reddit": 0.1, "ina_full": 1.0, "ina_workers": 128, "memories": (10, 20, 40, 60, 80, 100), "leaves": 24,
             "aro_seeds": 30, "aro_workers": 200, "k": 8, "pahina_workers": (25, 50, 75, 100), "pahina_seeds": 10},
}


@dataclass(frozen=True)
class Repro:
    """One headline result, split into independent cases so that it runs in a pool or on Ray and resumes."""

    name: str
    what: str
    paper: str  # the quoted claim
    cases: Callable[[dict], list[dict]]  # scale -> the parameters of each case (JSON-serialisable)
    case: Callable[[dict], dict]  # one case's parameters -> its result
    reduce: Callable[[dict, list[dict]], tuple[list[dict], str, list[str], str]]  # (scale, results) -> rows, x, ys, summary
    full_workers: int | None = None  # at most this many local processes at the full scale (each holds its own graph)


def _reddit(scale: float) -> str:
    """The spec of the Reddit-like graph at ``scale``."""
    return f"reddit-like:scale={scale}"


_INPUTS: dict = {}


def _inputs(scenario):
    """``scenario.prepare()``, shared by the cases of one reproduction that run in this process
    (the graph, partition and relation do not depend on the planner, strategy or memory; the two
    most recent are kept)."""
    key = (type(scenario).__name__, *scenario.inputs_key())
    if key not in _INPUTS:
        while len(_INPUTS) >= 2:
            _INPUTS.pop(next(iter(_INPUTS)))
        _INPUTS[key] = scenario.prepare()
    return _INPUTS[key]


# -- DGCL Table 8: SPST planning time -----------------------------------------------------------
TABLE8_PAPER_S = {8: 4.19, 16: 9.91}  # Reddit, one CPU thread
TABLE8_REPEATS = 3  # planning runs per GPU count; the median is reported


def _table8_case(p: dict) -> dict:
    from .scenarios import ExchangeScenario

    sc = ExchangeScenario(dataset=_reddit(p["reddit"]), topology=p["topology"], cost_model="dgcl", seed=0)
    inputs = _inputs(sc)
    times = [sc.run(inputs).planning_time_s for _ in range(p["repeats"])]
    return {"gpus": inputs.links.num_workers, "edges": inputs.graph.num_edges, "spst_s": statistics.median(times)}


def _table8_reduce(z: dict, results: list[dict]):
    rows = [{"gpus": r["gpus"], "spst_s": r["spst_s"], "paper_reddit_s": TABLE8_PAPER_S[r["gpus"]]} for r in results]
    return rows, "gpus", ["spst_s", "paper_reddit_s"], f"median of {TABLE8_REPEATS} on reddit-like at scale {z['reddit']} ({results[0]['edges']:,} edges): " + \
        ", ".join(f"{r['gpus']} GPUs {r['spst_s']:.2f} s" for r in rows)


# -- DGCL Figure 8: communication vs number of GPUs ---------------------------------------------
def _fig8_case(p: dict) -> dict:
    from .scenarios import ExchangeScenario

    sc = ExchangeScenario(dataset=_reddit(p["reddit"]), topology=p["topology"], cost_model="dgcl", feature_dim=128,
                          seed=0)  # 128-d float32 embeddings on DGCL's §5.1 model
    r = sc.run(_inputs(sc))
    return {"gpus": r.links.num_workers, "topology": r.topology_name, "spst_ms": r.cost.total_s * 1e3,
            "p2p_ms": r.p2p_cost.total_s * 1e3 if r.p2p_cost is not None else float("nan")}


def _fig8_reduce(z: dict, rows: list[dict]):
    return rows, "gpus", ["spst_ms", "p2p_ms"], "predicted communication per layer (128-d embeddings): " + \
        ", ".join(f"{r['gpus']} GPUs SPST {r['spst_ms']:.3g} ms / P2P {r['p2p_ms']:.3g} ms" for r in rows)


# -- SwitchGNN Figures 17 and 18: one layer through the switch, per switch memory ------------------
FULL_SIZE_BLOCKING = "destination"  # the paper's METIS blocking does not finish at Reddit's size here
FULL_SIZE = "_reddit_size"  # the suffix of the Reddit-size columns


def _ina_cases(z: dict, orders: list[str]) -> list[dict]:
    cases = [{"reddit": z["ina_reddit"], "workers": z["ina_workers"], "paper_memory_mb": mb, "orders": orders}
             for mb in z["memories"]]
    if "ina_full" in z:
        cases += [{"reddit": z["ina_full"], "workers": z["ina_workers"], "paper_memory_mb": mb, "orders": orders,
                   "blocking": FULL_SIZE_BLOCKING} for mb in z["memories"]]
    return cases


def _ina_case(p: dict) -> dict:
    from .scenarios import InaScenario

    memory = int(p["paper_memory_mb"] * 1e6 * p["reddit"])  # the paper's memory for Reddit, scaled with the graph
    blocking = p.get("blocking", "paper")
    row = {"paper_memory_mb": p["paper_memory_mb"], "reddit": p["reddit"], "blocking": blocking}
    for strategy, order in [("straw", "random")] + [("switchgnn", o) for o in p["orders"]]:
        sc = InaScenario(dataset=_reddit(p["reddit"]), workers=p["workers"], strategy=strategy, order=order,
                         switch_memory=memory, seed=0, blocking=blocking)
        r = sc.run(_inputs(sc)).layer.summary()
        key = strategy if strategy == "straw" else f"switchgnn_{order}"
        row[f"{key}_reduction"] = r["traffic_reduction"]
        row[f"{key}_max_queue_mb"] = r["max_queue_bytes"] / 1e6
        row[f"{key}_completion_ms"] = r["completion_time_s"] * 1e3
        row[f"{key}_blocks"] = r["num_blocks"]
    return row


def _ina_reduce(z: dict, results: list[dict], ys: list[str], head: str, said: Callable[[list[dict]], str]):
    """One row per memory: the paper's blocking on ``ina_reddit``, with (full) the Reddit-size case's
    columns beside it under :data:`FULL_SIZE`; ``ys`` of both plotted; the summary is ``head`` and
    ``said`` of each set's rows."""
    scaled = [r for r in results if r.get("blocking", "paper") == "paper"]
    full = [r for r in results if r.get("blocking", "paper") != "paper"]
    by_mb = {r["paper_memory_mb"]: r for r in full}
    rows = [{**r, **{k + FULL_SIZE: v for k, v in by_mb.get(r["paper_memory_mb"], {}).items()
                     if k.startswith(("straw", "switchgnn"))}} for r in scaled]
    summary = head + said(rows)
    if full:
        ys = ys + [y + FULL_SIZE for y in ys]
        summary += f"; reddit-like at scale {full[0]['reddit']} ({full[0]['blocking']} blocks, the paper's memories): " + said(full)
    return rows, "paper_memory_mb", ys, summary


def _fig18_reduce(z: dict, results: list[dict]):
    return _ina_reduce(z, results, ["straw_reduction", "switchgnn_gamr_reduction"],
                       f"reddit-like at scale {z['ina_reddit']}, {z['ina_workers']} workers, memory scaled by {z['ina_reddit']}: SwitchGNN ",
                       lambda rs: ", ".join(f"{100 * r['switchgnn_gamr_reduction']:.0f} % at {r['paper_memory_mb']} MB" for r in rs))


def _fig17_reduce(z: dict, results: list[dict]):
    return _ina_reduce(z, results, ["switchgnn_gamr_max_queue_mb", "switchgnn_random_max_queue_mb"],
                       f"reddit-like at scale {z['ina_reddit']}, {z['ina_workers']} workers, GAMR/random: ",
                       lambda rs: ", ".join(
                           f"{r['paper_memory_mb']} MB queue {r['switchgnn_gamr_max_queue_mb']:.3f}/{r['switchgnn_random_max_queue_mb']:.3f} MB "
                           f"completion {r['switchgnn_gamr_completion_ms']:.2f}/{r['switchgnn_random_completion_ms']:.2f} ms" for r in rs))


# -- ARO Figure 7a: minimum job rate in a 24x24 leaf-spine ----------------------------------------
ARO_ALGORITHMS = ("aro", "ecmp", "grid", "aggtree")
ARO_PAPER_GBPS = {"aro": 26.33, "ecmp": 7.92, "grid": 1.75, "aggtree": 8.76}


def _aro_case(p: dict) -> dict:
    from .scenarios import RouteScenario

    n, seed = p["leaves"], p["seed"]
    spec = f"leafspine:leaves={n},spines={n},hosts={n},ina=0.2,pipelines=4,seed={seed}"
    return {"seed": seed, **{a: RouteScenario(topology=spec, algorithm=a, workers=p["workers"], seed=seed).run().min_rate_gbps
                             for a in ARO_ALGORITHMS}}


def _aro_reduce(z: dict, results: list[dict]):
    rows = [dict(r, **{f"paper_{a}": v for a, v in ARO_PAPER_GBPS.items()}) for r in results]
    return rows, "seed", list(ARO_ALGORITHMS), "mean rates (Gb/s): " + ", ".join(
        f"{a} {statistics.fmean(r[a] for r in rows):.2f}" for a in ARO_ALGORITHMS)


# -- PAHInA Figure 9: training time vs workers ----------------------------------------------------
def _pahina_case(p: dict) -> dict:
    from .route.pahina import SCHEMES
    from .scenarios import PRECISION_MIX, RouteScenario

    k, workers, seed = p["k"], p["workers"], p["seed"]
    ina = min(1.0, max(workers / 8, 1) / (5 * k * k / 4))  # about one INA switch per 8 workers
    spec = f"fattree:k={k},ina={ina:.4f},seed={seed},gbps=10,switch_gbps=5-20"  # §VI-C: 10 Gb/s hosts, 5-20 between switches
    return {"workers": workers, **{s: RouteScenario(topology=spec, algorithm=s, workers=workers, precisions=PRECISION_MIX,
                                                    seed=seed).run().metrics.training_time_s for s in SCHEMES}}


def _pahina_reduce(z: dict, results: list[dict]):
    from .route.pahina import SCHEMES

    rows = [{"workers": w, **{s: statistics.fmean(r[s] for r in results if r["workers"] == w) for s in SCHEMES}}
            for w in dict.fromkeys(r["workers"] for r in results)]
    last = rows[-1]
    summary = f"PAHInA at {last['workers']} workers: " + ", ".join(f"{100 * (last['pahina'] / last[s] - 1):+.1f} % vs {s}"
                                                                    for s in ("ps", "atp", "grid"))
    return rows, "workers", list(SCHEMES), summary + f" (fat-tree k={z['k']}, {z['pahina_seeds']} seeds)"


# -- MGG Figure 11: the tuner's search --------------------------------------------------------------
MGG_RUN = "NETWEAVE_MGG_RUN"  # names a recorded run, the JSON benchmarks/bench_mgg.py writes on a GPU


def _mgg_cases(z: dict) -> list[dict]:
    """One case; without a GPU it replays the recorded run named by ``$NETWEAVE_MGG_RUN``, read here
    (in the driver, where the user's path means something) so that the case carries what it needs."""
    import json
    import os

    case = {"reddit": z["reddit"]}
    path = os.environ.get(MGG_RUN)
    if not path:
        return [case]
    where = f"{MGG_RUN}={path}"
    try:
        run = json.loads(Path(path).read_text())["rows"][0]
        recorded = {"tuned": str(run["tuned"]), "path_s": [float(t) for _, t in run["tuner_path"]]}
    except OSError as exc:
        raise NetweaveError(f"{where}: cannot read it ({exc.strerror}); name the JSON that "
                            "benchmarks/bench_mgg.py wrote on a GPU") from None
    except (ValueError, LookupError, TypeError) as exc:
        raise NetweaveError(f"{where} is not a recorded MGG run (rows[0] with tuned and tuner_path expected, "
                            f"{type(exc).__name__}); name the JSON that benchmarks/bench_mgg.py wrote") from None
    return [case | {"recorded": recorded}]


def _mgg_case(p: dict) -> dict:
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        from .kernels.bench import bench_kernels

        from .graph import load_dataset

        run = bench_kernels(load_dataset(_reddit(p["reddit"])), 4, 64, do_tune=True)
        return {"tuned": str(run["tuned"]), "path_s": [t for _, t in run["tuner_path"]]}
    if "recorded" in p:
        return p["recorded"]
    raise NetweaveError(f"mgg-fig11 needs a GPU (none here) or a recorded run: set {MGG_RUN} to the JSON that "
                        "benchmarks/bench_mgg.py writes on a GPU")


def _mgg_reduce(z: dict, results: list[dict]):
    r = results[0]
    rows = [{"iteration": i + 1, "latency_ms": t * 1e3} for i, t in enumerate(r["path_s"])]
    return rows, "iteration", ["latency_ms"], f"tuner: {len(rows)} iterations, chose {r['tuned']}"


REPROS = {r.name: r for r in [
    Repro("dgcl-table8", "SPST planning time vs GPUs", "Table 8: Reddit 4.19 s on 8 GPUs, 9.91 s on 16 (48-core CPU, one thread)",
          lambda z: [{"reddit": z["reddit"], "topology": t, "repeats": TABLE8_REPEATS} for t in ("dgx1", "dgx1x2")], _table8_case, _table8_reduce),
    Repro("dgcl-fig8", "communication time vs number of GPUs, P2P vs SPST", "Figure 8 (Reddit): P2P and DGCL equal on 2 and 4 GPUs (direct NVLinks); on 8 and 16 DGCL's communication is much shorter",
          lambda z: [{"reddit": z["reddit"], "topology": t} for t in ("dgx1:gpus=2", "dgx1:gpus=4", "dgx1", "dgx1x2")],
          _fig8_case, _fig8_reduce),
    Repro("switchgnn-fig18", "traffic vs switch memory", "§6.4: 23 % less traffic than host-based at 10 MB, 81 % at 100 MB (Reddit, 128 workers)",
          lambda z: _ina_cases(z, ["gamr"]), _ina_case, _fig18_reduce, full_workers=1),
    Repro("switchgnn-fig17", "GAMR vs random order: largest queue vs memory", "§6.3: GAMR cuts the queue backlog; without it the queue grows with memory",
          lambda z: _ina_cases(z, ["gamr", "random"]), _ina_case, _fig17_reduce, full_workers=1),
    Repro("aro-fig7", "ARO vs ECMP, GRID, AggTree (200 workers, 24x24 leaf-spine)", "Fig. 7a: 26.33 vs 7.92 / 1.75 / 8.76 Gb/s",
          lambda z: [{"leaves": z["leaves"], "workers": z["aro_workers"], "seed": s} for s in range(z["aro_seeds"])],
          _aro_case, _aro_reduce),
    Repro("pahina-fig9", "training time vs workers, PAHInA vs PS / ATP / GRID", "§VI-C: at 100 workers −87.9 % vs PS, −72.2 % vs ATP, −32.9 % vs GRID",
          lambda z: [{"k": z["k"], "workers": w, "seed": s} for w in z["pahina_workers"] for s in range(z["pahina_seeds"])],
          _pahina_case, _pahina_reduce),
    Repro("mgg-fig11", "the tuner's search (latency per iteration)", "Fig. 11: about 10 iterations, up to 70 % faster than the initial configuration",
          _mgg_cases, _mgg_case, _mgg_reduce),
]}


@dataclass(frozen=True, kw_only=True)
class ReproResult:
    """One reproduction's outcome: the quoted claim, netweave's one-line ``netweave`` summary and
    the reduced ``rows`` (as in ``NAME.csv``); ``skipped`` when it could not run here (its reason is
    then the summary). Seconds: ``seconds`` this run's wall time, ``case_seconds`` every case's,
    resumed ones included."""

    name: str
    paper: str
    netweave: str
    rows: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    out: str = ""
    scale: str = ""
    cases: int = 0
    cases_run: int = 0
    case_seconds: float = 0.0
    skipped: bool = False

    def summary(self) -> dict:
        """The JSON report of ``netweave repro NAME``."""
        return asdict(self)


def run_repro_case(name: str, params: dict) -> dict:
    """One case of one reproduction (module level: it runs in worker processes and Ray tasks)."""
    return REPROS[name].case(params)


def reproduce(name: str, out_dir: str | Path, full: bool = False, scale: str | None = None,
              workers: int | None = None, ray: str | None = None) -> ReproResult:
    """Run one reproduction and write its CSV, plot and paper-vs-netweave table.

    Its cases run in a process pool (``workers``, default all cores; at the full scale at most the
    reproduction's ``full_workers``) or on Ray (``ray``, see :mod:`netweave.cases`); finished cases
    are kept in ``OUT/NAME.jsonl``, so a rerun resumes.
    """
    if name not in REPROS:
        raise NetweaveError(f"unknown reproduction {name!r}; `netweave repro --list` shows {', '.join(REPROS)}")
    r = REPROS[name]
    if full and scale not in (None, "full"):
        raise NetweaveError(f"--full contradicts --scale {scale}; give one of them")
    mode = scale or ("full" if full else "reduced")
    if mode not in SCALES:
        raise NetweaveError(f"unknown scale {mode!r}; use one of {', '.join(SCALES)}")
    z = SCALES[mode]
    if mode == "full" and r.full_workers is not None and ray is None:  # Reddit-size INA cases: 11 GB each
        workers = min(workers or r.full_workers, r.full_workers)
    with output_dir(out_dir) as out:  # removed again if the first case fails
        t0 = time.perf_counter()
        fresh = []
        results = run_cases(run_repro_case, (name,), r.cases(z), out / f"{name}.jsonl", workers, ray,
                            fresh.append, f"repro {name} ({mode})")
        rows, x, ys, summary = r.reduce(z, [row["result"] for row in results])
        seconds = time.perf_counter() - t0
        case_seconds = sum(row.get("seconds", 0.0) for row in results)  # this run's and the resumed ones'
        keys = list(dict.fromkeys(k for row in rows for k in row))
        with (out / f"{name}.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, keys)
            w.writeheader()
            w.writerows(rows)
        from .report.plots import save_png, series_figure

        save_png(series_figure(rows, x, ys, r.what), out / f"{name}.png")
        (out / f"{name}.md").write_text(f"# {name}: {r.what}\n\n| | |\n|---|---|\n| paper | {r.paper} |\n"
                                        f"| netweave | {summary} |\n| scale | {mode}: {len(results)} cases, {case_seconds:.1f} s "
                                        f"in all; {len(fresh)} run now ({seconds:.1f} s wall), the rest resumed from {name}.jsonl |\n"
                                        f"\n![{name}]({name}.png)\n")
        return ReproResult(name=name, paper=r.paper, netweave=summary, rows=rows, seconds=seconds, out=str(out), scale=mode,
                           cases=len(results), cases_run=len(fresh), case_seconds=case_seconds)


def reproduce_all(out_dir: str | Path, full: bool = False, scale: str | None = None, workers: int | None = None,
                  ray: str | None = None, on_done: Callable[[ReproResult], None] | None = None) -> list[ReproResult]:
    """Every reproduction in turn, and ``OUT/summary.md``: one row per result, paper against netweave.

    A reproduction that cannot run here (``mgg-fig11`` without a GPU or a recorded run) is listed
    with its reason instead of stopping the others.
    """
    results = []
    for name in REPROS:
        try:
            r = reproduce(name, out_dir, full, scale, workers, ray)
        except NetweaveError as exc:
            if name != "mgg-fig11":
                raise
            r = ReproResult(name=name, paper=REPROS[name].paper, netweave=f"skipped: {exc}", skipped=True)
        results.append(r)
        if on_done:
            on_done(r)
    flag = " --full" if full or scale == "full" else ""
    lines = ["| result | paper | netweave | case time | command |", "|---|---|---|---|---|"]
    lines += [f"| {r.name} | {r.paper} | {r.netweave} | {r.case_seconds:.0f} s | `netweave repro {r.name}{flag}` |"
              for r in results]
    Path(out_dir, "summary.md").write_text("# netweave repro: paper against netweave\n\n" + "\n".join(lines) + "\n")
    return results
