"""Benchmark: METIS into 128 parts of ego-Twitter with its CommRelation and statistics.

Measures, in one run and as medians over ``--repeats`` runs:
  * ``pymetis_s``: pymetis.part_graph alone on the prepared CSR (the baseline: what any tool pays);
  * ``netweave_partition_s``: ``metis_partition`` (CSR preparation + pymetis + wrapping);
  * ``comm_relation_s`` and ``stats_s``: the CommRelation and the partition statistics;
  * ``overhead_s``: everything netweave adds on top of pymetis (partition wrapper + relation + stats);
  * ``load_s``: loading the 1.77M-line edge list (8 gzipped CSV shards), and an R-MAT with 10M edges.

Writes ``benchmarks/results/partition.json`` and prints a Markdown row for BENCHMARKS.md.

Usage: python benchmarks/bench_partition.py [--data ../shared/data] [--parts 128] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import pymetis

from netweave.graph import load_dataset
from netweave.partition import comm_relation, metis_partition, partition_stats

HERE = Path(__file__).resolve().parent


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--parts", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    spec = f"snap:{args.data}/ego_twitter_gstest/twitter_e_*.csv.gz"
    load_dataset(spec)  # warm the numba parser cache
    loads, rmat_loads, pymetis_t, part_t, comm_t, stats_t = [], [], [], [], [], []
    for r in range(args.repeats):
        graph, t = timed(lambda: load_dataset(spec))
        loads.append(t)
        xadj, adjncy = graph.indptr.astype(np.int32), graph.indices.astype(np.int32)
        _, t = timed(lambda: pymetis.part_graph(args.parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                                options=pymetis.Options(seed=r)))
        pymetis_t.append(t)
        part, t = timed(lambda: metis_partition(graph, args.parts, seed=r))
        part_t.append(t)
        comm, t = timed(lambda: comm_relation(graph, part))
        comm_t.append(t)
        stats, t = timed(lambda: partition_stats(graph, part, comm, 512))
        stats_t.append(t)
    for r in range(min(3, args.repeats)):
        rmat_loads.append(timed(lambda: load_dataset(f"rmat:n=1000000,m=10000000,seed={r}"))[1])

    med = statistics.median
    result = {
        "machine": f"{platform.node()} {os.cpu_count()} cores, {platform.processor() or platform.machine()}",
        "command": f"python benchmarks/bench_partition.py --parts {args.parts} --repeats {args.repeats}",
        "graph": "ego-Twitter (81,306 vertices, 1,342,296 undirected edges)",
        "parts": args.parts,
        "repeats": args.repeats,
        "load_s": med(loads),
        "rmat_10M_edges_s": med(rmat_loads),
        "pymetis_s": med(pymetis_t),
        "netweave_partition_s": med(part_t),
        "comm_relation_s": med(comm_t),
        "stats_s": med(stats_t),
        "overhead_s": med(p - m + c + s for p, m, c, s in zip(part_t, pymetis_t, comm_t, stats_t)),
        "total_s": med(a + b + c + d for a, b, c, d in zip(loads, part_t, comm_t, stats_t)),
        "edge_cut": stats.edge_cut,
        "replication_factor": stats.replication_factor,
    }
    out = HERE / "results" / "partition.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"| METIS k={args.parts}, ego-Twitter | {result['total_s']:.2f} s total "
          f"(load {result['load_s']:.2f}, partition {result['netweave_partition_s']:.2f}, relation "
          f"{result['comm_relation_s']:.3f}, stats {result['stats_s']:.3f}) | pymetis alone "
          f"{result['pymetis_s']:.2f} s | overhead {result['overhead_s']:.3f} s |")


if __name__ == "__main__":
    main()
