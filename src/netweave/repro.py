"""``netweave repro NAME``: the papers' headline results, at a reduced scale by default (minutes on
this machine), at the paper's scale with ``--full`` (``tiny`` exists for tests). Each writes ``NAME.csv``, ``NAME.png`` and
``NAME.md`` (a "paper vs netweave" table quoting the paper) into the output directory."""

from __future__ import annotations

import csv
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import NetweaveError


SCALES = {  # reddit-like scale, INA workers, ARO leaves/hosts and seeds, PAHInA fat-tree k and seeds
    "tiny": {"reddit": 0.005, "ina_workers": 8, "memories": (20, 100), "leaves": 6, "aro_seeds": 1, "aro_workers": 20,
             "k": 4, "pahina_workers": (4, 8), "pahina_seeds": 1},
    "reduced": {"reddit": 0.02, "ina_workers": 32, "memories": (10, 20, 50, 100), "leaves": 24, "aro_seeds": 3,
                "aro_workers": 200, "k": 8, "pahina_workers": (25, 50, 75, 100), "pahina_seeds": 2},
    "full": {"reddit": 0.1, "ina_workers": 128, "memories": (1, 2, 5, 10, 20, 50, 100), "leaves": 24, "aro_seeds": 30,
             "aro_workers": 200, "k": 8, "pahina_workers": (25, 50, 75, 100), "pahina_seeds": 10},
}


@dataclass(frozen=True)
class Repro:
    name: str
    what: str
    paper: str  # the quoted claim
    run: object  # (sizes: dict) -> (rows: list[dict], x: str, ys: list[str], summary: str)


def _dgcl_table8(z: dict):
    from .graph import load_dataset
    from .partition import comm_relation, partition_by_method
    from .plan import spst_plan, worker_links
    from .topology import load_topology_spec

    g = load_dataset(f"reddit-like:scale={z['reddit']}")
    rows = []
    for spec, paper in (("dgx1", 4.19), ("dgx1x2", 9.91)):
        topo = load_topology_spec(spec)
        comm = comm_relation(g, partition_by_method(g, "metis", None, topo, 0))
        t0 = time.perf_counter()
        spst_plan(comm, worker_links(topo), 4 * g.feature_dim, 0)
        rows.append({"gpus": len(topo.workers), "spst_s": time.perf_counter() - t0, "paper_reddit_s": paper})
    return rows, "gpus", ["spst_s", "paper_reddit_s"], f"reddit-like at scale {z['reddit']} ({g.num_edges:,} edges): " + \
        ", ".join(f"{r['gpus']} GPUs {r['spst_s']:.2f} s" for r in rows)


def _dgcl_fig8(z: dict):
    from .graph import load_dataset
    from .partition import comm_relation, partition_by_method
    from .plan import p2p_plan, plan_cost, spst_plan, worker_links
    from .topology import load_topology_spec

    g = load_dataset(f"reddit-like:scale={z['reddit']}")
    rows = []
    for spec in ("star:n=2,gbps=200", "star:n=4,gbps=200", "dgx1", "dgx1x2"):
        topo = load_topology_spec(spec)
        links = worker_links(topo)
        comm = comm_relation(g, partition_by_method(g, "metis", None, topo, 0))
        fb = 4 * 128
        spst = plan_cost(spst_plan(comm, links, fb, 0), links).total_s
        p2p = plan_cost(p2p_plan(comm, links, fb), links).total_s if links.complete else float("nan")
        rows.append({"gpus": len(topo.workers), "topology": topo.name, "spst_ms": spst * 1e3, "p2p_ms": p2p * 1e3})
    return rows, "gpus", ["spst_ms", "p2p_ms"], "predicted communication per layer (128-d embeddings): " + \
        ", ".join(f"{r['gpus']} GPUs SPST {r['spst_ms']:.3g} ms / P2P {r['p2p_ms']:.3g} ms" for r in rows)


def _ina_rows(z: dict, orders: tuple[str, ...]):
    from .graph import load_dataset
    from .ina import boundary_relation
    from .ina.plan import ina_plan
    from .partition import metis_partition
    from .sim import SimConfig, sim_network
    from .sim.layer import plan_report
    from .topology import load_topology_spec

    scale = z["reddit"]
    g = load_dataset(f"reddit-like:scale={scale}")
    workers = z["ina_workers"]
    rel = boundary_relation(g, metis_partition(g, workers, seed=0))
    net = sim_network(load_topology_spec(f"star:n={workers},latency_us=2"))
    rows = []
    for mb in z["memories"]:
        memory = int(mb * 1e6 * scale)  # the paper's memory for Reddit, scaled with the graph
        row = {"paper_memory_mb": mb}
        for strategy, order in [("straw", "random")] + [("switchgnn", o) for o in orders]:
            r, _ = plan_report(rel, ina_plan(rel, strategy, 4 * g.feature_dim, memory, order), net, SimConfig())
            key = strategy if strategy == "straw" else f"switchgnn_{order}"
            row[f"{key}_reduction"] = r["traffic_reduction"]
            row[f"{key}_max_queue_mb"] = r["max_queue_bytes"] / 1e6
        rows.append(row)
    return rows, scale, workers


def _switchgnn_fig18(z: dict):
    rows, scale, workers = _ina_rows(z, ("gamr",))
    return rows, "paper_memory_mb", ["straw_reduction", "switchgnn_gamr_reduction"], \
        f"reddit-like at scale {scale}, {workers} workers, memory scaled by {scale}: SwitchGNN " + \
        ", ".join(f"{100 * r['switchgnn_gamr_reduction']:.0f} % at {r['paper_memory_mb']} MB" for r in rows)


def _switchgnn_fig17(z: dict):
    rows, scale, workers = _ina_rows(z, ("gamr", "random"))
    return rows, "paper_memory_mb", ["switchgnn_gamr_max_queue_mb", "switchgnn_random_max_queue_mb"], \
        f"reddit-like at scale {scale}, {workers} workers: largest queue GAMR/random " + \
        ", ".join(f"{r['switchgnn_gamr_max_queue_mb']:.2f}/{r['switchgnn_random_max_queue_mb']:.2f} MB" for r in rows)


def _aro_fig7(z: dict):
    from .route import random_job
    from .route.plan import route_jobs
    from .topology import load_topology_spec

    rows = []
    n = z["leaves"]
    for seed in range(z["aro_seeds"]):
        topo = load_topology_spec(f"leafspine:leaves={n},spines={n},hosts={n},ina=0.2,pipelines=4,seed={seed}")
        jobs = random_job(topo, z["aro_workers"], seed=seed)
        rows.append({"seed": seed, **{a: route_jobs(topo, jobs, a, seed)["min_rate_gbps"] for a in ("aro", "ecmp", "grid", "aggtree")},
                     "paper_aro": 26.33, "paper_ecmp": 7.92, "paper_grid": 1.75, "paper_aggtree": 8.76})
    return rows, "seed", ["aro", "ecmp", "grid", "aggtree"], "mean rates (Gb/s): " + ", ".join(
        f"{a} {statistics.fmean(r[a] for r in rows):.2f}" for a in ("aro", "ecmp", "grid", "aggtree"))


def _pahina_fig9(z: dict):
    import numpy as np

    from .route import random_job
    from .route.pahina import SCHEMES, plan_precision
    from .topology import load_topology_spec, vary_switch_links

    rows = []
    k = z["k"]
    for workers in z["pahina_workers"]:
        times = {s: [] for s in SCHEMES}
        for seed in range(z["pahina_seeds"]):
            ina = min(1.0, max(workers / 8, 1) / (5 * k * k / 4))  # about one INA switch per 8 workers
            base = load_topology_spec(f"fattree:k={k},ina={ina:.4f},seed={seed},gbps=10")
            topo = vary_switch_links(base, 5, 20, np.random.default_rng(seed))  # hosts at 10 Gb/s (§VI-C)
            task = random_job(topo, workers, seed=seed, mix={"fp8": 5, "fp16": 3, "fp32": 2})[0].tasks[0]
            for s in SCHEMES:
                times[s].append(plan_precision(topo, task, s, seed)[3]["training_time_s"])
        rows.append({"workers": workers, **{s: statistics.fmean(v) for s, v in times.items()}})
    last = rows[-1]
    summary = f"PAHInA at {last['workers']} workers: " + ", ".join(f"{100 * (last['pahina'] / last[s] - 1):+.1f} % vs {s}"
                                                    for s in ("ps", "atp", "grid"))
    return rows, "workers", list(SCHEMES), summary + f" (fat-tree k={k})"


def _mgg_fig11(z: dict):
    import json

    recorded = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "mgg.json"
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if not gpu and not recorded.exists():
        raise NetweaveError("mgg-fig11 needs a GPU (none here) or a recorded run (benchmarks/results/mgg.json from "
                            "benchmarks/bench_mgg.py on a GPU)")
    if gpu:
        from .graph import load_dataset
        from .kernels.bench import bench_kernels

        r = bench_kernels(load_dataset(f"reddit-like:scale={z['reddit']}"), 4, 64, do_tune=True)
        runs = [r]
    else:
        runs = json.loads(recorded.read_text())["rows"]
    rows = [{"iteration": i + 1, "latency_ms": t * 1e3} for i, (_, t) in enumerate(runs[0]["tuner_path"])]
    return rows, "iteration", ["latency_ms"], f"tuner: {len(rows)} iterations, chose {runs[0]['tuned']}"


REPROS = {r.name: r for r in [
    Repro("dgcl-table8", "SPST planning time vs GPUs", "Table 8: Reddit 4.19 s on 8 GPUs, 9.91 s on 16 (48-core CPU, one thread)", _dgcl_table8),
    Repro("dgcl-fig8", "communication time vs number of GPUs, P2P vs SPST", "Figure 8: DGCL's communication grows slowly with GPUs; peer-to-peer does not scale", _dgcl_fig8),
    Repro("switchgnn-fig18", "traffic vs switch memory", "§6.4: 23 % less traffic than host-based at 10 MB, 81 % at 100 MB (Reddit, 128 workers)", _switchgnn_fig18),
    Repro("switchgnn-fig17", "GAMR vs random order: largest queue vs memory", "§6.3: GAMR cuts the queue backlog; without it the queue grows with memory", _switchgnn_fig17),
    Repro("aro-fig7", "ARO vs ECMP, GRID, AggTree (200 workers, 24x24 leaf-spine)", "Fig. 7a: 26.33 vs 7.92 / 1.75 / 8.76 Gb/s", _aro_fig7),
    Repro("pahina-fig9", "training time vs workers, PAHInA vs PS / ATP / GRID", "§VI-C: at 100 workers −87.9 % vs PS, −72.2 % vs ATP, −32.9 % vs GRID", _pahina_fig9),
    Repro("mgg-fig11", "the tuner's search (latency per iteration)", "Fig. 11: about 10 iterations, up to 70 % faster than the initial configuration", _mgg_fig11),
]}


def reproduce(name: str, out_dir: str | Path, full: bool = False, scale: str | None = None) -> dict:
    """Run one reproduction and write its CSV, plot and paper-vs-netweave table."""
    if name not in REPROS:
        raise NetweaveError(f"unknown reproduction {name!r}; `netweave repro --list` shows {', '.join(REPROS)}")
    r = REPROS[name]
    mode = scale or ("full" if full else "reduced")
    t0 = time.perf_counter()
    rows, x, ys, summary = r.run(SCALES[mode])
    seconds = time.perf_counter() - t0
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    with (out / f"{name}.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for y in ys:
        ax.plot([row[x] for row in rows], [row[y] for row in rows], "o-", label=y)
    ax.set_xlabel(x)
    ax.set_title(r.what, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=110)
    plt.close(fig)
    (out / f"{name}.md").write_text(f"# {name}: {r.what}\n\n| | |\n|---|---|\n| paper | {r.paper} |\n"
                                    f"| netweave | {summary} |\n| scale | {mode}, {seconds:.1f} s |\n"
                                    f"\n![{name}]({name}.png)\n")
    return {"name": name, "paper": r.paper, "netweave": summary, "rows": rows, "seconds": seconds, "out": str(out)}
