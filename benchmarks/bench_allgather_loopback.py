"""Benchmark: ``graph_allgather`` against gloo's own ``batch_isend_irecv`` of exactly the same
messages, on loopback (issue 20, goal 3: within 1.2× of gloo).

For each dataset, worker count and plan (``p2p``, ``spst`` on ``star:n=W``), ``W`` processes of
``allgather_rank.py --reference`` run on 127.0.0.1 (one thread each); each times the allgather
(forward: stage gathers, sends, receives, scatters) and the same stages' messages as preallocated
tensors through gloo (no gathers, no scatters, no allocation) in the same process group; medians
of ``--repeats`` of the slowest rank. Writes ``benchmarks/results/allgather_loopback.json``.
Usage: python benchmarks/bench_allgather_loopback.py [--datasets amazon_cs] [--workers 2 4] [--widths 64 256]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from netweave.runtime.launcher import free_port

HERE = Path(__file__).resolve().parent


def run(dataset: str, world: int, comm: str, widths: list[int], repeats: int) -> dict:
    port = free_port()
    procs = []
    for rank in range(world):
        env = os.environ | {"RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                            "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
        procs.append(subprocess.Popen([sys.executable, str(HERE / "allgather_rank.py"), dataset, "--comm", comm,
                                       "--topology", f"star:n={world}", "--widths", *map(str, widths),
                                       "--repeats", str(repeats), "--reference"],
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
    args = ap.parse_args()
    rows = []
    for dataset in args.datasets:
        for world in args.workers:
            for comm in args.comms:
                result = run(dataset, world, comm, args.widths, args.repeats)
                for point in result["points"]:
                    rows.append({"dataset": Path(dataset).stem, "workers": world, "comm": comm, "width": point["width"],
                                 "allgather_s": point["measured_s"], "gloo_s": point["gloo_s"],
                                 "ratio": point["measured_s"] / point["gloo_s"]})
                    print(json.dumps(rows[-1]), flush=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_1min": os.getloadavg()[0],
            "command": "python benchmarks/bench_allgather_loopback.py " + " ".join(sys.argv[1:])}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "allgather_loopback.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print("\n| dataset | workers | plan | D | graph_allgather (ms) | gloo batch_isend_irecv (ms) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['workers']} | {r['comm']} | {r['width']} | {1e3 * r['allgather_s']:.2f} | "
              f"{1e3 * r['gloo_s']:.2f} | {r['ratio']:.2f}× |")


if __name__ == "__main__":
    main()
