"""Benchmark: DGCL's SPST vs peer-to-peer on DGX-1 (8 GPUs) and two DGX-1 (16 GPUs).

For each graph: METIS partition (one part per GPU, seed 0; on dgx1x2 also DGCL's hierarchical
partition, machines first), 128 float32 features (512 B), then
* predicted communication time t(S) of the P2P plan (the baseline) and of SPST, and their ratio;
* planning time of SPST (median over ``--repeats`` runs, seeds 0..) and of P2P.
DGCL reports P2P at 4.45x DGCL's measured communication time on average (7.04x max) and a
single-threaded SPST planning time of 4.19 s (Reddit, 8 GPUs) / 9.91 s (16 GPUs).

Writes ``benchmarks/results/plan.json`` and prints Markdown rows for BENCHMARKS.md.
Usage: python benchmarks/bench_plan.py [--data ../shared/data] [--repeats 3]
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
from netweave.partition import comm_relation, hierarchical_partition, metis_partition
from netweave.plan import p2p_plan, plan_cost, spst_plan, validate_plan, worker_links
from netweave.topology import load_topology_spec

HERE = Path(__file__).resolve().parent
FEATURE_BYTES = 128 * 4


def graphs(data: Path) -> dict[str, str]:
    return {
        "amazon_cs": f"{data}/gnn_benchmark_npz/amazon_cs.npz",
        "coauthor_phy": f"{data}/gnn_benchmark_npz/coauthor_phy.npz",
        "soc-Slashdot": f"{data}/snap/soc-Slashdot0902.txt.gz",
        "ego-Twitter": f"snap:{data}/ego_twitter_gstest/twitter_e_*.csv.gz",
        "reddit-like:0.25": "reddit-like:scale=0.25,feat=0",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="graph names to run")
    args = ap.parse_args()
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
                plans.append(spst_plan(comm, links, FEATURE_BYTES, seed=r))
                spst_times.append(time.perf_counter() - t0)
            validate_plan(plans[0], comm, links)
            p2p_s = plan_cost(direct, links).total_s
            spst_s = statistics.median(plan_cost(p, links).total_s for p in plans)
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
