"""Benchmark: ARO against ECMP (ATP), GRID and AggTree in the paper's §IV setting (issue 6).

A 24-leaf × 24-spine leaf-spine, 24 servers per leaf, 100 Gb/s links, 20 % of the 48 switches
INA-capable with 4 pipelines (drawn by the seed), and one task of 200 random workers whose PS sits
under an INA leaf. For every seed all algorithms route the same task; the independent evaluator
gives each routing's rate. Sweeps (Figures 7b, 7c, 8): INA fraction 10–70 %, 100–400 workers,
1–8 pipelines. Several tasks (Figures 9, 10): one job of 1–4 tasks sharing 100 workers (SJMT)
and 1–4 jobs of 2 tasks with 100 workers each (MJMT), PSs under INA leaves 0, 1, ….

ARO's §III-C accelerations (APP, SRO, QSR, all three) are measured against the exact model on the
main setting.

Writes ``benchmarks/results/route.json`` and ``route_sweeps.png`` (a run of some ``--sections``
updates only those entries of an existing JSON).
Usage: python benchmarks/bench_route.py [--seeds 10] [--sweep-seeds 5] [--sections main,sweeps,multi,accel]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
from pathlib import Path

import numpy as np

from netweave.route import Job, Task, aro, evaluate_routes
from netweave.route.plan import route_jobs
from netweave.topology import Topology, load_topology_spec

HERE = Path(__file__).resolve().parent
ALGORITHMS = ("aro", "ecmp", "grid", "aggtree")
BASE = {"ina": 0.2, "workers": 200, "pipelines": 4}


def topology(seed: int, ina: float, pipelines: int, ina_leaves: int = 1) -> Topology:
    """The §IV leaf-spine; the first ``ina_leaves`` leaves are made INA (they hold the PSs)."""
    topo = load_topology_spec(f"leafspine:leaves=24,spines=24,hosts=24,ina={ina},pipelines={pipelines},seed={seed}")
    nodes = [dataclasses.replace(n, ina=True, pipelines=pipelines) if n.name in {f"L{i}" for i in range(ina_leaves)}
             else n for n in topo.nodes]
    return Topology(topo.name, nodes, list(topo.links))


def jobs_for(topo: Topology, seed: int, jobs: int, tasks: int, workers: int, shared: bool) -> list[Job]:
    """PS of task k under leaf k (host ``H{24k}``); workers drawn at random from the other hosts."""
    rng = np.random.default_rng(seed)
    hosts = [n.name for n in topo.nodes if n.kind == "host"]
    ps = [f"H{24 * k}" for k in range(jobs * tasks)]
    pool = [h for h in hosts if h not in ps]
    picks = rng.permutation(len(pool))
    out = []
    for j in range(jobs):
        chosen = picks[(0 if shared else j * workers):(0 if shared else j * workers) + workers]
        w = tuple(pool[i] for i in sorted(chosen))
        out.append(Job(f"J{j}", tuple(Task(f"J{j}.T{t}", ps[j * tasks + t], w) for t in range(tasks))))
    return out


def run_case(seed, ina, workers, pipelines, jobs=1, tasks=1, shared=True, algorithms=ALGORITHMS):
    topo = topology(seed, ina, pipelines, ina_leaves=jobs * tasks)
    mix = jobs_for(topo, seed, jobs, tasks, workers, shared)
    rows = []
    for algorithm in algorithms:
        r = route_jobs(topo, mix, algorithm, seed=seed).summary()
        rows.append({"seed": seed, "ina": ina, "workers": workers, "pipelines": pipelines, "jobs": jobs,
                     "tasks": tasks, "algorithm": algorithm, "min_rate_gbps": r["min_rate_gbps"],
                     "total_rate_gbps": r["total_rate_gbps"], "objective_gbps": r["objective_gbps"],
                     "upper_bound_gbps": r["upper_bound_gbps"], "solve_time_s": r["solve_time_s"],
                     "optimal": r["optimal"]})
    return rows


def mean(rows, key, **match):
    vals = [r[key] for r in rows if all(r[k] == v for k, v in match.items())]
    return statistics.fmean(vals) if vals else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sweep-seeds", type=int, default=5)
    ap.add_argument("--sections", default="main,sweeps,multi,accel")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    path = out / "route.json"
    results = json.loads(path.read_text()) if path.exists() and sections != {"main", "sweeps", "multi", "accel"} else {}
    if "accel" in sections:
        results["accelerations"] = accelerations(args.seeds)
    if "main" in sections:
        results["main"] = main_section(args.seeds)
    sweeps = {"ina": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], "workers": [100, 200, 300, 400], "pipelines": [1, 2, 4, 8]}
    if "sweeps" in sections:
        results["sweeps"] = sweep_section(sweeps, args.sweep_seeds)
        plot(sweeps, results["sweeps"], out / "route_sweeps.png")
    if "multi" in sections:
        results["multi"] = multi_section(args.sweep_seeds)
    results["meta"] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "setting": BASE,
                       "command": f"python benchmarks/bench_route.py --seeds {args.seeds} --sweep-seeds {args.sweep_seeds}"}
    path.write_text(json.dumps(results, indent=1))


def accelerations(seeds):
    rows = []
    for seed in range(seeds):
        topo = topology(seed, BASE["ina"], BASE["pipelines"])
        mix = jobs_for(topo, seed, 1, 1, BASE["workers"], True)
        for acc in ((), ("app",), ("sro",), ("qsr",), ("app", "sro", "qsr")):
            sol = aro(topo, mix, accelerations=acc)
            rows.append({"seed": seed, "accelerations": "+".join(acc) or "exact", "rate_gbps": sol.rates_gbps["J0.T0"],
                         "evaluated_gbps": evaluate_routes(topo, mix, sol.routes).rates_gbps["J0.T0"],
                         "solve_time_s": sol.solve_time_s})
    for name in dict.fromkeys(r["accelerations"] for r in rows):
        sub = [r for r in rows if r["accelerations"] == name]
        print(json.dumps({"accelerations": name, "mean_rate_gbps": statistics.fmean(r["rate_gbps"] for r in sub),
                          "median_solve_s": statistics.median(r["solve_time_s"] for r in sub)}), flush=True)
    return rows


def main_section(seeds):
    main_rows = [row for s in range(seeds) for row in run_case(s, **BASE)]
    for a in ALGORITHMS:
        print(json.dumps({"algorithm": a, "mean_rate_gbps": mean(main_rows, "min_rate_gbps", algorithm=a),
                          "median_solve_s": statistics.median(r["solve_time_s"] for r in main_rows if r["algorithm"] == a)}),
              flush=True)
    return main_rows


def sweep_section(sweeps, seeds):
    sweep_rows = []
    for key, values in sweeps.items():
        for v in values:
            for s in range(seeds):
                sweep_rows += [dict(r, sweep=key) for r in run_case(s, **(BASE | {key: v}))]
            print(json.dumps({"sweep": key, "value": v, **{a: round(mean(sweep_rows, "min_rate_gbps", sweep=key, algorithm=a,
                                                                         **{key: v}), 2) for a in ALGORITHMS}}), flush=True)
    return sweep_rows


def multi_section(seeds):
    multi_rows = []
    for label, jobs, tasks, shared in [(f"{j}J{t}T", j, t, j == 1) for j, t in ((1, 1), (1, 2), (1, 3), (1, 4))] + \
                                      [(f"{j}J2T", j, 2, False) for j in (2, 3, 4)]:
        for s in range(seeds):
            multi_rows += [dict(r, case=label) for r in run_case(s, BASE["ina"], 100, BASE["pipelines"], jobs, tasks, shared)]
        print(json.dumps({"case": label, **{a: (round(mean(multi_rows, "min_rate_gbps", case=label, algorithm=a), 2),
                                                round(mean(multi_rows, "total_rate_gbps", case=label, algorithm=a), 2))
                                            for a in ALGORITHMS}}), flush=True)
    return multi_rows


def plot(sweeps, rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    labels = {"ina": "INA switches (fraction)", "workers": "workers", "pipelines": "pipelines per switch"}
    for ax, (key, values) in zip(axes, sweeps.items()):
        for a, style in zip(ALGORITHMS, ("s-", "o-", "x--", "^-")):
            ax.plot(values, [mean(rows, "min_rate_gbps", sweep=key, algorithm=a, **{key: v}) for v in values], style, label=a)
        ax.set_xlabel(labels[key])
        ax.set_ylabel("mean throughput (Gb/s)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
