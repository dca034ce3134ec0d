"""Benchmark: PAHInA against GRID, ATP and a plain PS: uniform links, the paper's §VI-C setting, a
sweep of switch capacity, and PAHInA's earlier tie rule and ``r_est`` beside the current ones (issues 7, 15).

Cases (workers' precisions fp8 : fp16 : fp32 = 5 : 3 : 2 everywhere):
- ``uniform``: a k = 10 fat-tree (125 switches, 250 hosts) with every link 10 Gb/s, 25–200 workers,
  about one INA switch per 8 workers. Every path cost ``d(n, v)`` ties here.
- ``compare``: ``netweave compare``'s precision case (its topology spec and worker count, uniform
  10 Gb/s links), one task per seed.
- ``fattree`` and ``random``: §VI-C: a k = 8 fat-tree (80 switches, 128 hosts) with 25–100 workers
  and a random network of 125 switches and 250 hosts with 50–200 workers; 10 Gb/s host links,
  5–20 Gb/s switch links drawn per seed, about one INA switch per 8 workers.
- ``sweep``: the aggregated-output capacity of every INA switch (Gb/s per precision, 100 elsewhere)
  from 5 to 100, on the §VI-C fat-tree with 100 workers and the uniform one with 200.

Schemes, on one topology, task and seed per case: ``ps``, ``atp``, ``grid``, ``pahina`` (ties by
hops, then assigned link load, then a seeded order; ``r_est`` = the share of the PS's ingress), and
three PAHInA variants that undo the departures: ``pahina_old`` (ties by name, ``r_est`` = ¼ of the
access link: the rule before issue 15), ``pahina_old_ties`` (names, current ``r_est``) and
``pahina_old_r_est`` (current ties, ¼ of the access link). The training-time model of
:mod:`netweave.route.pahina` (100 MB fp32 model, 50 ms compute, 1000 iterations) gives each
training time, throughput, gradient sending rate, INA efficiency and PS aggregation time.
The script also times the control plane for 1000 workers on a k = 16 fat-tree.

Writes ``benchmarks/results/pahina.json`` and ``pahina.png``; prints one JSON line of medians per case.
Usage: python benchmarks/bench_pahina.py [--seeds 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from netweave.compare import CompareConfig
from netweave.route.jobs import random_job
from netweave.route.pahina import (SCHEMES, control_view, pahina_assign, plan_precision, training_metrics,
                                   weighted_rates)
from netweave.topology import Topology, load_topology_spec, vary_switch_links

HERE = Path(__file__).resolve().parent
MIX = {"fp8": 5, "fp16": 3, "fp32": 2}
METRICS = ("training_time_s", "throughput_samples_per_s", "gradient_sending_rate_gbps", "ina_efficiency",
           "ps_aggregation_time_s")
OLD = {"pahina_old": ("name", "quarter"), "pahina_old_ties": ("name", None), "pahina_old_r_est": ("load", "quarter")}
ALL = (*SCHEMES, *OLD)
CAPACITIES = (5, 10, 25, 50, 100)


def network(kind: str, workers: int, seed: int) -> Topology:
    """The topology of one case and seed (see the module docstring)."""
    if kind == "compare":
        return load_topology_spec(CompareConfig().precision_topology)
    switches = {"fattree": 80, "uniform": 125, "random": 125}[kind]
    ina = min(1.0, workers / 8 / switches)
    if kind == "uniform":
        return load_topology_spec(f"fattree:k=10,ina={ina:.4f},seed={seed},gbps=10")
    spec = (f"fattree:k=8,ina={ina:.4f},seed={seed},gbps=10" if kind == "fattree"
            else f"random:switches=125,degree=4,hosts=250,seed={seed},gbps=10")
    topo = load_topology_spec(spec)
    rng = np.random.default_rng(seed)
    nodes = list(topo.nodes)
    if kind == "random":  # the random builder has no INA flag: draw the INA switches here
        names = [n.name for n in nodes if n.kind == "switch"]
        chosen = set(rng.choice(names, size=max(1, round(ina * len(names))), replace=False))
        nodes = [dataclasses.replace(n, ina=True) if n.name in chosen else n for n in nodes]
    return vary_switch_links(Topology(topo.name, nodes, list(topo.links)), 5, 20, rng)


def quarter_access(topo: Topology, task) -> float:
    """The earlier ``r_est``: ¼ of the workers' mean access bandwidth (Gb/s)."""
    return 0.25 * float(np.mean([topo.links[topo.adjacency[topo.index[w]][0][1]].gbps for w in task.workers]))


def run_case(kind: str, workers: int, seed: int, capacity: float) -> list[dict]:
    """Every scheme and PAHInA variant on one topology, task and seed; one row each."""
    topo = network(kind, workers, seed)
    task = random_job(topo, workers, seed=seed, mix=MIX)[0].tasks[0]
    base = {"case": kind, "workers": workers, "seed": seed, "capacity_gbps": capacity}
    rows = []
    for scheme in SCHEMES:
        t0 = time.perf_counter()
        assign, _, _, metrics = plan_precision(topo, task, scheme, seed, switch_gbps=capacity)
        rows.append({**base, "scheme": scheme, "control_plane_s": time.perf_counter() - t0,
                     "to_ps": sum(v == task.ps for v in assign.target.values()), **metrics.summary()})
    net = control_view(topo, task, capacity)
    for name, (ties, r_est) in OLD.items():
        assign = pahina_assign(net, task, r_est=quarter_access(topo, task) if r_est else None, seed=seed, ties=ties)
        rows.append({**base, "scheme": name, "to_ps": sum(v == task.ps for v in assign.target.values()),
                     **training_metrics(assign, weighted_rates(net, assign)).summary()})
    return rows


def summary(rows: list[dict], case: str, workers: int, capacity: float) -> dict:
    """Medians over seeds of the training time, PAHInA's change against each, and its wins over GRID."""
    sel = [r for r in rows if r["case"] == case and r["workers"] == workers and r["capacity_gbps"] == capacity]
    med = {s: statistics.median(r["training_time_s"] for r in sel if r["scheme"] == s) for s in ALL}
    by_seed = {(r["seed"], r["scheme"]): r["training_time_s"] for r in sel}
    seeds = sorted({r["seed"] for r in sel})
    return {"case": case, "workers": workers, "capacity_gbps": capacity, "median_training_time_s": med,
            "pahina_vs": {s: round(100 * (med["pahina"] / med[s] - 1), 1) for s in ALL if s != "pahina"},
            "pahina_beats_grid": f"{sum(by_seed[(s, 'pahina')] < by_seed[(s, 'grid')] for s in seeds)}/{len(seeds)}",
            "old_beats_grid": f"{sum(by_seed[(s, 'pahina_old')] < by_seed[(s, 'grid')] for s in seeds)}/{len(seeds)}",
            "median_to_ps": {s: statistics.median(r["to_ps"] for r in sel if r["scheme"] == s)
                             for s in ("pahina", "pahina_old", "atp")},
            "median_ina_efficiency": {s: statistics.median(r["ina_efficiency"] for r in sel if r["scheme"] == s)
                                      for s in ALL}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    load_before = os.getloadavg()
    cases = ([("uniform", w, 100.0) for w in (25, 50, 100, 200)]
             + [("compare", CompareConfig().precision_workers, 100.0)]
             + [("fattree", w, 100.0) for w in (25, 50, 75, 100)] + [("random", w, 100.0) for w in (50, 100, 150, 200)]
             + [(k, w, float(c)) for k, w in (("fattree", 100), ("uniform", 200)) for c in CAPACITIES if c != 100])
    rows, summaries = [], []
    t_start = time.perf_counter()
    for kind, workers, capacity in cases:
        for seed in range(args.seeds):
            rows += run_case(kind, workers, seed, capacity)
        summaries.append(summary(rows, kind, workers, capacity))
        print(json.dumps(summaries[-1]), flush=True)
    wall = time.perf_counter() - t_start
    big = load_topology_spec("fattree:k=16,ina=0.39,seed=1,gbps=10")
    task = random_job(big, 1000, seed=1, mix=MIX)[0].tasks[0]
    k16 = []
    for _ in range(3):
        t0 = time.perf_counter()
        plan_precision(big, task, "pahina")
        k16.append(time.perf_counter() - t0)
    print(json.dumps({"k16_1000_workers_control_plane_s": k16}), flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "mix": MIX, "seeds": args.seeds,
            "command": f"python benchmarks/bench_pahina.py --seeds {args.seeds}", "commit": commit,
            "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "wall_s": wall}
    write(out / "pahina.json", meta, summaries, rows, k16)
    plot(summaries, out / "pahina.png")


def write(path: Path, meta: dict, summaries: list[dict], rows: list[dict], k16: list[float]) -> None:
    """The results JSON: meta and medians indented, then ``row_columns`` and one compact line per row
    (the §VI-A metrics, workers sent to the PS, control-plane seconds; 5 significant digits)."""
    cols = ("case", "workers", "seed", "capacity_gbps", "scheme", *METRICS, "to_ps", "control_plane_s")
    lines = [json.dumps([float(f"{r[k]:.5g}") if isinstance(r.get(k), float) else r.get(k) for k in cols])
             for r in rows]
    head = json.dumps({"meta": meta, "summaries": summaries, "k16_control_plane_s": k16, "row_columns": cols},
                      indent=1)
    path.write_text(head[:-2] + ',\n "rows": [\n' + ",\n".join(lines) + "\n ]\n}\n")


def plot(summaries: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("uniform", "workers (uniform 10 Gb/s fat-tree k=10)", "workers"),
              ("fattree", "workers (§VI-C fat-tree k=8)", "workers"),
              ("random", "workers (§VI-C random, 125 switches)", "workers"),
              ("fattree", "INA capacity, Gb/s per precision (§VI-C fat-tree, 100 workers)", "capacity_gbps"),
              ("uniform", "INA capacity, Gb/s per precision (uniform k=10, 200 workers)", "capacity_gbps")]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, (case, label, x) in zip(axes, panels):
        swept = 100 if case == "fattree" else 200
        sel = [s for s in summaries if s["case"] == case
               and (s["capacity_gbps"] == 100.0 if x == "workers" else s["workers"] == swept)]
        sel.sort(key=lambda s: s[x])
        for scheme, style in zip(("pahina", "pahina_old", "grid", "atp", "ps"), ("s-", "s:", "o-", "^-", "x--")):
            ax.plot([s[x] for s in sel], [s["median_training_time_s"][scheme] for s in sel], style, label=scheme)
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylabel("training time (s), median over seeds")
        ax.set_yscale("log")
        if x == "capacity_gbps":
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
