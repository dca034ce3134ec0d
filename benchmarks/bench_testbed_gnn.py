"""GCN training through the emulated SwitchGNN switch against the peer-to-peer (BNS-GCN) exchange
on the same emulated star (switchgnn.txt §5, issue 19).

For each dataset, 8 workers train GCN (``--layers`` layers, ``--hidden`` units, METIS) on
``star:n=8`` with every link at ``--gbps`` (HTB on the veths), once with ``--exchange ina`` (the
switch agent multicasts and aggregates per the SwitchGNN plan, ``--memory``, §3.3 blocks) and once
with ``p2p``. Per run: the epoch time (the slowest worker; median over the epochs after the first),
the exchange time, the exchange bytes the workers sent and received (the transports' own count,
headers included), the veths' byte counters over the whole run (TCP/IP included), the switch's
counters, and the largest difference of the final logits from single-process training.

    sudo .venv/bin/python benchmarks/bench_testbed_gnn.py            # results/testbed_gnn.json + .png
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

DATASETS = {"amazon_cs": "/work/shared/data/gnn_benchmark_npz/amazon_cs.npz", "reddit-like": "reddit-like:scale=0.02"}
RESULTS = Path(__file__).parent / "results"


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_one(spec: str, exchange: str, args) -> dict:
    from netweave.testbed.gnn import train_gnn_on_testbed

    before, t0 = load(), time.perf_counter()
    r = train_gnn_on_testbed(spec, workers=args.workers, exchange=exchange, memory_bytes=args.memory, gbps=args.gbps,
                             epochs=args.epochs, hidden=args.hidden, layers=args.layers, blocking=args.blocking,
                             seed=args.seed, timeout_s=300)
    s = r.summary()
    later = r.epochs[1:]
    return {"exchange": exchange, "load_before": before, "load_after": load(), "wall_s": time.perf_counter() - t0,
            "median_epoch_s": s["median_epoch_s"], "median_exchange_s": s["median_exchange_s"],
            "median_exchange_sent_bytes": s["median_exchange_bytes"],
            "median_exchange_received_bytes": sorted(e["exchange_received_bytes"] for e in later)[len(later) // 2],
            "max_logit_diff": s["max_logit_diff"], "veth_run_bytes": r.veth, "switch": r.switch,
            "planned": r.planned, "epochs": r.epochs}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rates = list(results["rates"])
    fig, axes = plt.subplots(len(rates), 3, figsize=(13, 3.6 * len(rates)), squeeze=False)
    width = 0.38
    for row, rate in zip(axes, rates):
        data = results["rates"][rate]["datasets"]
        names = list(data)
        x = np.arange(len(names))
        for i, ex in enumerate(("p2p", "ina")):
            runs = [data[n][ex] for n in names]
            label = "p2p (BNS-GCN)" if ex == "p2p" else "INA (SwitchGNN switch)"
            row[0].bar(x + (i - 0.5) * width, [r["median_epoch_s"] for r in runs], width, label=label)
            row[1].bar(x + (i - 0.5) * width, [r["median_exchange_s"] for r in runs], width, label=label)
            row[2].bar(x + (i - 0.5) * width,
                       [(r["median_exchange_sent_bytes"] + r["median_exchange_received_bytes"]) / 1e6 for r in runs],
                       width, label=label)
        for ax, title in zip(row, ("epoch time (s, median)", "exchange s per worker (median)",
                                   "exchange MB per epoch (up + down)")):
            ax.set_xticks(x, names)
            ax.set_title(f"{float(rate):g} Gb/s links: {title}", fontsize=9)
            ax.legend(fontsize=8)
    fig.suptitle(f"GCN ({results['layers']} layers, {results['hidden']} hidden), {results['workers']} workers on an "
                 f"emulated star (netns + HTB), switch memory {results['memory_bytes'] / 1e6:g} MB "
                 f"({results['blocking']} blocks)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--gbps", type=float, nargs="*", default=[0.025, 0.1])
    ap.add_argument("--memory", type=int, default=10_000_000)
    ap.add_argument("--blocking", default="paper")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS / "testbed_gnn.json"))
    args = ap.parse_args()
    results = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores", "workers": args.workers,
               "memory_bytes": args.memory, "blocking": args.blocking, "epochs": args.epochs,
               "hidden": args.hidden, "layers": args.layers, "rates": {}}
    rates = args.gbps
    for gbps in rates:
        args.gbps = gbps
        results["rates"][str(gbps)] = run_rate(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    plot(results, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


def run_rate(args) -> dict:
    results = {"gbps": args.gbps, "datasets": {}}
    for name in args.datasets:
        spec = DATASETS.get(name, name)
        results["datasets"][name] = {"spec": spec}
        for exchange in ("p2p", "ina"):
            r = run_one(spec, exchange, args)
            results["datasets"][name][exchange] = r
            print(f"{args.gbps:g} Gb/s {name} {exchange}: epoch {r['median_epoch_s']:.3f} s, exchange {r['median_exchange_s']:.3f} s, "
                  f"sent {r['median_exchange_sent_bytes'] / 1e6:.1f} MB, received "
                  f"{r['median_exchange_received_bytes'] / 1e6:.1f} MB, logits {r['max_logit_diff']:.1e}, "
                  f"load {r['load_before']} -> {r['load_after']}", flush=True)
        p, i = results["datasets"][name]["p2p"], results["datasets"][name]["ina"]
        results["datasets"][name]["speedup"] = p["median_epoch_s"] / i["median_epoch_s"]
        results["datasets"][name]["byte_ratio"] = ((i["median_exchange_sent_bytes"] + i["median_exchange_received_bytes"])
                                                   / (p["median_exchange_sent_bytes"] + p["median_exchange_received_bytes"]))
    return results


if __name__ == "__main__":
    main()
