"""Benchmark: data-parallel LeNet-5 through the emulated star, per aggregation scheme (issue 18, part 4).

For 2 and 4 workers (two fp8, the rest fp16, as PAHInA §VI-B; fp32 for gloo's ring, which has no
lower precision), at scale 0.1 of the star's 100 Gb/s links, each scheme trains ``--epochs``
epochs of scikit-learn's digits in the same invocation:

* ``pahina/xdp``: each precision aggregated by the XDP program at the INA switch;
* ``pahina/user``: the same in the switch agent's userspace reference;
* ``ps``: every gradient to the PS, which sums them (no INA);
* ``ring``: gloo's ring all-reduce among the workers (no PS).

Reported per scheme: the median epoch time after the first (warm-up), samples/s, the share of the
epoch spent aggregating, the final test accuracy and, for INA, its efficiency (the share of the
gradient packets the switch aggregated). Writes ``benchmarks/results/testbed.json`` and prints a
Markdown table. Needs root, clang, libbpf, torch and scikit-learn.
Usage: sudo python benchmarks/bench_testbed.py [--epochs 4] [--workers 2 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from pathlib import Path

from netweave.testbed.run import train_on_testbed

HERE = Path(__file__).resolve().parent
SCHEMES = (("pahina/xdp", "pahina", "xdp"), ("pahina/user", "pahina", "user"), ("ps", "ps", "xdp"),
           ("ring", "ring", "xdp"))


def precisions(workers: int, scheme: str) -> list[str]:
    return ["fp32"] * workers if scheme == "ring" else (["fp8"] * 2 + ["fp16"] * (workers - 2))[:workers]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    args = ap.parse_args()
    rows = []
    for n in args.workers:
        for name, routing, plane in SCHEMES:
            r = train_on_testbed(precisions(n, name), routing=routing, dataplane=plane, epochs=args.epochs, scale=0.1)
            steady = r.epochs[1:] or r.epochs
            row = {"workers": n, "scheme": name, "precisions": precisions(n, name),
                   "epoch_s": statistics.median(e["epoch_s"] for e in steady),
                   "samples_per_s": statistics.median(e["samples_per_s"] for e in steady),
                   "aggregation_share": statistics.median(e["comm_s"] / e["epoch_s"] for e in steady),
                   "final_test_acc": r.epochs[-1]["test_acc"], "final_loss": r.epochs[-1]["loss"]}
            if r.agent is not None:
                c = r.agent["counters"]
                row["ina_efficiency"] = c["accepted"] / max(c["accepted"] + c["passed_full"], 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
            "command": f"sudo python benchmarks/bench_testbed.py --epochs {args.epochs} --workers "
                       + " ".join(map(str, args.workers)), "load_1min": os.getloadavg()[0], "scale": 0.1}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "testbed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"\n{meta['command']} — {meta['machine']}, load {meta['load_1min']:.1f}, scale 0.1\n")
    print("| workers | scheme | epoch (s) | samples/s | aggregating | INA efficiency | test accuracy |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ina = f"{100 * r['ina_efficiency']:.1f} %" if "ina_efficiency" in r else "–"
        print(f"| {r['workers']} | {r['scheme']} | {r['epoch_s']:.2f} | {r['samples_per_s']:,.0f} | "
              f"{100 * r['aggregation_share']:.0f} % | {ina} | {r['final_test_acc']:.3f} |")


if __name__ == "__main__":
    main()
