"""Benchmark: does training through the testbed's quantised in-network aggregation learn what plain
PyTorch learns? (issue 18, part 3: "accuracy matches single-process training within quantisation
noise").

LeNet-5 on scikit-learn's digits (real images), global batch 64, SGD lr 0.05, momentum 0.9, the
same seed and initial model everywhere:

* ``single process`` — a plain PyTorch loop over the whole batch, written here (the outside
  reference: no netweave training code);
* ``testbed fp32`` — 4 fp32 workers through the XDP switch (PAHInA routing, star): fixed point only;
* ``testbed fp8:2,fp16:2`` — PAHInA §VI-B's mix through the XDP switch: fp8 (E4M3) and fp16 casts.

Prints test accuracy and training loss after every epoch and writes
``benchmarks/results/testbed_accuracy.json``. Needs root, clang, libbpf, torch and scikit-learn.
Usage: sudo python benchmarks/bench_testbed_accuracy.py [--epochs 10]
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


def main() -> None:
    from netweave.testbed.agg import TrainRun, train
    from netweave.topology import load_topology_spec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()
    runs = {"single process (plain PyTorch)": single_process(args.epochs)}
    for name, precisions in (("testbed fp32 ×4 (XDP)", ["fp32"] * 4),
                             ("testbed fp8:2,fp16:2 (XDP)", ["fp8", "fp8", "fp16", "fp16"])):
        r = train(TrainRun(topology=load_topology_spec("star:n=5"), precisions=tuple(precisions), routing="pahina",
                           epochs=args.epochs, batch=BATCH, lr=LR, momentum=MOMENTUM, seed=SEED, scale=0.1))
        runs[name] = [{"epoch": e["epoch"], "loss": e["loss"], "test_acc": e["test_acc"]} for e in r.epochs]
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_1min": os.getloadavg()[0],
            "command": f"sudo python benchmarks/bench_testbed_accuracy.py --epochs {args.epochs}"}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "testbed_accuracy.json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
    names = list(runs)
    print("| epoch | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for i in range(args.epochs):
        print(f"| {i + 1} | " + " | ".join(f"{100 * runs[n][i]['test_acc']:.1f} % (loss {runs[n][i]['loss']:.3f})"
                                         for n in names) + " |")


if __name__ == "__main__":
    main()
