"""SwitchGNN's congestion control on the testbed under background traffic (switchgnn.txt §3.4 and
§6.5, Figure 19; issue 32).

8 workers train GCN (2 layers, 128 hidden) on ``star:n=8`` with every link at ``--gbps`` (HTB on the
veths), the switch's kernel data plane with ``--memory`` of aggregators, while every host also sends
background flows to the others (Poisson arrivals, Facebook-Hadoop sizes, at ``--loads`` × the link
rate: :mod:`netweave.testbed.net.background`). Per load, in one invocation: INA without congestion
control (the units go up as fast as the host's link takes them), INA with it (the switch's ports
ECN-mark at ``--ecn-kb`` KB of queue, a CNP halves the sender's rate, which grows back additively:
``--congestion-control``), each with §3.4's timer alone and with END pulls (beyond the paper: a
worker pulls a block's missing cells as soon as every worker's END came), and what users would
otherwise run, p2p (BNS-GCN over TCP, whose own
congestion control reacts to the same queues by loss and delay). Every switch port's queue is
``--switch-buffer-kb`` (a byte FIFO: 256 KB, 20 ms at 0.1 Gb/s; 0: the testbed's 10,000
packets, 1.2-1.6 s). Per run: the epoch time (median of
the epochs after the first), the pulls and resends (§3.4's loss recovery), the marks, CNPs and rate
cuts, the background bytes actually sent, what bound each epoch (the testbed's accounting), the
largest logit difference from single-process training, and ``uptime`` before and after.

    sudo .venv/bin/python benchmarks/bench_testbed_gnn_cc.py     # results/testbed_gnn_cc.json + .png
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_testbed_gnn import DATASETS, RESULTS, run_one

from netweave.testbed.gnn.wire import GRAD_CHUNK

VARIANTS = {"p2p": ("p2p", False, False), "ina": ("ina", False, False), "ina_cc": ("ina", True, False),
            "ina_fast": ("ina", False, True), "ina_cc_fast": ("ina", True, True)}  # exchange, ECN, END pulls
LABELS = {"p2p": "p2p (BNS-GCN, TCP)", "ina": "INA, §3.4 timer, no congestion control",
          "ina_cc": "INA + ECN rate control (§3.4)", "ina_fast": "INA + END pulls (beyond the paper)",
          "ina_cc_fast": "INA + ECN + END pulls"}
COLORS = dict(zip(VARIANTS, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")))


def totals(r: dict) -> dict:
    """The workers' transport counters summed (the lowest rate: the smallest), per run."""
    out: dict = {}
    for t in r["transport"]:
        for k, v in t.items():
            out[k] = min(out.get(k, v), v) if k == "lowest_rate_kbit" else out.get(k, 0) + v
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = sorted(results["loads"], key=float)
    kb = results.get("switch_buffer_kb")
    buffer = f"{kb:g} KB" if kb else "10,000 packets"
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    for key, label in LABELS.items():
        if any(key not in results["loads"][x] for x in loads):
            continue
        runs = [results["loads"][x][key] for x in loads]
        a.plot([float(x) for x in loads], [r["median_epoch_s"] for r in runs], "o-", label=label, color=COLORS[key])
        if key != "p2p":
            b.plot([float(x) for x in loads], [totals(r).get("pulled_cells", 0) / len(r["epochs"]) for r in runs], "o-",
                   label=f"{label}: cells pulled", color=COLORS[key])
    cc = [results["loads"][x]["ina_cc"] for x in loads if "ina_cc" in results["loads"][x]]
    if len(cc) == len(loads):
        b.plot([float(x) for x in loads], [totals(r).get("rate_cuts", 0) / len(r["epochs"]) for r in cc], "s--",
               label="INA + ECN rate control: rate cuts", color=COLORS["ina_cc"])
    a.set_xlabel("background load (fraction of the link rate)")
    a.set_ylabel("epoch time (s, median of epochs 2+)")
    a.set_ylim(bottom=0)
    b.set_xlabel("background load (fraction of the link rate)")
    b.set_ylabel("per epoch, all workers")
    b.set_yscale("symlog")
    a.legend(fontsize=8)
    b.legend(fontsize=8)
    fig.suptitle(f"{results['dataset']}, {results['workers']} workers, {results['gbps']:g} Gb/s links, switch memory "
                 f"{results['memory_bytes'] / 1e6:g} MB, ECN threshold {results['ecn_kb']:g} KB, switch buffer {buffer} a "
                 "port;\nbackground: TCP flows, Poisson arrivals, Hadoop sizes", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="amazon_cs")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--gbps", type=float, default=0.1)
    ap.add_argument("--loads", type=float, nargs="*", default=[0.0, 0.3, 0.6])
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--ecn-kb", type=float, default=64.0)
    ap.add_argument("--switch-buffer-kb", type=float, default=256.0,
                    help="every switch port's queue (0: the testbed's 10,000 packets)")
    ap.add_argument("--memory", type=int, default=10_000_000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--replot", action="store_true", help="only redraw the PNG from the JSON")
    ap.add_argument("--out", default=str(RESULTS / "testbed_gnn_cc.json"))
    args = ap.parse_args()
    out = Path(args.out)
    if args.replot:
        plot(json.loads(out.read_text()), out.with_suffix(".png"))
        return
    args.layers, args.blocking, args.overlap = 2, "paper", False
    args.aggregate_first, args.grad_chunk, args.no_pin_switch = False, GRAD_CHUNK, True  # as measured (1bb9960)
    spec = DATASETS.get(args.dataset, args.dataset)
    results = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores", "dataset": args.dataset,
               "workers": args.workers, "gbps": args.gbps, "memory_bytes": args.memory, "ecn_kb": args.ecn_kb,
               "switch_buffer_kb": args.switch_buffer_kb,
               "epochs": args.epochs, "hidden": args.hidden, "layers": 2, "transform_first": not args.aggregate_first,
               "grad_chunk": args.grad_chunk, "pin_switch": not args.no_pin_switch, "loads": {}}
    for x in args.loads:
        row = results["loads"][str(x)] = {}
        for key in args.variants:
            exchange, cc, fast = VARIANTS[key]
            r = run_one(spec, exchange, args, "xdp", congestion_control=cc, ecn_kb=args.ecn_kb, background=x,
                        switch_buffer_kb=args.switch_buffer_kb, fast_pull=fast)
            r["totals"] = totals(r)
            sent = sum(b["sent_bytes"] for b in r["background"])
            secs = max([b["seconds"] for b in r["background"]] or [0])
            r["background_gbps_per_host"] = sent * 8 / secs / 1e9 / args.workers if secs else 0.0
            row[key] = r
            t = r["totals"]
            print(f"load {x:g} {key}: epoch {r['median_epoch_s']:.3f} s, exchange {r['median_exchange_s']:.3f} s, "
                  f"pulls {t.get('pulls', 0)} ({t.get('fast_pulls', 0)} on END, {t.get('pulled_cells', 0)} cells), marked {t.get('marked', 0)}, "
                  f"cuts {t.get('rate_cuts', 0)}, lowest {t.get('lowest_rate_kbit', 0)} kbit/s, background "
                  f"{r['background_gbps_per_host']:.4f} Gb/s a host, logits {r['max_logit_diff']:.1e}, bound {r['bound']}, "
                  f"load {r['load_before']} -> {r['load_after']}", flush=True)
            out.write_text(json.dumps(results, indent=1))  # what is done so far
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    plot(results, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
