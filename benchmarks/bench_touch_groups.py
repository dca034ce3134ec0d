"""What the kernel switch adds a UNIT packet, against the rows a group of its subsets' sums spans
(issue 32; ``touches.GROUP``, beyond the paper).

A shard adds into a destination's cell once a packet and group: the sum of the group's rows that
feed it, made once a packet among the sums of the subsets of two or more rows that some destination
needs (closed under dropping the lowest row: each is one addition). Per dataset and forward layer,
for groups of 1, 2, 4 and 8 rows, worked out here from the plan's edges (nothing runs): the touches
(additions into cells, each with its walk), the subsets' sums made, and the lane additions of both
(a row's values rounded up to 16 lanes). The row of ``touches.GROUP`` is checked against the tables
the switch is loaded with (``tables.switch_tables``): the same touches and subsets, or the bench fails.

    python benchmarks/bench_touch_groups.py [--shards 2] [--out benchmarks/results/touch_groups.json]
    # writes the JSON and a PNG beside it
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from testbed_datasets import DATASETS, each_plans, run_bench

SIZES = (1, 2, 4, 8)


def group_counts(pk: np.ndarray, sh: np.ndarray, dest: np.ndarray, row: np.ndarray, group: int) -> dict:
    """Touches and subsets' sums of one layer with groups of ``group`` rows, from its aggregated
    edges ``(E,)``: their packet, shard, destination slot and row within the packet."""
    from netweave.testbed.gnn.tables import popcount

    g = row // group
    key = np.stack([pk, sh, g, dest])
    uniq, inverse = np.unique(key, axis=1, return_inverse=True)
    m = np.zeros(uniq.shape[1], np.int64)
    np.bitwise_or.at(m, inverse.ravel(), np.left_shift(1, row % group))
    subsets = np.unique(np.stack([uniq[0], uniq[1], uniq[2], m])[:, popcount(m) >= 2], axis=1)
    made = [subsets]
    while subsets.size:  # each made from the subset without its lowest row, if that has two rows or more
        low = subsets[3] & (subsets[3] - 1)
        subsets = np.unique(np.stack([subsets[0], subsets[1], subsets[2], low])[:, popcount(low) >= 2], axis=1)
        made.append(subsets)
    return {"group": group, "touches": int(uniq.shape[1]), "subsets": int(np.unique(np.concatenate(made, axis=1), axis=1).shape[1])}


def layer_rows(p: dict, memory: int, shards: int, tables_layer: dict) -> list[dict]:
    """Per group size, one layer's counts and lane additions; the row of ``touches.GROUP`` checked."""
    from netweave.testbed.gnn.fixed import LANES
    from netweave.testbed.gnn.plans import edge_ranges
    from netweave.testbed.gnn.tables import copy_masks, edge_shard, entry_shards, layer_view, plan_packets
    from netweave.testbed.gnn.touches import GROUP

    v = layer_view(p, memory)
    first, rows = plan_packets(p, v, copy_masks(p, v))
    packet_of = np.repeat(np.arange(first.size), rows)
    ce, ue = edge_ranges(p["unit_lo"], p["unit_hi"])
    k = v.slot_of_edge[ce]
    agg = ~v.copy[k]
    ue, k = ue[agg], k[agg]
    sh = edge_shard(v, k, shards, entry_shards(v, shards))
    pk = packet_of[ue]
    lanes = LANES * -(-v.dim // LANES)
    out = []
    for group in SIZES:
        c = group_counts(pk, sh, k, ue - first[pk], group)
        c |= {"dim": v.dim, "lanes": lanes, "edges": int(ue.size), "packets": int(first.size),
              "lane_additions": (c["touches"] + c["subsets"]) * lanes}
        if group == GROUP:
            if (c["touches"], c["subsets"]) != (tables_layer["touches"], tables_layer["subsets"]):
                raise SystemExit(f"groups of {group}: {c['touches']} touches and {c['subsets']} subsets here, "
                                 f"{tables_layer['touches']} and {tables_layer['subsets']} in the switch's tables")
            c["checked_against_tables"] = True
        out.append(c)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--memory", type=int, default=10_000_000)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "touch_groups.json"))
    args = ap.parse_args()
    from netweave.testbed.gnn.tables import popcount, switch_tables

    results = {"workers": args.workers, "memory_bytes": args.memory, "hidden": args.hidden, "shards": args.shards,
               "rows": []}
    print("| dataset | layer (values a row) | rows a group | touches / edges | subsets' sums | lane additions |")
    print("|---|---|---|---|---|---|")
    for name, plans in each_plans(args.datasets, args.workers, args.memory, args.hidden, 6):
        t = switch_tables(plans, args.memory, shards=args.shards)  # forward layers; backward ones mirror them
        for layer, (p, L) in enumerate(zip(plans, t.layers)):
            pk = t.packets[L["packet_base"]:][:L["packets"]]
            made = {"touches": int(L["touches"]), "subsets": int(popcount(pk["used"].ravel()).sum())}
            for c in layer_rows(p, args.memory, args.shards, made):
                results["rows"].append({"dataset": name, "layer": layer, **c})
                print(f"| {name} | {layer} ({c['dim']}) | {c['group']} | {c['touches']:,} / {c['edges']:,} = "
                      f"{c['touches'] / max(1, c['edges']):.2f} | {c['subsets']:,} | {c['lane_additions'] / 1e6:.1f} M |",
                      flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    plot(results, Path(args.out).with_suffix(".png"))
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.png')}")


def plot(results: dict, path: Path) -> None:
    """Per dataset and layer, against the rows a group: touches and subsets' sums, and the lane
    additions of both, relative to groups of one row (each edge a touch)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    keys = sorted({(r["dataset"], r["layer"], r["dim"]) for r in rows})
    for (name, layer, dim), colour in zip(keys, plt.rcParams["axes.prop_cycle"].by_key()["color"]):
        mine = sorted((r for r in rows if (r["dataset"], r["layer"]) == (name, layer)), key=lambda r: r["group"])
        x, edges = [r["group"] for r in mine], mine[0]["edges"]
        label = f"{name}, layer {layer} ({dim} values a row)"
        axes[0].plot(x, [r["touches"] / edges for r in mine], "-o", color=colour, label=label)
        axes[0].plot(x, [r["subsets"] / edges for r in mine], ":s", color=colour, alpha=0.7)
        axes[1].plot(x, [r["lane_additions"] / mine[0]["lane_additions"] for r in mine], "-o", color=colour, label=label)
    axes[0].set_ylabel("touches (solid), subsets' sums (dotted) / edges")
    axes[1].set_ylabel("lane additions / groups of one row's")
    for ax in axes:
        ax.set_xlabel("rows a group (subsets' sums made once a packet)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(SIZES), [str(s) for s in SIZES])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Kernel switch's additions a UNIT packet, {results['workers']} workers, "
                 f"{results['memory_bytes'] / 1e6:g} MB, {results['hidden']} hidden, {results['shards']} shards "
                 "(from the tables; nothing runs)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    run_bench(main, "bench_touch_groups")
