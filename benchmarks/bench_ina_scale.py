"""Benchmark: SwitchGNN's layer at Reddit's full size (issue 20, goal 1).

``netweave ina reddit-like:scale=1.0 --workers 128 --switch-memory M --strategy S --json`` for
every switch memory ``M`` (10 MB and 100 MB, the ends of the paper's Figures 17–18) and strategy
``S``: ``host`` (BNS-GCN's exchange), ``straw`` (§2.3.2's strawman, random order) and ``switchgnn``
(``--blocking auto``, netweave's default; ``--paper`` adds ``--blocking paper``, §3.3's multi-level
METIS, under ``--paper-timeout`` seconds). Each run is a fresh process under ``/usr/bin/time -v``:
wall time and peak RSS against the goal's 10 minutes and 16 GB, and the command's own split of
its time into loading and METIS, the boundary relation and planning, and simulation.

Writes ``benchmarks/results/ina_scale.json`` and ``ina_scale.png`` (stacked time per phase and
peak memory per run, the goal's limits drawn) and prints Markdown rows for BENCHMARKS.md.
Usage: python benchmarks/bench_ina_scale.py [--scale 1.0] [--memories 10MB 100MB] [--paper] [--update]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL_S, GOAL_GB = 600, 16


def load() -> str:
    """``uptime``'s load averages (the machine is shared: wall times are noisy)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(scale: float, memory: str, strategy: str, blocking: str, timeout: int) -> dict:
    """One ``netweave ina`` under ``/usr/bin/time -v``; ``timed_out`` when it ran past ``timeout`` s."""
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "netweave", "ina", f"reddit-like:scale={scale:g}",
           "--workers", "128", "--switch-memory", memory, "--strategy", strategy, "--json"]
    if strategy == "switchgnn":
        cmd += ["--blocking", blocking]
    row = {"memory": memory, "strategy": strategy if strategy != "switchgnn" else f"switchgnn ({blocking})",
           "load_before": load()}
    env = dict(os.environ, NETWEAVE_NO_PROGRESS="1")
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return row | {"timed_out": True, "wall_s": float(timeout), "load_after": load()}
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    r = json.loads(p.stdout)
    row |= {"timed_out": False, "wall_s": sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":")))),
            "peak_rss_gb": rss_kb * 1024 / 1e9, "load_after": load(),
            "load_partition_s": r["load_partition_time_s"], "plan_s": r["plan_time_s"], "sim_s": r["sim_time_s"],
            "cross_edges": r["cross_edges"], "events": r["events"], "num_blocks": r["num_blocks"],
            "traffic_gb": r["traffic_bytes"] / 1e9, "host_traffic_gb": r["host_traffic_bytes"] / 1e9,
            "completion_ms": r["completion_time_s"] * 1e3}
    if "choice" in r:
        c = r["choice"]
        row["chosen"] = f"{c['blocking']}{' overlapped' if c['overlap'] else ''}"
        row["candidates"] = c["candidates"]
    return row


def plot(rows: list[dict], scale: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['strategy']}\n{r['memory']}" for r in rows]
    x = range(len(rows))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.8))
    bottom = [0.0] * len(rows)
    for key, name in (("load_partition_s", "load + METIS"), ("plan_s", "relation + planning"), ("sim_s", "simulation")):
        vals = [r.get(key, 0.0) / 60 for r in rows]
        ax.bar(x, vals, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, r in enumerate(rows):
        ax.text(i, r["wall_s"] / 60, "timed out" if r["timed_out"] else f"{r['wall_s'] / 60:.1f}", ha="center",
                va="bottom", fontsize=8)
        if r["timed_out"]:
            ax.bar(i, r["wall_s"] / 60, color="none", edgecolor="grey", hatch="//")
    ax.axhline(GOAL_S / 60, color="red", ls="--", lw=1, label="goal: 10 min")
    ax.set_ylabel("minutes (wall: the number on top)")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title("time per run")
    bx.bar(x, [r.get("peak_rss_gb", 0.0) for r in rows], color="tab:purple")
    bx.axhline(GOAL_GB, color="red", ls="--", lw=1, label="goal: 16 GB")
    bx.set_ylabel("peak RSS (GB)")
    bx.set_xticks(list(x), labels, fontsize=8)
    bx.legend(fontsize=8)
    bx.set_title("memory per run")
    cross = max((r.get("cross_edges", 0) for r in rows), default=0)
    fig.suptitle(f"netweave ina reddit-like:scale={scale:g} --workers 128 ({cross / 1e6:.1f} M cross edges), "
                 f"{os.cpu_count()}-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--memories", nargs="+", default=["10MB", "100MB"])
    ap.add_argument("--strategies", nargs="+", default=["host", "straw", "switchgnn"])
    ap.add_argument("--paper", action="store_true", help="also --blocking paper (§3.3's METIS levels)")
    ap.add_argument("--paper-timeout", type=int, default=1200)
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--update", action="store_true",
                    help="replace these runs' rows in the existing ina_scale.json, keep the others")
    args = ap.parse_args()
    rows = []
    for memory in args.memories:
        for strategy in args.strategies:
            blockings = ["auto"] + (["paper"] if args.paper else []) if strategy == "switchgnn" else ["auto"]
            for blocking in blockings:
                timeout = args.paper_timeout if blocking == "paper" else 3 * GOAL_S
                rows.append(run(args.scale, memory, strategy, blocking, timeout))
                r = rows[-1]
                print(f"{r['memory']} {r['strategy']}: {r['wall_s']:.0f} s, {r.get('peak_rss_gb', 0):.1f} GB "
                      f"{r.get('chosen', '')}", file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.update and (args.out / "ina_scale.json").exists():
        new = {(r["memory"], r["strategy"]): r for r in rows}
        old = json.loads((args.out / "ina_scale.json").read_text())["rows"]
        rows = [new.pop((r["memory"], r["strategy"]), r) for r in old] + list(new.values())
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "scale": args.scale, "python": sys.version.split()[0]}
    (args.out / "ina_scale.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    plot(rows, args.scale, args.out / "ina_scale.png")
    print("| memory | strategy | wall | peak RSS | load + METIS | relation + plan | simulation | events | blocks "
          "| traffic (GB) | vs host | completion (ms) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["timed_out"]:
            print(f"| {r['memory']} | {r['strategy']} | > {r['wall_s']:.0f} s (stopped) | | | | | | | | | | {r['load_before']} |")
            continue
        print(f"| {r['memory']} | {r['strategy']}{' → ' + r['chosen'] if 'chosen' in r else ''} | {r['wall_s']:.0f} s "
              f"| {r['peak_rss_gb']:.1f} GB | {r['load_partition_s']:.0f} s | {r['plan_s']:.0f} s | {r['sim_s']:.0f} s "
              f"| {r['events'] / 1e6:.1f} M | {r['num_blocks']} | {r['traffic_gb']:.2f} | "
              f"{r['traffic_gb'] / r['host_traffic_gb']:.2f} | {r['completion_ms']:.2f} | {r['load_before']} → {r['load_after']} |")


if __name__ == "__main__":
    main()
