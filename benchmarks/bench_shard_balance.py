"""How evenly a sharded kernel switch's CPUs share the cells, and how many shards a UNIT packet is
handed to (issue 32; ``--switch-cpus N``, beyond the paper).

The busiest shard bounds the exchange, and each hand-over of a packet to a shard is a clone, a
second run of the program and a second conversion of its rows. Two ways to give the map entries
to shards, both worked out from the tables the switch is loaded with (nothing runs):

* ``runs``: runs of 64 entries dealt round robin, with a packet of several units handed to every
  shard (the data plane before 2026-11-27);
* ``ranges``: contiguous ranges of entries holding equal cells (``tables.entry_shards``), a packet
  handed to the shards that hold one of its units' edges (the data plane now).

    python benchmarks/bench_shard_balance.py [--shards 2 4 8] [--out benchmarks/results/shard_balance.json]
    # writes the JSON and a PNG beside it
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from testbed_datasets import DATASETS, each_plans, run_bench

RUN = 64  # entries a run, dealt round robin (the rule before 2026-11-27)


def layer_stats(p: dict, memory: int, shards: int, rule: str) -> dict:
    """One layer of plan ``p``: per block the busiest shard's cells over the mean (cells weighted
    by the block's share), and the shards a UNIT packet is handed to, on average."""
    from netweave.testbed.gnn.plans import edge_ranges
    from netweave.testbed.gnn.tables import copy_masks, edge_shard, entry_of, entry_shards, layer_view, packet_shards, \
        plan_packets, popcount, unit_shards

    v = layer_view(p, memory)
    if rule == "runs":
        entries = entry_of(v, np.flatnonzero(~v.copy))
        table = (np.arange(int(entries.max()) + 1 if entries.size else 0) // RUN) % shards
    else:
        table = entry_shards(v, shards)
    ce, _ = edge_ranges(p["unit_lo"], p["unit_hi"])
    k = v.slot_of_edge[ce]
    sh = edge_shard(v, k, shards, table)
    walked = sh < shards
    B = int(p["num_blocks"])
    cells = np.bincount(v.block[k[walked]] * shards + sh[walked], minlength=B * shards).reshape(B, shards)
    busiest = float((cells.max(axis=1) * shards).sum() / max(1, cells.sum()))  # Σ_b max_s / Σ_b mean_s
    first, rows = plan_packets(p, v, copy_masks(p, v))
    handed = popcount(packet_shards(first, unit_shards(p, v, shards, table)))
    if rule == "runs":
        handed = np.where(rows > 1, shards, handed)  # a packet of several units went to every shard
    return {"dim": v.dim, "cells": int(cells.sum()), "busiest_over_mean": busiest,
            "packets": int(first.size), "shards_a_packet": float(handed.mean()) if handed.size else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--shards", nargs="*", type=int, default=[2, 4, 8])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--memory", type=int, default=10_000_000)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "shard_balance.json"))
    args = ap.parse_args()
    results = {"workers": args.workers, "memory_bytes": args.memory, "hidden": args.hidden, "rows": []}
    print("| dataset | layer (values a row) | shards | busiest shard's cells / mean: runs → ranges "
          "| shards a UNIT packet goes to: runs → ranges |")
    print("|---|---|---|---|---|")
    for name, plans in each_plans(args.datasets, args.workers, args.memory, args.hidden, 5):
        for layer, p in enumerate(plans):  # forward layers; backward ones mirror them
            for shards in args.shards:
                old, new = (layer_stats(p, args.memory, shards, rule) for rule in ("runs", "ranges"))
                results["rows"].append({"dataset": name, "layer": layer, "shards": shards, "runs": old, "ranges": new})
                print(f"| {name} | {layer} ({new['dim']}) | {shards} | {old['busiest_over_mean']:.2f} → "
                      f"**{new['busiest_over_mean']:.2f}** | {old['shards_a_packet']:.2f} → "
                      f"**{new['shards_a_packet']:.2f}** |", flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    plot(results, Path(args.out).with_suffix(".png"))
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.png')}")


def plot(results: dict, path: Path) -> None:
    """Per dataset and layer, against the shards: the busiest shard's cells over the mean, and the
    shards a UNIT packet goes to, under both rules."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    keys = sorted({(r["dataset"], r["layer"], r["ranges"]["dim"]) for r in rows})
    for (name, layer, dim), colour in zip(keys, plt.rcParams["axes.prop_cycle"].by_key()["color"]):
        mine = sorted((r for r in rows if (r["dataset"], r["layer"]) == (name, layer)), key=lambda r: r["shards"])
        x = [r["shards"] for r in mine]
        for ax, key in zip(axes, ("busiest_over_mean", "shards_a_packet")):
            ax.plot(x, [r["runs"][key] for r in mine], "--o", color=colour, alpha=0.6)
            ax.plot(x, [r["ranges"][key] for r in mine], "-o", color=colour,
                    label=f"{name}, layer {layer} ({dim} values a row)")
    axes[0].set_ylabel("busiest shard's cells / the mean's")
    axes[1].set_ylabel("shards a UNIT packet is handed to")
    axes[1].plot(x, x, ":", color="grey", label="every shard")
    for ax in axes:
        ax.set_xlabel("shards (switch CPUs)")
        ax.set_xticks(sorted({r["shards"] for r in rows}))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, title="solid: ranges of equal cells (now); dashed: runs of 64 (before)",
                   title_fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Sharded kernel switch, {results['workers']} workers, {results['memory_bytes'] / 1e6:g} MB, "
                 f"{results['hidden']} hidden (from the tables; nothing runs)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    run_bench(main, "bench_shard_balance")
