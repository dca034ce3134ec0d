"""Benchmark: DGCL's SPST vs peer-to-peer on DGX-1 (8 GPUs) and two DGX-1 (16 GPUs).

For each graph: METIS partition (one part per GPU, seed 0; on dgx1x2 also DGCL's hierarchical
partition, machines first), 128 float32 features (512 B), then
* predicted communication time t(S) of the P2P plan (the baseline) and of SPST, and their ratio;
* planning time of SPST (median over ``--repeats`` runs, seeds 0..) and of P2P.
DGCL reports P2P at 4.45x DGCL's measured communication time on average (7.04x max) and a
single-threaded SPST planning time of 4.19 s (Reddit, 8 GPUs) / 9.91 s (16 GPUs).

Writes ``benchmarks/results/plan.json`` and prints Markdown rows for BENCHMARKS.md.
Usage: python benchmarks/bench_plan.py [--data ../shared/data] [--repeats 3]

``--reddit`` adds Reddit's size (``reddit-like:scale=1.0``, 233k vertices, 57M edges) on dgx1 (8 GPUs)
and dgx1x2 (16 GPUs), each in fresh processes: SPST planning time (median of ``--repeats`` calls of
``spst_plan`` after one generation + METIS), and end to end ``netweave plan reddit-like:scale=1.0
--topology T --planner spst --parts K`` under ``/usr/bin/time -v`` (wall time, peak RSS; median of
``--reddit-repeats``). ``--baseline-rev REV`` measures the same on the code of git revision REV (a
temporary worktree under /tmp, removed afterwards; ``--baseline-repeats`` end-to-end runs) for
before/after rows. ``--methods metis metis32`` adds end-to-end rows partitioned by the system's
32-bit METIS (``--method metis32``; its SPST planning time is the one ``plan`` reports). Writes
``benchmarks/results/plan_reddit.json`` (``--out NAME``: ``NAME.json``).
Usage: python benchmarks/bench_plan.py --reddit [--methods metis metis32] [--baseline-rev HEAD~3] [--only none]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from netweave.graph import load_dataset
from netweave.partition import comm_relation, hierarchical_partition, metis_partition
from netweave.plan import p2p_plan, plan_cost, spst_plan, validate_plan, worker_links
from netweave.plan.cost import DGCL_MODEL
from netweave.topology import load_topology_spec

HERE = Path(__file__).resolve().parent
FEATURE_BYTES = 128 * 4
REDDIT = "reddit-like:scale=1.0"
REDDIT_TOPOLOGIES = (("dgx1", 8), ("dgx1x2", 16))

# Run in a fresh process on the code under test (PYTHONPATH): generate, METIS, then time spst_plan.
PLANNING_SCRIPT = """
import json, statistics, sys, time
from netweave.graph import load_dataset
from netweave.partition import comm_relation, metis_partition
from netweave.plan import spst_plan, worker_links
from netweave.plan.cost import DEFAULT_COST_MODEL, cost_model
from netweave.plan.transport import transport_for
from netweave.topology import load_topology_spec
spec, topo, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
g = load_dataset(spec)
topology = load_topology_spec(topo)
links = worker_links(topology)
comm = comm_relation(g, metis_partition(g, links.num_workers, seed=0))
fb = g.feature_dim * 4
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    plan = spst_plan(comm, links, fb, 0, model=cost_model(DEFAULT_COST_MODEL, transport_for(topology)))  # as `netweave plan`
    times.append(time.perf_counter() - t0)
print(json.dumps({"planning_s": times, "num_hops": plan.num_hops}))
"""


def graphs(data: Path) -> dict[str, str]:
    return {
        "amazon_cs": f"{data}/gnn_benchmark_npz/amazon_cs.npz",
        "coauthor_phy": f"{data}/gnn_benchmark_npz/coauthor_phy.npz",
        "soc-Slashdot": f"{data}/snap/soc-Slashdot0902.txt.gz",
        "ego-Twitter": f"snap:{data}/ego_twitter_gstest/twitter_e_*.csv.gz",
        "reddit-like:0.25": "reddit-like:scale=0.25,feat=0",
    }


def load() -> str:
    """``uptime``'s load averages (the machine is shared: wall times are noisy)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_planning(src: Path, spec: str, topo: str, repeats: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), NETWEAVE_NO_PROGRESS="1")
    out = subprocess.run([sys.executable, "-c", PLANNING_SCRIPT, spec, topo, str(repeats)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_end_to_end(src: Path, spec: str, topo: str, parts: int, method: str = "metis") -> dict:
    """One ``netweave plan`` under ``/usr/bin/time -v``: wall seconds, peak RSS, its own stage times."""
    env = dict(os.environ, PYTHONPATH=str(src), NETWEAVE_NO_PROGRESS="1")
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "netweave", "plan", spec, "--topology", topo,
           "--planner", "spst", "--parts", str(parts), "--json"] + ([] if method == "metis" else ["--method", method])
    before = load()
    p = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
    seconds = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    result = json.loads(p.stdout)
    return {"wall_s": seconds, "peak_rss_gb": rss_kb * 1024 / 1e9, "planning_time_s": result["planning_time_s"],
            "partition_time_s": result["partition_time_s"], "num_hops": result["num_hops"],
            "predicted_time_s": result["predicted_time_s"], "load_before": before, "load_after": load()}


def reddit_rows(src: Path, spec: str, label: str, repeats: int, e2e_repeats: int,
                methods: tuple[str, ...] = ("metis",)) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(src), NETWEAVE_NO_PROGRESS="1")
    for topo, parts in REDDIT_TOPOLOGIES:  # warm-up: numba's on-disk cache of that code, so no row pays compilation
        subprocess.run([sys.executable, "-m", "netweave", "plan", "reddit-like:scale=0.01", "--topology", topo,
                        "--parts", str(parts), "--json"], env=env, check=True, capture_output=True)
    rows = []
    for topo, parts in REDDIT_TOPOLOGIES:
        plan = run_planning(src, spec, topo, repeats)
        print(json.dumps({"code": label, "topology": topo, **plan}), flush=True)
        for method in methods:
            runs = [run_end_to_end(src, spec, topo, parts, method) for _ in range(e2e_repeats)]
            for r in runs:
                print(json.dumps({"code": label, "topology": topo, "method": method, **r}), flush=True)
            # the planning calls partition with metis; another method's planning times and plan come from its runs
            planning, hops = ((plan["planning_s"], plan["num_hops"]) if method == "metis" else
                              ([r["planning_time_s"] for r in runs], runs[0]["num_hops"]))
            rows.append({"code": label, "graph": spec, "topology": topo, "gpus": parts, "method": method,
                         "spst_planning_s": statistics.median(planning), "spst_planning_runs_s": planning,
                         "end_to_end_s": statistics.median(r["wall_s"] for r in runs),
                         "peak_rss_gb": statistics.median(r["peak_rss_gb"] for r in runs),
                         "partition_s": statistics.median(r["partition_time_s"] for r in runs),
                         "num_hops": hops, "same_plan_size": all(r["num_hops"] == hops for r in runs),
                         "runs": runs})
    return rows


def reddit(args) -> None:
    """Reddit's size at 8 and 16 GPUs, on this checkout and optionally on ``--baseline-rev``."""
    repo = HERE.parent
    rows = reddit_rows(repo / "src", args.reddit_spec, "current", args.repeats, args.reddit_repeats, tuple(args.methods))
    rev = None
    if args.baseline_rev:
        rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", args.baseline_rev], check=True,
                             capture_output=True, text=True).stdout.strip()
        tree = Path(tempfile.mkdtemp(prefix="bench_plan_baseline_")) / "tree"
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree), rev], check=True,
                       capture_output=True)
        try:
            rows += reddit_rows(tree / "src", args.reddit_spec, f"baseline {rev}", args.repeats, args.baseline_repeats)
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], check=True)
            shutil.rmtree(tree.parent, ignore_errors=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    result = {"machine": f"{platform.node()} {os.cpu_count()} cores, {platform.machine()}",
              "command": " ".join(["python benchmarks/bench_plan.py"] + sys.argv[1:]), "head": head,
              "baseline_rev": rev, "rows": rows}
    out = HERE / "results" / f"{args.out if args.reddit_spec == REDDIT else 'plan_reddit_check'}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("| code | GPUs (topology) | method | SPST planning, median (s) | end to end, median (s) | peak RSS (GB) | partition (s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['code']} | {r['gpus']} ({r['topology']}) | {r.get('method', 'metis')} | {r['spst_planning_s']:.2f} | "
              f"{r['end_to_end_s']:.1f} | {r['peak_rss_gb']:.2f} | {r['partition_s']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="graph names to run")
    ap.add_argument("--reddit", action="store_true", help="also Reddit's size at 8 and 16 GPUs (see above)")
    ap.add_argument("--reddit-spec", default=REDDIT, help="the graph of those rows (a smaller one for a quick check)")
    ap.add_argument("--reddit-repeats", type=int, default=3, help="end-to-end runs per topology")
    ap.add_argument("--methods", nargs="+", default=["metis"], choices=["metis", "metis32"],
                    help="partition methods of the end-to-end Reddit rows (metis32: the system's 32-bit METIS)")
    ap.add_argument("--out", default="plan_reddit", help="results name of the Reddit rows: benchmarks/results/OUT.json")
    ap.add_argument("--baseline-rev", help="git revision to measure the Reddit rows on too (before/after)")
    ap.add_argument("--baseline-repeats", type=int, default=1, help="end-to-end runs per topology on the baseline")
    args = ap.parse_args()
    if args.reddit:
        reddit(args)
        if args.only == ["none"]:
            return
    rows = []
    for name, spec in graphs(args.data).items():
        if args.only and name not in args.only:
            continue
        g = load_dataset(spec)
        for topo_name, method in (("dgx1", "metis"), ("dgx1x2", "metis"), ("dgx1x2", "hierarchical")):
            topo = load_topology_spec(topo_name)
            links = worker_links(topo)
            t0 = time.perf_counter()
            part = (metis_partition(g, links.num_workers, seed=0) if method == "metis"
                    else hierarchical_partition(g, topo.machines(), seed=0))
            comm = comm_relation(g, part)
            partition_s = time.perf_counter() - t0
            p2p_times, spst_times, plans = [], [], []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                direct = p2p_plan(comm, links, FEATURE_BYTES)
                p2p_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                plans.append(spst_plan(comm, links, FEATURE_BYTES, seed=r, model=DGCL_MODEL))  # DGCL's §5.1, as the paper
                spst_times.append(time.perf_counter() - t0)
            validate_plan(plans[0], comm, links)
            p2p_s = plan_cost(direct, links, DGCL_MODEL).total_s
            spst_s = statistics.median(plan_cost(p, links, DGCL_MODEL).total_s for p in plans)
            row = {"graph": name, "topology": topo_name, "partition": method, "vertices": g.num_nodes, "edges": g.num_edges,
                   "boundary_copies": int(comm.send_ids.size), "p2p_predicted_s": p2p_s,
                   "spst_predicted_s": spst_s, "p2p_over_spst": p2p_s / spst_s,
                   "spst_planning_s": statistics.median(spst_times), "p2p_planning_s": statistics.median(p2p_times),
                   "spst_stages": plans[0].num_stages, "partition_s": partition_s}
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"machine": f"{platform.node()} {os.cpu_count()} cores, {platform.machine()}",
              "command": "python benchmarks/bench_plan.py --repeats %d" % args.repeats,
              "feature_bytes": FEATURE_BYTES, "rows": rows}
    out = HERE / "results" / "plan.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("| graph | topology | partition | P2P predicted (ms) | SPST predicted (ms) | P2P / SPST | SPST planning (s) | P2P planning (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['graph']} | {r['topology']} | {r['partition']} | {r['p2p_predicted_s'] * 1e3:.3f} | {r['spst_predicted_s'] * 1e3:.3f} | "
              f"{r['p2p_over_spst']:.2f}x | {r['spst_planning_s']:.2f} | {r['p2p_planning_s']:.3f} |")


if __name__ == "__main__":
    main()
