"""Benchmark: PAHInA against GRID, ATP and a plain PS in the paper's §VI-C simulation setting (issue 7).

Topologies:
- a fat-tree with k = 8 (80 switches, 128 hosts) and 25–100 workers;
- a random switch network of 125 switches and 250 hosts with 50–200 workers.

Setting, as in §VI-C:
- host links 10 Gb/s, switch-to-switch links drawn from 5–20 Gb/s;
- about one INA switch per 8 workers, each with 100 Gb/s of aggregated output per precision;
- worker precisions fp8 : fp16 : fp32 = 5 : 3 : 2.

The training-time model of :mod:`netweave.route.pahina` (100 MB fp32 model, 50 ms compute,
1000 iterations) gives, per scheme and seed, the training time, throughput, gradient sending rate,
INA efficiency and PS aggregation time. The schemes share one topology, task and seed in each case.
The script also times the control plane for 1000 workers on a k = 16 fat-tree.

Writes ``benchmarks/results/pahina.json`` and ``pahina.png``.
Usage: python benchmarks/bench_pahina.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from netweave.route.jobs import random_job
from netweave.route.pahina import SCHEMES, plan_precision
from netweave.topology import Topology, load_topology_spec, vary_switch_links

HERE = Path(__file__).resolve().parent
MIX = {"fp8": 5, "fp16": 3, "fp32": 2}
METRICS = ("training_time_s", "throughput_samples_per_s", "gradient_sending_rate_gbps", "ina_efficiency",
           "ps_aggregation_time_s")


def network(kind: str, workers: int, seed: int) -> Topology:
    switches = 80 if kind == "fattree" else 125
    ina = min(1.0, workers / 8 / switches)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    rows = []
    cases = [("fattree", w) for w in (25, 50, 75, 100)] + [("random", w) for w in (50, 100, 150, 200)]
    for kind, workers in cases:
        for seed in range(args.seeds):
            topo = network(kind, workers, seed)
            task = random_job(topo, workers, seed=seed, mix=MIX)[0].tasks[0]
            for scheme in SCHEMES:
                t0 = time.perf_counter()
                _, _, _, metrics = plan_precision(topo, task, scheme, seed)
                rows.append({"topology": kind, "workers": workers, "seed": seed, "scheme": scheme,
                             "control_plane_s": time.perf_counter() - t0, **metrics})
        print(json.dumps({"topology": kind, "workers": workers, **{s: round(statistics.fmean(
            r["training_time_s"] for r in rows if r["topology"] == kind and r["workers"] == workers and r["scheme"] == s), 1)
            for s in SCHEMES}}), flush=True)
    big = load_topology_spec("fattree:k=16,ina=0.39,seed=1,gbps=10")
    task = random_job(big, 1000, seed=1, mix=MIX)[0].tasks[0]
    t0 = time.perf_counter()
    plan_precision(big, task, "pahina")
    k16 = time.perf_counter() - t0
    print(json.dumps({"k16_1000_workers_control_plane_s": k16}), flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "mix": MIX,
            "command": f"python benchmarks/bench_pahina.py --seeds {args.seeds}"}
    (out / "pahina.json").write_text(json.dumps({"meta": meta, "rows": rows, "k16_control_plane_s": k16}, indent=1))
    plot(rows, cases, out / "pahina.png")


def mean(rows, metric, **match):
    return statistics.fmean(r[metric] for r in rows if all(r[k] == v for k, v in match.items()))


def plot(rows, cases, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5))
    labels = {"training_time_s": "training time (s)", "throughput_samples_per_s": "throughput (samples/s)",
              "gradient_sending_rate_gbps": "gradient sending rate (Gb/s)", "ina_efficiency": "INA efficiency"}
    for r, kind in enumerate(("fattree", "random")):
        workers = [w for k, w in cases if k == kind]
        for c, metric in enumerate(labels):
            ax = axes[r, c]
            for scheme, style in zip(SCHEMES, ("s-", "o-", "^-", "x--")):
                ax.plot(workers, [mean(rows, metric, topology=kind, workers=w, scheme=scheme) for w in workers],
                        style, label=scheme)
            ax.set_xlabel(f"workers ({'fat-tree k=8' if kind == 'fattree' else 'random 125 switches'})")
            ax.set_ylabel(labels[metric])
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
