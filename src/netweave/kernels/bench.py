"""Timing MGG's kernels on one device: the reference (torch ``index_add``), the non-overlapped
in-house baseline, the MGG kernel, and PyTorch's sparse product; optionally the tuner driven by
measured latencies (what ``netweave kernels bench`` prints)."""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np

from ..errors import NetweaveError
from .layout import Config, mgg_layout
from .model import DIST_VALUES, PS_VALUES, WPB_VALUES, Hardware
from .tuner import tune


def _device():
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda"), Hardware.from_device()
    return torch.device("cpu"), Hardware()  # no GPU: the kernel runs in Triton's interpreter (see triton_mgg)


def _time(fn, repeats: int, device) -> float:
    import torch

    samples = []
    for _ in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples[1:])  # the first run compiles


def bench_kernels(graph, gpus: int = 4, dim: int = 16, config: Config = Config(8, 2, 4), do_tune: bool = False,
                  repeats: int = 5, exhaustive: bool = False) -> dict:
    """Median latencies (s) of the four implementations on ``graph``; with ``do_tune`` the tuner's
    path and choice, and with ``exhaustive`` the best configuration of the whole (power-of-two) space."""
    import torch

    from .triton_mgg import mgg_sum, non_overlapped_sum

    if dim < 1:
        raise NetweaveError(f"--dim {dim} must be positive")
    device, hw = _device()
    x = torch.randn(graph.num_nodes, dim, device=device)
    remote = x.cpu().pin_memory() if device.type == "cuda" and gpus > 1 else x  # zero-copy host memory
    rows = torch.as_tensor(np.repeat(np.arange(graph.num_nodes), np.diff(graph.indptr)), device=device)
    cols = torch.as_tensor(graph.indices.astype(np.int64), device=device)
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore")
        adj = torch.sparse_csr_tensor(torch.as_tensor(graph.indptr.astype(np.int64)), cols.cpu(),
                                      torch.ones(cols.numel()), size=(graph.num_nodes, graph.num_nodes)).to(device)
    layout = mgg_layout(graph.indptr, graph.indices, gpus, config)

    def mgg_latency(c: Config) -> float:
        lay = mgg_layout(graph.indptr, graph.indices, gpus, c)
        return _time(lambda: mgg_sum(lay, x, True, remote), repeats, device)

    report = {"device": str(device), "num_nodes": graph.num_nodes, "num_edges": graph.num_edges, "gpus": gpus,
              "dim": dim, "config": vars(config),
              "reference_s": _time(lambda: torch.zeros_like(x).index_add_(0, rows, x[cols]), repeats, device),
              "torch_sparse_s": _time(lambda: adj @ x, repeats, device),
              "non_overlapped_s": _time(lambda: non_overlapped_sum(layout, x), repeats, device),
              "mgg_s": mgg_latency(config)}
    bytes_moved = (graph.indices.size + graph.num_nodes) * dim * 4
    report["mgg_bandwidth_gbs"] = bytes_moved / report["mgg_s"] / 1e9
    if do_tune:
        r = tune(mgg_latency, dim, hw)
        report |= {"tuned": vars(r.best), "tuned_s": r.latency, "tuner_iterations": len(r.path),
                   "tuner_path": [[vars(c), t] for c, t in r.path]}
    if exhaustive:
        space = [Config(p, d, w) for p in PS_VALUES for d in DIST_VALUES for w in WPB_VALUES]
        best = min(space, key=mgg_latency)
        report |= {"exhaustive_best": vars(best), "exhaustive_best_s": mgg_latency(best)}
    return report
