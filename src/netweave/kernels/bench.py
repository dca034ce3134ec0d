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


CPU_BUDGET_S = 120.0  # without a GPU, a run predicted to take longer is refused (Triton's interpreter is slow)
TUNER_RUNS = 12  # configurations the tuner measures, for the CPU estimate (about 10 in MGG §7, ours 8-16)


def check_requirements() -> None:
    """torch and triton are installed (checked without importing them, before any work), or one line."""
    from importlib.util import find_spec

    missing = [m for m in ("torch", "triton") if find_spec(m) is None]
    if missing:
        raise NetweaveError(f"kernels bench needs torch and triton ({' and '.join(missing)} missing): "
                            "pip install -e '.[kernels]'")


def interpreter_warp_s() -> float:
    """Seconds Triton's interpreter takes per MGG warp on this machine: one small launch, timed."""
    import torch

    from ..graph import ring
    from .triton_mgg import mgg_sum

    g = ring(256)
    layout = mgg_layout(g.indptr, g.indices, 2, Config(8, 2, 4))
    x = torch.randn(g.num_nodes, 4)
    mgg_sum(layout, x)  # builds the kernel
    t0 = time.perf_counter()
    mgg_sum(layout, x)
    return (time.perf_counter() - t0) / max(_warps(layout), 1)


def _warps(layout) -> int:
    return int(sum(len(w.lnp) + len(w.rnp) for w in layout.gpus))


def cpu_estimate_s(graph, gpus: int, config: Config, repeats: int, do_tune: bool, warp_s: float) -> float:
    """Predicted seconds of :func:`bench_kernels` in Triton's interpreter: every MGG launch costs its
    warps times ``warp_s`` (the baseline kernels are torch's, cheap); the tuner is priced as
    :data:`TUNER_RUNS` launches of its most expensive configuration (``ps = dist = wpb = 1``)."""
    runs = (repeats + 1) * _warps(mgg_layout(graph.indptr, graph.indices, gpus, config))
    if do_tune:
        runs += (repeats + 1) * TUNER_RUNS * _warps(mgg_layout(graph.indptr, graph.indices, gpus, Config(1, 1, 1)))
    return runs * warp_s


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
        raise NetweaveError(f"--feature-dim {dim} must be positive")
    device, hw = _device()
    if device.type == "cpu":
        estimate = cpu_estimate_s(graph, gpus, config, repeats, do_tune, interpreter_warp_s())
        if estimate > CPU_BUDGET_S:
            raise NetweaveError(
                f"without a GPU the MGG kernel runs in Triton's interpreter: {graph.num_nodes:,} vertices and "
                f"{graph.num_edges:,} edges{' with --tune' if do_tune else ''} would take about {estimate / 60:.0f} min "
                f"(more than {CPU_BUDGET_S:.0f} s); run it on a GPU, or "
                + ("drop --tune, " if do_tune else "") + "lower --repeats or use a smaller graph (e.g. ring:n=1000)")
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
              "feature_dim": dim, "config": vars(config),
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
