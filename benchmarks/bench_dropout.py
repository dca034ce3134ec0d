"""Vertex-keyed dropout (``runtime/dropout.py``) on one worker's rows, on one thread, beside torch's
own ``F.dropout`` (what a trainer would otherwise call: a mask from the process's random stream)
and beside the same hash in torch int64 arithmetic (the path off the CPU kernel).

One worker's rows: the first 1/8 of a dataset's feature rows (the testbed's 8 workers), the input
features (sparse: zeros are not hashed) and a hidden layer's 128 columns (every entry hashed).
Medians of ``--repeats`` calls, CPU time of this thread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from testbed_datasets import AMAZON_CS as DEFAULT


def _time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.thread_time()
        fn()
        times.append(time.thread_time() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=DEFAULT, help="an .npz graph (absent: random rows of amazon_cs's shape)")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dropout.json"))
    args = ap.parse_args()
    import numba
    import torch
    import torch.nn.functional as F

    from netweave.runtime.dropout import keep_mask, vertex_dropout

    torch.set_num_threads(1)
    numba.set_num_threads(1)
    if Path(args.dataset).exists():
        from netweave.graph.npz import load_npz

        f = load_npz(args.dataset).features
        x = np.asarray(f.toarray() if hasattr(f, "toarray") else f, np.float32)
        source = args.dataset
    else:
        rng = np.random.default_rng(0)
        x = (rng.random((13_752, 767)) * (rng.random((13_752, 767)) < 0.35)).astype(np.float32)
        source = "random rows, 13,752 × 767, 35 % nonzero"
    rows = torch.from_numpy(x[: x.shape[0] // args.workers])
    ids = torch.arange(rows.shape[0]) * 7919
    torch.manual_seed(0)
    hidden = torch.randn(rows.shape[0], 128, requires_grad=True)
    out = {"source": source, "rows": int(rows.shape[0]), "columns": int(rows.shape[1]),
           "nonzero": float((rows != 0).float().mean()), "repeats": args.repeats, "ms": {}}
    for name, a in (("input", rows), ("hidden", hidden)):
        cols = torch.arange(a.shape[1]).repeat(a.shape[0])
        vids = ids.repeat_interleave(a.shape[1])
        out["ms"][name] = {
            "vertex_dropout (numba)": 1e3 * _time(lambda: vertex_dropout(a, ids, 0.5, 17, True), args.repeats),
            "the same hash in torch": 1e3 * _time(lambda: a * keep_mask(vids, cols, 0.5, 17).view_as(a) * 2.0,
                                                  args.repeats),
            "F.dropout": 1e3 * _time(lambda: F.dropout(a, 0.5, True), args.repeats),
        }
        print(f"{name} ({a.shape[0]} × {a.shape[1]}): " + ", ".join(f"{k} {v:.2f} ms" for k, v in out["ms"][name].items()))
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
