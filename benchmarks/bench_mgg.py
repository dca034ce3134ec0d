"""Benchmark (GPU): MGG's kernel against the non-overlapped variant, PyTorch's sparse product and an
``index_add`` reference, plus the tuner against an exhaustive sweep (issue 8).

Graphs: ``reddit-like`` and the larger real graphs of ``../shared/data``, at D = 16 and 64, with the
rows and embeddings split over ``--gpus`` simulated GPUs on one device. The "remote" shards are read
from pinned host memory (zero-copy), which is what a single GPU can exercise. Reported:
- median latencies;
- the bandwidth MGG achieves (embedding bytes read / time) against the device's peak (``--peak-gbs``);
- the tuner's choice, its iterations, and its gap to the exhaustive best.

Needs a CUDA GPU (run it through the ``device`` tool). Writes ``benchmarks/results/mgg.json``.
Usage: python benchmarks/bench_mgg.py [--data ../shared/data] [--scale 0.1] [--gpus 4] [--peak-gbs 3350]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--peak-gbs", type=float, default=3350.0, help="device memory bandwidth (H100 SXM: 3350 GB/s)")
    ap.add_argument("--no-exhaustive", action="store_true")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("bench_mgg.py needs a CUDA GPU; on this machine run it through the device tool")
    from netweave.graph import load_dataset
    from netweave.kernels.bench import bench_kernels

    graphs = {"reddit-like": f"reddit-like:scale={args.scale}",
              "amazon_cs": f"{args.data}/gnn_benchmark_npz/amazon_cs.npz",
              "coauthor_phy": f"{args.data}/gnn_benchmark_npz/coauthor_phy.npz",
              "ego_twitter": f"snap:{args.data}/ego_twitter_gstest/twitter_e_*.csv.gz"}
    rows = []
    for name, spec in graphs.items():
        g = load_dataset(spec)
        for dim in (16, 64):
            r = bench_kernels(g, args.gpus, dim, do_tune=True, exhaustive=not args.no_exhaustive)
            r |= {"graph": name, "peak_gbs": args.peak_gbs, "bandwidth_share": r["mgg_bandwidth_gbs"] / args.peak_gbs}
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "tuner_path"}), flush=True)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "mgg.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
