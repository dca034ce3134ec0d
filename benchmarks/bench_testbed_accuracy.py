"""Benchmark: does training through the testbed's quantised in-network aggregation learn what plain
PyTorch, and the ring all-reduce users would otherwise run, learn? (issue 18 part 3; issue 31:
"accuracy on the digits within 0.5 points of fp32 ring at equal steps").

LeNet-5 on scikit-learn's digits (real images), global batch 64, SGD lr 0.05, momentum 0.9, the
same seed and initial model everywhere; 8 workers on PAHInA §VI-B's bridge tree
(``tree:leaves=2,hosts=4,...``) with two fp8 and six fp16 workers (§VI-B's mix):

* ``single process`` — a plain PyTorch loop over the whole batch, written here (the outside
  reference: no netweave training code);
* ``gloo ring fp32`` — torch.distributed's ring all-reduce of fp32 gradients, 8 workers;
* ``PAHInA stream fp32`` / ``fp8:2,fp16:6`` — the XDP switches stream every chunk's sum down
  (``--mode stream``, the default), block floating point at 4 / 1 / 2 bytes a value;
* ``PAHInA PS fp8:2,fp16:6`` — the paper's data path (``--mode ps``).

Accuracy after one epoch is noise; the table prints every epoch and the summary compares the mean
test accuracy of the last ``--last`` epochs (360 test images: one image is 0.28 points).
Writes ``benchmarks/results/testbed_accuracy.json``. Needs root, clang, libbpf, torch and
scikit-learn. Usage: sudo python benchmarks/bench_testbed_accuracy.py [--epochs 20] [--last 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BATCH, LR, MOMENTUM, SEED = 64, 0.05, 0.9, 0


def single_process(epochs: int) -> list[dict]:
    import torch
    import torch.nn as nn
    from sklearn.datasets import load_digits

    d = load_digits()  # the same split as the testbed's, built here from scikit-learn directly
    x = np.kron(d.images.astype(np.float32) / 16.0, np.ones((4, 4), np.float32))[:, None]
    order = np.random.default_rng(SEED).permutation(len(x))
    cut = int(0.8 * len(x))
    xtr, ytr = torch.from_numpy(x[order[:cut]]), torch.from_numpy(d.target[order[:cut]].astype(np.int64))
    xte, yte = torch.from_numpy(x[order[cut:]]), torch.from_numpy(d.target[order[cut:]].astype(np.int64))
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                          nn.Linear(84, 10))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    out = []
    for epoch in range(epochs):
        for s in range(len(xtr) // BATCH):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xtr[s * BATCH:(s + 1) * BATCH]), ytr[s * BATCH:(s + 1) * BATCH]).backward()
            opt.step()
        with torch.no_grad():
            out.append({"epoch": epoch + 1, "loss": float(nn.functional.cross_entropy(model(xtr), ytr)),
                        "test_acc": float((model(xte).argmax(1) == yte).float().mean())})
    return out


TOPOLOGY = "tree:leaves=2,hosts=4,gbps=25,host_gbps=10-25,seed=0,memory=128MB"
MIX = ("fp8",) * 2 + ("fp16",) * 6
# name -> (routing, mode, precisions)
RUNS = {"gloo ring fp32 ×8": ("ring", "stream", ("fp32",) * 8),
        "PAHInA stream fp32 ×8 (XDP)": ("pahina", "stream", ("fp32",) * 8),
        "PAHInA stream fp8:2,fp16:6 (XDP)": ("pahina", "stream", MIX),
        "PAHInA PS fp8:2,fp16:6 (XDP, paper)": ("pahina", "ps", MIX)}


def main() -> None:
    from netweave.testbed.agg import TrainRun, train
    from netweave.topology import load_topology_spec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--last", type=int, default=5, help="epochs whose mean test accuracy is compared")
    ap.add_argument("--scale", type=float, default=0.05, help="factor on the tree's link rates")
    args = ap.parse_args()
    runs = {"single process (plain PyTorch)": single_process(args.epochs)}
    for name, (routing, mode, precisions) in RUNS.items():
        r = train(TrainRun(topology=load_topology_spec(TOPOLOGY), precisions=precisions, routing=routing, mode=mode,
                           epochs=args.epochs, batch=BATCH, lr=LR, momentum=MOMENTUM, seed=SEED, scale=args.scale,
                           timeout_s=300))
        runs[name] = [{"epoch": e["epoch"], "loss": e["loss"], "test_acc": e["test_acc"]} for e in r.epochs]
    last = {n: float(np.mean([e["test_acc"] for e in runs[n][-args.last:]])) for n in runs}
    ring = last["gloo ring fp32 ×8"]
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_1min": os.getloadavg()[0],
            "topology": TOPOLOGY, "scale": args.scale,
            "command": f"sudo python benchmarks/bench_testbed_accuracy.py --epochs {args.epochs} --last {args.last}"}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "testbed_accuracy.json").write_text(json.dumps(
        {"meta": meta, "runs": runs, "mean_last": last, "vs_ring_points": {n: 100 * (a - ring) for n, a in last.items()}},
        indent=1))
    names = list(runs)
    print("| epoch | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for i in range(args.epochs):
        print(f"| {i + 1} | " + " | ".join(f"{100 * runs[n][i]['test_acc']:.1f} % (loss {runs[n][i]['loss']:.3f})"
                                         for n in names) + " |")
    print(f"| mean of the last {args.last} | " + " | ".join(f"{100 * last[n]:.2f} % ({100 * (last[n] - ring):+.2f} vs ring)"
                                                         for n in names) + " |")


if __name__ == "__main__":
    main()
