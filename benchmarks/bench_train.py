"""Benchmark: distributed GCN training with 4 workers, allreduce vs p2p vs spst (issue 4).

For each graph, in one run: one worker (no communication, the compute reference), then four
local processes (gloo on loopback) exchanging embeddings by
* ``allreduce`` — the PyG-SPMD baseline: every rank all-reduces the full ``(N, D)`` matrix per layer;
* ``p2p`` and ``spst`` — DGCL plans (planned for ``benchmarks/topologies/hetero4.yaml``).
Reported per configuration: medians over the epochs after the first of the epoch time, its
compute and communication parts, and the embedding bytes sent per epoch (all ranks), plus the
final test accuracy. Loopback has no slow links, so the times here measure software overhead and
volume; ``bench_train_netns.py`` measures the same plans over shaped links.

Writes ``benchmarks/results/train.json`` and prints Markdown rows for BENCHMARKS.md.
Usage: python benchmarks/bench_train.py [--data ../shared/data] [--epochs 10] [--only cora]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from netweave.scenarios import TrainScenario

HERE = Path(__file__).resolve().parent
TOPOLOGY = str(HERE / "topologies" / "hetero4.yaml")


def graphs(data: Path) -> dict[str, str]:
    return {"cora": "cora",
            "amazon_cs": f"{data}/gnn_benchmark_npz/amazon_cs.npz",
            "coauthor_phy": f"{data}/gnn_benchmark_npz/coauthor_phy.npz"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="graph names to run")
    args = ap.parse_args()
    os.environ.setdefault("NETWEAVE_NO_PROGRESS", "1")
    rows = []
    for name, spec in graphs(args.data).items():
        if args.only and name not in args.only:
            continue
        for workers, comm in ((1, "none"), (4, "allreduce"), (4, "p2p"), (4, "spst")):
            r = TrainScenario(dataset=spec, workers=workers, model="gcn", comm="spst" if comm == "none" else comm,
                              topology=None if workers == 1 else TOPOLOGY, epochs=args.epochs, timeout_s=600).run().summary()
            row = {"graph": name, "workers": workers, "comm": comm, "epochs": args.epochs,
                   **{k: r.get(k) for k in ("median_epoch_s", "median_compute_s", "median_comm_s", "median_sync_s",
                                            "exchange_bytes_per_epoch", "predicted_comm_s", "num_stages",
                                            "final_test_acc")}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    (HERE / "results").mkdir(exist_ok=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "command": "python benchmarks/bench_train.py"}
    (HERE / "results" / "train.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print("\n| graph | workers | exchange | epoch (ms) | compute (ms) | comm (ms) | MB sent / epoch | vs allreduce | test acc |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        base = next(b for b in rows if b["graph"] == row["graph"] and b["comm"] == "allreduce")
        ratio = (f"{base['exchange_bytes_per_epoch'] / row['exchange_bytes_per_epoch']:.1f}x fewer bytes"
                 if row["exchange_bytes_per_epoch"] else "—")
        print(f"| {row['graph']} | {row['workers']} | {row['comm']} | {1e3 * row['median_epoch_s']:.1f} | "
              f"{1e3 * row['median_compute_s']:.1f} | {1e3 * row['median_comm_s']:.1f} | "
              f"{row['exchange_bytes_per_epoch'] / 1e6:.2f} | {ratio} | {row['final_test_acc']:.3f} |")


if __name__ == "__main__":
    main()
