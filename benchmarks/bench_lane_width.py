"""How wide must the SwitchGNN switch's aggregator lanes be for GCN's logits to stay within 1e-5
of exact sums? (issue 32: "narrower lanes" as the lever on the block count.)

The kernel data plane sums every unit into int64 fixed point (:mod:`netweave.testbed.gnn.fixed`:
16 lanes per 128-byte aggregator), which doubles the paper's aggregator memory per destination and
so the plan's blocks. The paper's switch (§4: "the aggregator format is similar to ATP") adds
32-bit integers; ATP and SwitchML scale floats into them with one exponent per exchange. This
trains the same 2-layer GCN (128 hidden units, Adam lr 0.01, full graph, symmetric normalisation
with self loops) with every neighbour sum ``Σ_u Â_vu · t_u`` (``t_u = c_u · h_u W``: SwitchGNN's unit)
computed five ways, forward and backward, and reports the largest difference of the final logits
from the run with exact (float64) sums and from the float32 run (the issue's criterion: ≤ 1e-5
from single-process training):

* ``float32`` — float32 sparse products: what single-process PyTorch/PyG does (a summation order);
* ``int64`` — netweave's lanes: :func:`~netweave.testbed.gnn.fixed.to_fixed` (2^-36 forward, 2^-50
  backward, truncated) summed as integers, :func:`~netweave.testbed.gnn.fixed.from_fixed` back;
* ``int32, exponent per exchange`` — ATP/SwitchML: every worker scales by 2^f with ``f = 30 − E − H``,
  ``E`` the exchange's largest |t| exponent (agreed among the workers: one more round trip per
  exchange) and ``H`` the headroom for the largest in-degree (no sum can overflow), rounded;
* ``int32, headroom per destination`` — as above, ``H`` from each destination's own in-degree
  (the switch's tables know it): the best 32 bits can do without a per-value exponent.

Every sum goes through the "switch" here (the worst case: in the testbed only the edges between
partitions do). Pure numpy/scipy and torch on the CPU; no root.

    python benchmarks/bench_lane_width.py        # results/lane_width.json, a Markdown table
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
from pathlib import Path

import numpy as np

from testbed_datasets import AMAZON_CS

HERE = Path(__file__).resolve().parent
DATASETS = {"amazon_cs": f"npz:{AMAZON_CS}", "reddit-like": "reddit-like:scale=0.02"}
MODES = ("float32", "int64", "int32, exponent per exchange", "int32, headroom per destination")
INT32_TOP = 30  # bits below int32's sign bit a sum may use: |sum| < 2^30


class Sums:
    """``Â @ t`` for a graph's normalised adjacency with self loops, one way per mode."""

    def __init__(self, graph):
        import scipy.sparse as sp

        n = graph.num_nodes
        rows = np.repeat(np.arange(n), np.diff(graph.indptr))
        self.A = (sp.csr_matrix((np.ones(rows.size), (rows, graph.indices)), shape=(n, n)) + sp.eye(n)).tocsr()
        self.A.sum_duplicates()
        self.degree = np.diff(self.A.indptr)  # in-degree with the self loop: a destination's contributions
        self.need_bits = np.ceil(np.log2(self.degree)).astype(np.int64)
        self.A64, self.A32 = self.A.astype(np.float64), self.A.astype(np.float32)
        self.Aint = self.A.astype(np.int64)

    def __call__(self, t: np.ndarray, mode: str, backward: bool) -> np.ndarray:
        from netweave.testbed.gnn.fixed import frac_bits, from_fixed, to_fixed

        if mode == "exact":
            return (self.A64 @ t.astype(np.float64)).astype(np.float32)
        if mode == "float32":
            return self.A32 @ t
        if mode == "int64":
            frac = frac_bits(int(backward))
            fixed, saturated = to_fixed(t, frac)
            assert not saturated, "a value beyond the int64 lanes' range"
            return from_fixed(self.Aint @ fixed, frac)
        top = math.ceil(math.log2(float(np.abs(t).max()) or 1.0))  # E: |t| < 2^E
        if mode == "int32, exponent per exchange":
            return self._int32(t, INT32_TOP - top - int(self.need_bits.max()))
        out = np.empty(t.shape, np.float32)
        for bits in np.unique(self.need_bits):
            rows = self.need_bits == bits
            out[rows] = self._int32(t, INT32_TOP - top - int(bits), rows)
        return out

    def _int32(self, t: np.ndarray, frac: int, rows=slice(None)) -> np.ndarray:
        q = np.rint(t.astype(np.float64) * 2.0 ** frac).astype(np.int64)
        assert np.abs(q).max() < 2 ** 31
        s = self.Aint[rows] @ q
        assert np.abs(s).max() < 2 ** 31, "an int32 lane overflowed"
        return (s * 2.0 ** -frac).astype(np.float32)


def train(graph, sums: Sums, mode: str, epochs: int):
    """The final logits (numpy) of ``epochs`` full-graph steps with the sums of ``mode``."""
    import torch

    class Aggregate(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return torch.from_numpy(sums(t.detach().numpy(), mode, False))

        @staticmethod
        def backward(ctx, grad):  # Â is symmetric
            return torch.from_numpy(sums(grad.detach().numpy(), mode, True))

    import scipy.sparse as sp

    torch.manual_seed(0)
    x = graph.features.toarray() if sp.issparse(graph.features) else np.asarray(graph.features)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(graph.labels)
    c = torch.tensor(sums.degree ** -0.5, dtype=torch.float32)[:, None]
    first, second = torch.nn.Linear(x.shape[1], 128), torch.nn.Linear(128, int(y.max()) + 1)
    opt = torch.optim.Adam([*first.parameters(), *second.parameters()], lr=0.01)

    def logits():
        h = torch.relu(c * Aggregate.apply(c * first(x)))
        return c * Aggregate.apply(c * second(h))

    for _ in range(epochs):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(logits(), y).backward()
        opt.step()
    with torch.no_grad():
        return logits().numpy()


def main() -> None:
    from netweave.graph.datasets import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--out", default=str(HERE / "results" / "lane_width.json"))
    args = ap.parse_args()
    rows = []
    for name in args.datasets:
        graph = load_dataset(DATASETS[name])
        sums = Sums(graph)
        exact = train(graph, sums, "exact", args.epochs)
        logits = {mode: train(graph, sums, mode, args.epochs) for mode in MODES}
        for mode in MODES:
            rows.append({"dataset": name, "mode": mode,
                         "max_logit_difference": float(np.abs(logits[mode] - exact).max()),
                         "from_float32": float(np.abs(logits[mode] - logits["float32"]).max()),
                         "max_abs_logit": float(np.abs(exact).max()), "max_in_degree": int(sums.degree.max()),
                         "epochs": args.epochs})
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "command":
            "python benchmarks/bench_lane_width.py --datasets " + " ".join(args.datasets) + f" --epochs {args.epochs}"}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"{meta['command']} — {meta['machine']}\n")
    print("| dataset | sums | max logit difference from exact sums | … from float32 sums (single-process) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['mode']} | {r['max_logit_difference']:.1e} | {r['from_float32']:.1e} |")


if __name__ == "__main__":
    main()
