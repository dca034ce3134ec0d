"""Benchmark: ``graph_allgather`` against gloo's own ``batch_isend_irecv`` of exactly the same
messages, on loopback (issue 20, goal 3: within 1.2× of gloo).

For each dataset, worker count and plan (``p2p``, ``spst`` on ``star:n=W``), ``W`` processes of
``allgather_rank.py --reference`` run on 127.0.0.1 (one thread each); each times the allgather
(forward: stage gathers, sends, receives, scatters) and the same stages' messages as preallocated
tensors through gloo (no gathers, no scatters, no allocation) in the same process group; medians
of ``--repeats`` of the slowest rank. With ``--baseline-rev REV`` the same configuration runs on
that revision too (a temporary git worktree, its own ``allgather_rank.py``), back to back with
this tree's, so before and after share the machine's load; ``--schedules`` and ``--transports``
time this tree's ``graph_allgather`` with each schedule and transport (``auto``: shared memory
between these local ranks; ``group``: gloo's point-to-point ops). Writes ``benchmarks/results/allgather_loopback.json``.
Usage: python benchmarks/bench_allgather_loopback.py [--datasets amazon_cs] [--workers 2 4] [--widths 64 256]
       [--schedules batch rounds] [--transports auto group] [--baseline-rev REV]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from netweave.runtime.launcher import free_port

HERE = Path(__file__).resolve().parent


def run(dataset: str, world: int, comm: str, widths: list[int], repeats: int, schedule: str | None = None,
        tree: Path = HERE.parent, transport: str | None = None) -> dict:
    port = free_port()
    procs = []
    extra = ([] if schedule is None else ["--schedule", schedule]) + ([] if transport is None else ["--transport", transport])
    for rank in range(world):
        env = os.environ | {"RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                            "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
                            "PYTHONPATH": str(tree / "src")}
        procs.append(subprocess.Popen([sys.executable, str(tree / "benchmarks" / "allgather_rank.py"), dataset,
                                       "--comm", comm, "--topology", f"star:n={world}", "--widths", *map(str, widths),
                                       "--repeats", str(repeats), "--reference", *extra],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=1800) for p in procs]
    for p, (_, err) in zip(procs, outs):
        if p.returncode:
            raise SystemExit(f"a rank failed: {err.strip().splitlines()[-1:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=[str(HERE.parent.parent / "shared/data/gnn_benchmark_npz/amazon_cs.npz")])
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--comms", nargs="+", default=["p2p", "spst"])
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--schedules", nargs="+", choices=("batch", "rounds"), default=["batch"])
    ap.add_argument("--transports", nargs="+", choices=("auto", "shm", "group"), default=["auto"],
                    help="this tree's graph_allgather transports to time (each with every schedule)")
    ap.add_argument("--baseline-rev", help="also run this git revision (before), back to back with this tree")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        if args.baseline_rev:
            base = Path(tmp) / "base"
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(base), args.baseline_rev],
                           check=True, capture_output=True)
        try:
            rows = measure(args, base)
        finally:
            if base is not None:
                subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(base)],
                               capture_output=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_1min": os.getloadavg()[0],
            "command": "python benchmarks/bench_allgather_loopback.py " + " ".join(sys.argv[1:])}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "allgather_loopback.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    variants = (["before"] if args.baseline_rev else []) + [name for name, _, _ in this_tree(args)]
    print("\n| dataset | workers | plan | D | " + " | ".join(f"{v} (ms)" for v in variants)
          + " | gloo (ms) | " + " | ".join(f"ratio {v}" for v in variants) + " | load |")
    print("|---|---|---|---|" + "---|" * (2 * len(variants) + 2))
    for r in rows:
        gloo = sorted(r["gloo_s"].values())
        print(f"| {r['dataset']} | {r['workers']} | {r['comm']} | {r['width']} | "
              + " | ".join(f"{1e3 * r['allgather_s'][v]:.2f}" for v in variants)
              + f" | {1e3 * gloo[0]:.2f}–{1e3 * gloo[-1]:.2f} | "
              + " | ".join(f"{r['allgather_s'][v] / r['gloo_s'][v]:.2f}×" for v in variants) + f" | {r['load']:.1f} |")


def this_tree(args) -> list[tuple[str, str, str]]:
    """(column name, schedule, transport) of every variant of this tree's graph_allgather."""
    return [(schedule if len(args.transports) == 1 else f"{schedule}/{transport}" if len(args.schedules) > 1
             else transport, schedule, transport) for transport in args.transports for schedule in args.schedules]


def measure(args, base: Path | None) -> list[dict]:
    rows = []
    for dataset in args.datasets:
        for world in args.workers:
            for comm in args.comms:
                results = {}
                if base is not None:
                    results["before"] = run(dataset, world, comm, args.widths, args.repeats, tree=base)
                for name, schedule, transport in this_tree(args):
                    results[name] = run(dataset, world, comm, args.widths, args.repeats, schedule,
                                        transport=transport)
                for i, width in enumerate(args.widths):
                    rows.append({"dataset": Path(dataset).stem, "workers": world, "comm": comm, "width": width,
                                 "allgather_s": {v: r["points"][i]["measured_s"] for v, r in results.items()},
                                 "gloo_s": {v: r["points"][i]["gloo_s"] for v, r in results.items()},
                                 "load": os.getloadavg()[0]})
                    print(json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
