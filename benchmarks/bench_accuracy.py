"""Benchmark: netweave's trainer against an outside PyG reference, same datasets, same seeds (issue 15).

For every (dataset, model) case and each seed, in one invocation: ``pyg_reference.train`` (PyG's
reader, layers, dropout and normalisation; see that file) and ``netweave train`` with its default
recipe (one worker — N workers give one worker's logits, ``tests/runtime/test_trainer.py``).
Reported: mean ± std over seeds of the test accuracy after the last epoch and at the best
validation epoch, the gap netweave − PyG, and how many seeds collapsed (netweave's own warning,
and for both sides a final loss ≥ 0.99 ln C).

Goals (issue 15): Cora ≥ 81.5 %, CiteSeer ≥ 70 %, Amazon Photo / Computers with GCN and
GraphSAGE within 1 point of PyG, no collapsed seed.

Writes ``benchmarks/results/accuracy.json`` and prints the Markdown table for BENCHMARKS.md.
Usage: python benchmarks/bench_accuracy.py [--data ../shared/data] [--seeds 5] [--only cora/gcn ...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pyg_reference  # noqa: E402

from netweave.graph import load_dataset  # noqa: E402
from netweave.scenarios import TrainScenario  # noqa: E402

CASES = [("cora", "gcn"), ("citeseer", "gcn"), ("amazon_photo", "gcn"), ("amazon_photo", "sage"),
         ("amazon_cs", "gcn"), ("amazon_cs", "sage")]


def load_both(name: str, data: Path):
    """(netweave spec, PyG Data) for one dataset; checks both read the same vertices and labels."""
    if name in ("cora", "citeseer"):
        spec = f"planetoid:{data / 'planetoid'}:{name}"
        reference = pyg_reference.planetoid(data / "planetoid", {"cora": "Cora", "citeseer": "CiteSeer"}[name])
    else:
        spec = str(data / "gnn_benchmark_npz" / f"{name}.npz")
    graph = load_dataset(spec)
    if name not in ("cora", "citeseer"):
        reference = pyg_reference.gnn_benchmark(Path(spec), (graph.train_mask, graph.val_mask, graph.test_mask))
    same = (np.array_equal(reference.y.numpy(), graph.labels)
            and all(np.array_equal(getattr(reference, f"{k}_mask").numpy(), getattr(graph, f"{k}_mask"))
                    for k in ("train", "val", "test")))
    if not same:
        raise SystemExit(f"{name}: PyG and netweave read different labels or splits; the comparison would be void")
    return spec, reference, graph


def mean_std(values: list[float]) -> tuple[float, float]:
    return float(np.mean(values)), float(np.std(values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--only", nargs="*", help="cases as DATASET/MODEL, e.g. cora/gcn")
    args = ap.parse_args()
    os.environ.setdefault("NETWEAVE_NO_PROGRESS", "1")
    rows = []
    for name, model in CASES:
        if args.only and f"{name}/{model}" not in args.only:
            continue
        spec, reference, graph = load_both(name, args.data)
        uniform = math.log(graph.num_classes)
        runs = {"pyg": [], "netweave": []}
        t0 = time.perf_counter()
        for seed in range(args.seeds):
            ref = pyg_reference.train(reference, model, seed, args.epochs)
            runs["pyg"].append({"final": ref.final_test_acc, "best": ref.test_acc_at_best_val,
                                "collapsed": ref.final_loss >= 0.99 * uniform})
            r = TrainScenario(dataset=spec, workers=1, model=model, epochs=args.epochs, seed=seed).run()
            runs["netweave"].append({"final": r.final_test_acc, "best": r.test_acc_at_best_val,
                                     "collapsed": r.collapsed or r.final_loss >= 0.99 * uniform})
            print(f"{name}/{model} seed {seed}: pyg {ref.final_test_acc:.4f}  netweave {r['final_test_acc']:.4f}",
                  file=sys.stderr, flush=True)
        row = {"dataset": name, "model": model, "seeds": args.seeds, "epochs": args.epochs,
               "wall_s": time.perf_counter() - t0}
        for side, rs in runs.items():
            row[f"{side}_final_mean"], row[f"{side}_final_std"] = mean_std([x["final"] for x in rs])
            row[f"{side}_best_val_mean"], row[f"{side}_best_val_std"] = mean_std([x["best"] for x in rs])
            row[f"{side}_collapsed"] = sum(x["collapsed"] for x in rs)
            row[f"{side}_final_per_seed"] = [x["final"] for x in rs]
        row["gap_points"] = 100 * (row["netweave_final_mean"] - row["pyg_final_mean"])
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("per_seed")}), flush=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_1min": os.getloadavg()[0],
            "command": "python benchmarks/bench_accuracy.py " + " ".join(sys.argv[1:])}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "accuracy.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print("\n| dataset | model | PyG final (%) | netweave final (%) | gap (points) | PyG at best val | "
          "netweave at best val | collapsed (PyG / netweave) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        def pct(side, key):
            return f"{100 * r[f'{side}_{key}_mean']:.1f} ± {100 * r[f'{side}_{key}_std']:.1f}"
        print(f"| {r['dataset']} | {r['model']} | {pct('pyg', 'final')} | {pct('netweave', 'final')} | "
              f"{r['gap_points']:+.1f} | {pct('pyg', 'best_val')} | {pct('netweave', 'best_val')} | "
              f"{r['pyg_collapsed']} / {r['netweave_collapsed']} |")


if __name__ == "__main__":
    main()
