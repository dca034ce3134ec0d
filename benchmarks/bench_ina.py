"""Benchmark: one GNN layer through in-network multicast and aggregation, 128 workers (issue 5).

For every graph, partitioned once by METIS into 128 parts, in one run on a 128-host star at
100 Gb/s with 2 µs links (switchgnn.txt §6): ``host`` (BNS-GCN, the baseline), ``straw`` with
unlimited memory (UL), 100 MB and 10 MB, and ``switchgnn`` at 100 MB and 10 MB (GAMR), plus
``switchgnn`` at 100 MB in random order. Reported: traffic, its reduction against ``host``,
completion time, largest switch queue, peak aggregator memory, the share of bytes delivered as
aggregation results, and planning / simulation wall time (simulation: median of ``--repeats``).

On ``reddit-like`` also: traffic against switch memory (Figure 18), GAMR against random order on
the largest queue and completion time (Figure 17), the time series of Figure 2, and the 8×8
leaf-spine of §6.2 (16 hosts per leaf, two-level aggregation).

Writes ``benchmarks/results/ina.json`` and ``ina_*.png``; prints Markdown rows for BENCHMARKS.md.
Usage: python benchmarks/bench_ina.py [--scale 0.1] [--data ../shared/data] [--only reddit-like]

``--goal`` runs issue 19's sweep instead: on cora, amazon_cs, coauthor_phy, reddit-like and
products-like, at 8 and 128 workers, switch memory from 1 % of the unlimited demand (every
destination's aggregators at once) up to all of it: host-based exchange, the strawman, the paper's
SwitchGNN (``--blocking paper``) and netweave's (``--blocking auto``), all simulated; writes
``results/ina_goal.json`` and ``ina_goal.png`` (traffic and completion relative to host-based
exchange) and prints where SwitchGNN is at least as good as the better baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from netweave.graph import load_dataset
from netweave.ina import boundary_relation
from netweave.ina.plan import ina_plan
from netweave.partition import metis_partition
from netweave.sim import SimConfig, sim_network
from netweave.sim.layer import plan_report
from netweave.report.timeline import plot_timelines
from netweave.topology import load_topology_spec

HERE = Path(__file__).resolve().parent
WORKERS, MB = 128, 1_000_000
STAR = f"star:n={WORKERS},gbps=100,latency_us=2"
LEAFSPINE = "leafspine:leaves=8,spines=8,hosts=16,gbps=100,latency_us=2"
CASES = [("host", None, "random"), ("straw", None, "random"), ("straw", 100 * MB, "random"),
         ("straw", 10 * MB, "random"), ("switchgnn", 100 * MB, "gamr"), ("switchgnn", 10 * MB, "gamr"),
         ("switchgnn", 100 * MB, "random")]
FIGURE_2 = [("straw", None), ("straw", 10 * MB), ("switchgnn", 10 * MB)]  # UL, overflow, SwitchGNN
SWEEP = [1 * MB, 2 * MB, 5 * MB, 10 * MB, 20 * MB, 50 * MB, 100 * MB]


def graphs(data: Path, scale: float) -> dict[str, str]:
    return {"reddit-like": f"reddit-like:scale={scale}",
            "amazon_cs": f"{data}/gnn_benchmark_npz/amazon_cs.npz",
            "coauthor_phy": f"{data}/gnn_benchmark_npz/coauthor_phy.npz",
            "flickr": f"{data}/gnn_benchmark_npz/flickr.npz",
            "slashdot": f"snap:{data}/snap/soc-Slashdot0902.txt.gz"}


def run(rel, net, strategy, memory, order, feature_bytes, repeats=1, seed=0):
    t0 = time.perf_counter()
    plan = ina_plan(rel, strategy, feature_bytes, memory, order, seed, blocking="paper")  # §3.3, as the paper
    plan_s = time.perf_counter() - t0
    times, report, result = [], None, None
    for _ in range(repeats):
        layer = plan_report(rel, plan, net, SimConfig(seed=seed))
        report, result = layer.summary(), layer.result
        times.append(report["sim_time_s"])
    report |= {"order": order, "plan_time_s": plan_s, "sim_time_s": statistics.median(times)}
    return report, result


def row(graph, report, topology="star"):
    keys = ("strategy", "switch_memory_bytes", "order", "traffic_bytes", "host_traffic_bytes", "traffic_reduction",
            "completion_time_s", "max_queue_bytes", "peak_aggregator_bytes", "aggregated_share", "num_blocks",
            "unaggregated_messages", "core_bytes", "plan_time_s", "sim_time_s")
    return {"graph": graph, "topology": topology, **{k: report[k] for k in keys}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--scale", type=float, default=0.1, help="reddit-like scale (1.0 = Reddit's 233k vertices)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="graph names to run")
    ap.add_argument("--goal", action="store_true", help="issue 19's memory sweep at 8 and 128 workers instead")
    ap.add_argument("--workers", type=int, nargs="*", default=[8, 128], help="--goal: worker counts")
    ap.add_argument("--fractions", type=float, nargs="*", default=GOAL_FRACTIONS, help="--goal: memory / demand")
    ap.add_argument("--table", action="store_true", help="--goal: print the table and redraw the plot of the saved results")
    args = ap.parse_args()
    os.environ.setdefault("NETWEAVE_NO_PROGRESS", "1")
    if args.goal and args.table:
        rows = json.loads((HERE / "results" / "ina_goal.json").read_text())["rows"]
        plot_goal(rows, HERE / "results" / "ina_goal.png")
        return goal_markdown(rows)
    if args.goal:
        return goal(args)
    star = sim_network(load_topology_spec(STAR))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    rows, sweep, leafspine, graph_info = [], [], [], {}
    for name, spec in graphs(args.data, args.scale).items():
        if args.only and name not in args.only:
            continue
        if not name.startswith("reddit") and not args.data.exists():
            continue
        t0 = time.perf_counter()
        g = load_dataset(spec)
        rel = boundary_relation(g, metis_partition(g, WORKERS, seed=0))
        feature_bytes = 4 * (g.feature_dim or 128)
        graph_info[name] = {"spec": spec, "num_nodes": g.num_nodes, "num_edges": g.num_edges,
                            "cross_edges": rel.num_cross_edges, "feature_bytes": feature_bytes,
                            "load_partition_s": time.perf_counter() - t0}
        print(json.dumps(graph_info[name]), flush=True)
        timelines = {}
        for strategy, memory, order in CASES:
            report, result = run(rel, star, strategy, memory, order, feature_bytes, args.repeats)
            rows.append(row(name, report))
            print(json.dumps(rows[-1]), flush=True)
            if (strategy, memory) in FIGURE_2:
                timelines[f"{strategy} {'UL' if memory is None else f'{memory // MB}MB'}"] = result.timeline
        if name != "reddit-like":
            continue
        plot_timelines(timelines, out / "ina_timeline.png")
        for memory in SWEEP:  # Figures 17 and 18
            for strategy, order in (("straw", "random"), ("switchgnn", "gamr"), ("switchgnn", "random")):
                report, _ = run(rel, star, strategy, memory, order, feature_bytes)
                sweep.append(row(name, report))
                print(json.dumps(sweep[-1]), flush=True)
        ls = sim_network(load_topology_spec(LEAFSPINE))
        for strategy, memory, order in (("host", None, "random"), ("straw", None, "random"), ("switchgnn", 100 * MB, "gamr"),
                                        ("switchgnn", 10 * MB, "gamr")):
            report, _ = run(rel, ls, strategy, memory, order, feature_bytes)
            leafspine.append(row(name, report, "leafspine"))
            print(json.dumps(leafspine[-1]), flush=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "workers": WORKERS, "star": STAR,
            "leafspine": LEAFSPINE, "command": f"python benchmarks/bench_ina.py --scale {args.scale}"}
    (out / "ina.json").write_text(json.dumps({"meta": meta, "graphs": graph_info, "rows": rows, "sweep": sweep,
                                              "leafspine": leafspine}, indent=1))
    if sweep:
        plot_sweep(sweep, rows, out / "ina_memory.png")
    markdown(rows, sweep, leafspine)


GOAL_FRACTIONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
GOAL_GRAPHS = {"cora": "cora", "amazon_cs": "{data}/gnn_benchmark_npz/amazon_cs.npz",
               "coauthor_phy": "{data}/gnn_benchmark_npz/coauthor_phy.npz", "reddit-like": "reddit-like:scale=0.02",
               "products-like": "products-like:scale=0.01"}
GOAL_RUNS = (("straw", "random", "paper"), ("switchgnn", "gamr", "paper"), ("switchgnn", "gamr", "auto"))


def goal(args) -> None:
    """Issue 19: SwitchGNN against the better of host-based exchange and the strawman, per memory."""
    from netweave.ina.choose import choose_plan
    from netweave.ina.strategies import AGGREGATOR_BYTES

    out = HERE / "results"
    out.mkdir(exist_ok=True)
    rows = []
    for name, spec in GOAL_GRAPHS.items():
        if args.only and name not in args.only:
            continue
        spec = spec.format(data=args.data)
        if "/" in spec and not Path(spec).exists():
            continue
        g = load_dataset(spec)
        feature_bytes = 4 * (g.feature_dim or 128)
        for workers in args.workers:
            t0 = time.perf_counter()
            rel = boundary_relation(g, metis_partition(g, workers, seed=0))
            net = sim_network(load_topology_spec(f"star:n={workers},gbps=100,latency_us=2"))
            demand = rel.destinations().size * -(-feature_bytes // AGGREGATOR_BYTES) * AGGREGATOR_BYTES
            base = {"graph": name, "workers": workers, "num_nodes": g.num_nodes, "cross_edges": rel.num_cross_edges,
                    "feature_bytes": feature_bytes, "demand_bytes": demand, "partition_s": time.perf_counter() - t0}
            host, _ = run(rel, net, "host", None, "random", feature_bytes)
            rows.append(base | {"fraction": None, "run": "host", **_goal_fields(host)})
            print(json.dumps(rows[-1]), flush=True)
            for fraction in args.fractions:
                memory = max(int(demand * fraction), -(-feature_bytes // AGGREGATOR_BYTES) * AGGREGATOR_BYTES)
                for strategy, order, blocking in GOAL_RUNS:
                    t1 = time.perf_counter()
                    if blocking == "auto":
                        choice = choose_plan(rel, net, feature_bytes, memory, order=order)
                        plan, extra = choice.plan, {"choice": choice.summary()}
                    else:
                        plan, extra = ina_plan(rel, strategy, feature_bytes, memory, order, 0, blocking=blocking, forward=False), {}
                    plan_s = time.perf_counter() - t1
                    report = plan_report(rel, plan, net, SimConfig()).summary() | {"plan_time_s": plan_s}
                    label = strategy if strategy == "straw" else f"switchgnn-{blocking}"
                    rows.append(base | {"fraction": fraction, "memory_bytes": memory, "run": label,
                                        **_goal_fields(report), **extra})
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "choice"}), flush=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load": os.getloadavg(),
            "topology": "star, 100 Gb/s, 2 µs links", "command": "python benchmarks/bench_ina.py --goal"}
    (out / "ina_goal.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    plot_goal(rows, out / "ina_goal.png")
    goal_markdown(rows)


def _goal_fields(report: dict) -> dict:
    keys = ("traffic_bytes", "completion_time_s", "num_blocks", "peak_aggregator_bytes", "unaggregated_messages",
            "max_queue_bytes", "plan_time_s", "sim_time_s")
    return {k: report[k] for k in keys}


def _goal_ratios(rows):
    """Per (graph, workers, fraction): every run's traffic and completion over the better baseline's."""
    host = {(r["graph"], r["workers"]): r for r in rows if r["run"] == "host"}
    cases = {}
    for r in rows:
        if r["fraction"] is not None:
            cases.setdefault((r["graph"], r["workers"], r["fraction"]), {})[r["run"]] = r
    for (graph, workers, fraction), runs in cases.items():
        h, straw = host[(graph, workers)], runs["straw"]
        best_t = min(h["traffic_bytes"], straw["traffic_bytes"])
        best_c = min(h["completion_time_s"], straw["completion_time_s"])
        yield graph, workers, fraction, h, runs, best_t, best_c


def goal_markdown(rows) -> None:
    print("| graph | workers | memory / demand | host MB / µs | straw MB / µs | SwitchGNN (paper) MB / µs | "
          "SwitchGNN (auto) MB / µs | auto's pick | auto / better baseline: traffic, completion |")
    print("|---|---|---|---|---|---|---|---|---|")
    for graph, workers, fraction, h, runs, best_t, best_c in _goal_ratios(rows):
        p, a = runs["switchgnn-paper"], runs["switchgnn-auto"]
        c = a["choice"]
        pick = (c["blocking"] + (" overlap" if c["overlap"] else "") + (", random order" if c["order"] == "random" else "")
                + ("" if c["forward"] or c["blocking"] == "multicast" else ", none forwarded") + f" ({a['num_blocks']})")
        cell = lambda r: f"{r['traffic_bytes'] / 1e6:.3g} / {r['completion_time_s'] * 1e6:.0f}"
        ok = a["traffic_bytes"] <= best_t and a["completion_time_s"] <= best_c
        print(f"| {graph} | {workers} | {100 * fraction:g} % | {cell(h)} | {cell(runs['straw'])} | {cell(p)} | {cell(a)} | "
              f"{pick} | {a['traffic_bytes'] / best_t:.3f}, {a['completion_time_s'] / best_c:.3f} {'✓' if ok else '✗'} |")


def plot_goal(rows, path) -> None:
    """Traffic and completion relative to host-based exchange against memory / demand, one row per
    graph, one column pair per worker count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    workers = sorted({r["workers"] for r in rows})
    fig, axes = plt.subplots(len(graphs), 2 * len(workers), figsize=(4.2 * 2 * len(workers), 2.8 * len(graphs)),
                             squeeze=False)
    styles = {"straw": ("o-", "tab:orange"), "switchgnn-paper": ("s--", "tab:blue"), "switchgnn-auto": ("D-", "tab:green")}
    labels = {"straw": "strawman", "switchgnn-paper": "SwitchGNN (paper)", "switchgnn-auto": "SwitchGNN (netweave auto)"}
    for i, graph in enumerate(graphs):
        for j, m in enumerate(workers):
            host = next((r for r in rows if r["graph"] == graph and r["workers"] == m and r["run"] == "host"), None)
            if host is None:
                continue
            for k, (metric, title) in enumerate((("traffic_bytes", "traffic"), ("completion_time_s", "completion"))):
                ax = axes[i, 2 * j + k]
                for run_name, (style, color) in styles.items():
                    pts = sorted((r["fraction"], r[metric] / host[metric]) for r in rows
                                 if r["graph"] == graph and r["workers"] == m and r["run"] == run_name)
                    if pts:
                        ax.plot([100 * x for x, _ in pts], [y for _, y in pts], style, color=color, ms=4,
                                label=labels[run_name])
                ax.axhline(1.0, color="gray", ls=":", label="host-based (BNS-GCN)")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{graph}, {m} workers: {title}", fontsize=9)
                ax.set_xlabel("switch memory (% of unlimited demand)", fontsize=8)
                ax.set_ylabel(f"{title} / host-based", fontsize=8)
                ax.grid(alpha=0.3, which="both")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sweep(sweep, rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    host = next(r["traffic_bytes"] for r in rows if r["graph"] == "reddit-like" and r["strategy"] == "host")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for strategy, order, style in (("straw", "random", "o-"), ("switchgnn", "gamr", "s-"), ("switchgnn", "random", "x--")):
        pts = [r for r in sweep if r["strategy"] == strategy and r["order"] == order]
        mem = [r["switch_memory_bytes"] / MB for r in pts]
        label = f"{strategy} ({order})"
        axes[0].plot(mem, [r["traffic_bytes"] / 1e9 for r in pts], style, label=label)
        axes[1].plot(mem, [r["max_queue_bytes"] / 1e6 for r in pts], style, label=label)
        axes[2].plot(mem, [r["completion_time_s"] * 1e3 for r in pts], style, label=label)
    axes[0].axhline(host / 1e9, color="gray", ls=":", label="host (BNS-GCN)")
    for ax, ylabel in zip(axes, ("traffic (GB)", "largest queue (MB)", "completion (ms)")):
        ax.set_xscale("log")
        ax.set_xlabel("switch memory (MB)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown(rows, sweep, leafspine):
    def line(r):
        mem = "UL" if r["switch_memory_bytes"] is None else f"{r['switch_memory_bytes'] // MB} MB"
        mem = "–" if r["strategy"] == "host" else mem
        return (f"| {r['graph']} | {r['topology']} | {r['strategy']} | {mem} | {r['order'] if r['strategy'] != 'host' else '–'} | "
                f"{r['traffic_bytes'] / 1e9:.3f} | {100 * r['traffic_reduction']:.1f}% | {r['completion_time_s'] * 1e3:.3f} | "
                f"{r['max_queue_bytes'] / 1e6:.2f} | {r['peak_aggregator_bytes'] / 1e6:.1f} | {100 * r['aggregated_share']:.0f}% | "
                f"{r['num_blocks']} | {r['plan_time_s']:.1f} | {r['sim_time_s']:.1f} |")
    for r in rows + sweep + leafspine:
        print(line(r))


if __name__ == "__main__":
    main()
