"""Benchmark: measured vs predicted communication time over shaped links (issue 4, DGCL Fig. 10).

Needs root. Builds the 4-worker mesh of ``benchmarks/topologies/hetero4.yaml`` from Linux network
namespaces: worker ``i`` lives in namespace ``nwb<pid>-i`` with one veth into a bridge that lives
in its own namespace (nothing touches the host's network). On each worker's veth an HTB qdisc
gives every destination worker its own class at that link's rate (``u32`` filter on the
destination address), so the directed link ``i -> j`` runs at the topology's ``gbps``.
The four ranks are started as a torchrun-style job (``RANK``/``WORLD_SIZE``/``MASTER_ADDR``
in the environment, ``netweave train``), once with the P2P plan and once with SPST.

For each graph and plan: (1) one graph allgather in isolation (``allgather_rank.py``: barrier,
exchange of width D = 64/256/1024, slowest rank, median of 7) next to the §5.1 prediction — DGCL's
Fig. 10 — with a linear fit and a plot ``train_netns.png``; (2) GCN training: the median
per-epoch exchange time (mean over ranks, includes waiting for slower peers) next to the
prediction for the same exchanges (layer inputs forward, hidden gradients backward).
Writes ``benchmarks/results/train_netns.json`` and prints Markdown rows.
With ``--baseline-rev REV`` the isolated allgathers also run on that revision (before), back to
back with this tree's; ``--schedules batch rounds`` times this tree's with each schedule. The fit
is over this tree's points only.
Usage: sudo python benchmarks/bench_train_netns.py [--data ../shared/data] [--epochs 5] [--only cora]
       [--widths 64 256 1024] [--no-train] [--out train_netns] [--schedules batch rounds] [--baseline-rev REV]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from netweave.topology import load_topology_spec

HERE = Path(__file__).resolve().parent
TOPOLOGY = HERE / "topologies" / "hetero4.yaml"
PORT = 29517


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def mesh_rates(path: Path) -> tuple[list[str], dict[tuple[int, int], float]]:
    """Workers in rank order and the Gb/s of the direct link of every worker pair."""
    topo = load_topology_spec(str(path))
    workers = list(topo.workers)
    rank = {w: i for i, w in enumerate(workers)}
    rates = {}
    for link in topo.links:
        if link.a in rank and link.b in rank:
            rates[rank[link.a], rank[link.b]] = rates[rank[link.b], rank[link.a]] = link.gbps
    missing = [(i, j) for i in range(len(workers)) for j in range(len(workers)) if i != j and (i, j) not in rates]
    if missing:
        raise SystemExit(f"{path}: workers {missing[0]} have no direct link; this bench needs a full mesh of workers")
    return workers, rates


class Mesh:
    """Namespaces ``<prefix>-sw`` (bridge) and ``<prefix>-<i>`` (workers at 10.78.0.<i+1>), removed on exit."""

    def __init__(self, rates: dict[tuple[int, int], float], size: int):
        self.prefix, self.rates, self.size = f"nwb{os.getpid()}", rates, size
        self.names = [f"{self.prefix}-{i}" for i in range(size)] + [f"{self.prefix}-sw"]

    def address(self, i: int) -> str:
        return f"10.78.0.{i + 1}"

    def __enter__(self) -> "Mesh":
        sw = f"{self.prefix}-sw"
        try:
            for name in self.names:
                sh("ip", "netns", "add", name)
                sh("ip", "-n", name, "link", "set", "lo", "up")
            sh("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", sw, "link", "set", "br0", "up")
            for i in range(self.size):
                ns = self.names[i]
                sh("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}", "netns", sw)
                sh("ip", "-n", sw, "link", "set", f"p{i}", "master", "br0", "up")
                sh("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "up")
                tc = ("ip", "netns", "exec", ns, "tc")
                sh(*tc, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "99")
                sh(*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:99", "htb", "rate", "10gbit")
                for j in range(self.size):
                    if j != i:
                        mbit = f"{self.rates[i, j] * 1000:g}mbit"
                        sh(*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", f"1:{10 + j}",
                           "htb", "rate", mbit, "ceil", mbit)
                        sh(*tc, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1",
                           "u32", "match", "ip", "dst", f"{self.address(j)}/32", "flowid", f"1:{10 + j}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for name in self.names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)

    def run(self, command: list[str], timeout_s: float, pythonpath: str | None = None) -> dict:
        """Run ``python COMMAND`` as one rank per namespace; the JSON line rank 0 prints."""
        procs = []
        extra = {} if pythonpath is None else {"PYTHONPATH": pythonpath}
        for i in range(self.size):
            env = {**os.environ, **extra, "RANK": str(i), "WORLD_SIZE": str(self.size), "LOCAL_RANK": "0",
                   "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": self.address(0), "MASTER_PORT": str(PORT),
                   "GLOO_SOCKET_IFNAME": "eth0", "NETWEAVE_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
            cmd = ["ip", "netns", "exec", self.names[i], sys.executable, *command]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        try:
            outs = [p.communicate(timeout=timeout_s) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        if any(p.returncode for p in procs):
            raise SystemExit("a rank failed: " + " | ".join(err.strip().splitlines()[-1] for _, err in outs if err.strip()))
        return json.loads(outs[0][0].strip().splitlines()[-1])


def plot(rows: list[dict], path: Path, fit) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for comm, marker in (("p2p", "o"), ("spst", "s")):
        pts = [(p["predicted_s"], p["measured_s"]) for p in rows if p["comm"] == comm]
        ax.scatter(*zip(*pts), marker=marker, label=comm)
    for graph in sorted({p["graph"] for p in rows}):
        last = max((p for p in rows if p["graph"] == graph), key=lambda p: p["predicted_s"])
        ax.annotate(graph, (last["predicted_s"], last["measured_s"]), fontsize=7)
    xs = np.linspace(0, max(p["predicted_s"] for p in rows) * 1.05, 20)
    ax.plot(xs, fit[0] * xs + fit[1], "k--", lw=1, label=f"measured = {fit[0]:.2f} x predicted + {fit[1] * 1e3:.0f} ms")
    ax.set_xlabel("predicted time of one graph allgather (s), DGCL §5.1")
    ax.set_ylabel("measured time (s), slowest rank")
    ax.set_title("4 workers in namespaces, hetero4 links (tc)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="graph names to run")
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024], help="allgather widths (float32 values)")
    ap.add_argument("--no-train", action="store_true", help="only the isolated allgathers")
    ap.add_argument("--out", default="train_netns", help="results name: benchmarks/results/OUT.json and OUT.png")
    ap.add_argument("--schedules", nargs="+", choices=("batch", "rounds"), default=None,
                    help="time the isolated allgather with each graph_allgather schedule (default: its default)")
    ap.add_argument("--baseline-rev", help="also time the isolated allgathers on this git revision (a temporary "
                    "worktree, its own allgather_rank.py), back to back with this tree's; 'before' in the rows")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (network namespaces and tc)")
    graphs = {"cora": "cora", "amazon_cs": f"{args.data}/gnn_benchmark_npz/amazon_cs.npz",
              "coauthor_phy": f"{args.data}/gnn_benchmark_npz/coauthor_phy.npz"}
    workers, rates = mesh_rates(TOPOLOGY)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so the namespaces are removed on kill too
    rows, points = [], []
    base = None
    if args.baseline_rev:
        base = Path(tempfile.mkdtemp()) / "base"
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(base), args.baseline_rev],
                       check=True, capture_output=True)
    variants = ([("before", base)] if base else []) + [(s, None) for s in (args.schedules or [None])]
    try:
        with Mesh(rates, len(workers)) as mesh:
            train(args, graphs, mesh, workers, variants, points, rows)
    finally:
        if base is not None:
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(base)],
                           capture_output=True)
            base.parent.rmdir()
    report(args, points, rows)


def train(args, graphs, mesh, workers, variants, points, rows) -> None:
    for name, spec in graphs.items():
        if args.only and name not in args.only:
            continue
        for comm in ("p2p", "spst"):
            for variant, tree in variants:
                root = tree or HERE.parent
                command = [str(root / "benchmarks" / "allgather_rank.py"), spec, "--comm", comm,
                           "--topology", str(TOPOLOGY), "--widths", *map(str, args.widths)]
                if tree is None and variant is not None:
                    command += ["--schedule", variant]
                op = mesh.run(command, timeout_s=1800, pythonpath=str(root / "src"))
                points += [{"graph": name, "comm": comm, "num_stages": op["num_stages"], "variant": variant,
                            "load_1min": os.getloadavg()[0], **pt} for pt in op["points"]]
                print(json.dumps(points[-1]), flush=True)
            if args.no_train:
                continue
            r = mesh.run(["-m", "netweave", "train", spec, "--workers", str(len(workers)), "--comm", comm,
                          "--topology", str(TOPOLOGY), "--epochs", str(args.epochs), "--timeout", "600",
                          "--cost-model", "dgcl", "--json"],
                         timeout_s=3600)
            row = {"graph": name, "comm": comm, "num_stages": r["num_stages"],
                   **{k: r[k] for k in ("predicted_comm_s", "median_comm_s", "median_epoch_s", "exchange_bytes_per_epoch")}}
            rows.append(row)
            print(json.dumps(row), flush=True)


def report(args, points, rows) -> None:
    points_all = points
    for p in points_all:  # older revisions print no α–β prediction: the same plan's from this tree
        if "predicted_ab_s" not in p:
            p["predicted_ab_s"] = next((q["predicted_ab_s"] for q in points_all if "predicted_ab_s" in q and
                                        (q["graph"], q["comm"], q["width"]) == (p["graph"], p["comm"], p["width"])),
                                       float("nan"))
    fitted = (args.schedules or [None])[0]
    points = [p for p in points_all if p["variant"] == fitted]
    pred = np.array([p["predicted_s"] for p in points])
    meas = np.array([p["measured_s"] for p in points])
    fit = np.polyfit(pred, meas, 1)
    r2 = 1 - ((meas - np.polyval(fit, pred)) ** 2).sum() / max(((meas - meas.mean()) ** 2).sum(), 1e-30)
    (HERE / "results").mkdir(exist_ok=True)
    result = {"meta": {"command": "sudo python benchmarks/bench_train_netns.py " + " ".join(sys.argv[1:]),
                       "topology": str(TOPOLOGY.name), "epochs": 0 if args.no_train else args.epochs,
                       "cpus": os.cpu_count(), "load_1min": os.getloadavg()[0]},
              "allgather_fit": {"slope": fit[0], "intercept_s": fit[1], "r2": r2},
              "allgather": points_all, "training": rows}
    (HERE / "results" / f"{args.out}.json").write_text(json.dumps(result, indent=1))
    plot(points, HERE / "results" / f"{args.out}.png", fit)
    print("\n| graph | plan | stages | width | variant | §5.1 (ms) | α–β at wire speed (ms) | measured (ms) | "
          "measured / §5.1 | measured / α–β | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for p in points_all:
        print(f"| {p['graph']} | {p['comm']} | {p['num_stages']} | {p['width']} | {p['variant'] or 'default'} | "
              f"{1e3 * p['predicted_s']:.1f} | {1e3 * p['predicted_ab_s']:.1f} | {1e3 * p['measured_s']:.1f} | "
              f"{p['measured_s'] / p['predicted_s']:.2f} | {p['measured_s'] / p['predicted_ab_s']:.2f} | "
              f"{p['load_1min']:.1f} |")
    print(f"\none graph allgather ({fitted or 'default'}): measured = {fit[0]:.3f} x §5.1 + {fit[1] * 1e3:.1f} ms, "
          f"R^2 = {r2:.3f}")
    print("\n| graph | plan | predicted comm / epoch (ms) | measured comm / epoch (ms) | epoch (ms) | MB / epoch |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['graph']} | {r['comm']} | {1e3 * r['predicted_comm_s']:.0f} | {1e3 * r['median_comm_s']:.0f} | "
              f"{1e3 * r['median_epoch_s']:.0f} | {r['exchange_bytes_per_epoch'] / 1e6:.1f} |")

if __name__ == "__main__":
    main()
