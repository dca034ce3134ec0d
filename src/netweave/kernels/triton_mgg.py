"""MGG's pipelined aggregation kernel in Triton (mgg.txt §5.1–5.2, Figure 6), and the non-overlapped
in-house baseline.

One Triton program is one MGG *warp*. It walks its ``dist`` interleaved (LNP, RNP) pairs (§5.1).
For each pair it first issues the loads of the remote partition's rows, then loads and reduces the
local partition while those are in flight, and only then reduces the remote rows (Figure 6b). Both
partial sums are added into the partition's output row, which other warps may share (atomic add).

- **Memory.** The local shard is the GPU's own embeddings. "Remote" rows come from another memory: a
  peer GPU's buffer, or pinned host memory read in place (zero-copy) on a single-GPU machine.
- **CPU path.** Without a GPU the same kernel runs on the CPU in Triton's interpreter, which is what
  the tests use. The interpreter is switched on only while the kernel is built and launched
  (:func:`_cpu_interpreter`); importing or using this module leaves ``os.environ`` and Triton's
  settings as they were.
- **Non-overlapped baseline.** It gathers every remote row into a local buffer first, then aggregates
  everything from local memory.
- **Normalisation.** ``mean`` and ``gcn`` are applied outside the kernel, which only sums: GCN
  pre-scales the embeddings by ``1/sqrt(d_u)`` and post-scales the rows by ``1/sqrt(d_v)``.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..errors import NetweaveError
from .layout import Layout


def _triton():
    """torch and triton, imported as they are (nothing is configured here)."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise NetweaveError(f"the MGG kernels need torch and triton ({exc.name} is missing): "
                            "pip install -e '.[kernels]'") from None
    return torch, triton, tl


@contextmanager
def _cpu_interpreter():
    """Without a GPU, Triton's interpreter for the duration of the block (the CPU path): ``triton.jit``
    reads the setting when it wraps a kernel and the interpreter while it runs one. ``knobs.runtime.scope``
    puts Triton's runtime settings and their environment variables (``TRITON_INTERPRET``) back after."""
    torch, triton, _ = _triton()
    if torch.cuda.is_available():
        yield
        return
    with triton.knobs.runtime.scope():
        triton.knobs.runtime.interpret = True
        yield


_KERNEL = None


def _kernel():
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    with _cpu_interpreter():
        _KERNEL = _build_kernel()
    return _KERNEL


def _build_kernel():
    torch, triton, tl = _triton()

    # Sums are ``tl.reduce(x, 0, tl.standard._sum_combine)``, what ``tl.sum`` does for float32: ``tl.sum``
    # is itself a ``@triton.jit`` function, wrapped for the interpreter only if TRITON_INTERPRET was set
    # when triton was imported, whereas ``tl.reduce`` is a builtin that the interpreter replaces (with
    # numpy for this combine function). So the CPU path works however triton was imported, with no
    # process-wide setting.
    @triton.jit
    def mgg_warp(out_ptr, local_ptr, remote_ptr, l_row, l_start, l_end, l_idx, r_row, r_start, r_end, r_idx,
                 n_lnp, n_rnp, dim, stride, DIST: tl.constexpr, PS: tl.constexpr, BLOCK_D: tl.constexpr,
                 OVERLAP: tl.constexpr):
        w = tl.program_id(0)
        cols = tl.arange(0, BLOCK_D)
        cmask = cols < dim
        k = tl.arange(0, PS)
        for i in tl.static_range(DIST):
            p = w * DIST + i
            # 1. issue the remote partition's loads first (async remote access, Figure 6b step 1)
            has_r = p < n_rnp
            rs = tl.load(r_start + p, mask=has_r, other=0)
            re = tl.load(r_end + p, mask=has_r, other=0)
            rm = (rs + k) < re
            rid = tl.load(r_idx + rs + k, mask=rm, other=0)
            rvals = tl.load(remote_ptr + rid[:, None] * stride + cols[None, :], mask=rm[:, None] & cmask[None, :],
                            other=0.0)
            if not OVERLAP:  # the in-house baseline: wait for the remote rows before any local work
                rsum = tl.reduce(rvals, 0, tl.standard._sum_combine)
                rrow = tl.load(r_row + p, mask=has_r, other=0)
                tl.atomic_add(out_ptr + rrow * stride + cols, rsum, mask=cmask & has_r)
            # 2. aggregate the local partition while the remote rows are in flight
            has_l = p < n_lnp
            ls = tl.load(l_start + p, mask=has_l, other=0)
            le = tl.load(l_end + p, mask=has_l, other=0)
            lm = (ls + k) < le
            lid = tl.load(l_idx + ls + k, mask=lm, other=0)
            lvals = tl.load(local_ptr + lid[:, None] * stride + cols[None, :], mask=lm[:, None] & cmask[None, :],
                            other=0.0)
            lrow = tl.load(l_row + p, mask=has_l, other=0)
            lsum = tl.reduce(lvals, 0, tl.standard._sum_combine)
            tl.atomic_add(out_ptr + lrow * stride + cols, lsum, mask=cmask & has_l)
            # 3. then reduce the remote rows (Figure 6b step 2)
            if OVERLAP:
                rrow = tl.load(r_row + p, mask=has_r, other=0)
                rsum = tl.reduce(rvals, 0, tl.standard._sum_combine)
                tl.atomic_add(out_ptr + rrow * stride + cols, rsum, mask=cmask & has_r)

    return mgg_warp


def _pow2(v: int) -> int:
    return 1 << max(0, int(v - 1).bit_length())


def run_gpu(layout: Layout, g: int, local, remote, out, overlap: bool = True) -> None:
    """Aggregate GPU ``g``'s rows into ``out[rows]``. ``local`` holds its ``(shard, D)`` embeddings and
    ``remote`` all ``(n, D)`` embeddings, read by global id."""
    torch, triton, _ = _triton()
    work = layout.gpus[g]
    c = layout.config
    dev = out.device
    as_t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.int64, device=dev)  # noqa: E731
    lnp, rnp = work.lnp, work.rnp
    remote_ids = work.remote_owner * layout.shard + work.remote_off
    warps = work.warps(c.dist)
    if warps == 0:
        return
    lo = work.rows[0]
    target = out[lo:work.rows[1]]
    kernel = _kernel()
    with _cpu_interpreter():
        kernel[(warps,)](target, local, remote, as_t(lnp[:, 0]), as_t(lnp[:, 1]), as_t(lnp[:, 2]), as_t(work.local_idx),
                         as_t(rnp[:, 0]), as_t(rnp[:, 1]), as_t(rnp[:, 2]), as_t(remote_ids), len(lnp), len(rnp),
                         out.shape[1], out.stride(0), DIST=c.dist, PS=_pow2(c.ps), BLOCK_D=_pow2(out.shape[1]),
                         OVERLAP=overlap)


def mgg_sum(layout: Layout, x, overlap: bool = True, remote=None):
    """``(n, D)`` neighbour sums of ``x`` with the MGG kernel on every GPU's workload (one device here).

    ``remote`` is the memory remote rows are read from (default ``x``; e.g. a pinned host copy).
    """
    torch, _, _ = _triton()
    out = torch.zeros_like(x)
    src = x if remote is None else remote
    for g in range(len(layout.gpus)):
        run_gpu(layout, g, x[g * layout.shard:(g + 1) * layout.shard].contiguous(), src, out, overlap)
    return out


def non_overlapped_sum(layout: Layout, x):
    """The in-house baseline: gather every remote row to local memory first, then aggregate."""
    torch, _, _ = _triton()
    out = torch.zeros_like(x)
    for g, work in enumerate(layout.gpus):
        ids = torch.as_tensor(work.remote_owner * layout.shard + work.remote_off, dtype=torch.int64, device=x.device)
        fetched = x[ids]  # the whole remote fetch, before any aggregation
        lo, hi = work.rows
        rows = torch.as_tensor(np.repeat(np.arange(hi - lo), np.diff(work.remote_ptr)), dtype=torch.int64,
                               device=x.device)
        local = x[g * layout.shard:(g + 1) * layout.shard]
        lrows = torch.as_tensor(np.repeat(np.arange(hi - lo), np.diff(work.local_ptr)), dtype=torch.int64,
                                device=x.device)
        lids = torch.as_tensor(work.local_idx, dtype=torch.int64, device=x.device)
        out[lo:hi].index_add_(0, lrows, local[lids])
        out[lo:hi].index_add_(0, rows, fetched)
    return out


def _edges(layout: Layout):
    """``(dst, src)`` global ids of every aggregated edge (row ``dst`` sums ``src``)."""
    dst, src = [], []
    for g, work in enumerate(layout.gpus):
        lo, hi = work.rows
        dst += [lo + np.repeat(np.arange(hi - lo), np.diff(work.local_ptr)),
                lo + np.repeat(np.arange(hi - lo), np.diff(work.remote_ptr))]
        src += [g * layout.shard + work.local_idx, work.remote_owner * layout.shard + work.remote_off]
    return np.concatenate(dst), np.concatenate(src)


def mgg_aggregate(layout: Layout, x, degree, mode: str = "sum", overlap: bool = True):
    """Differentiable MGG aggregation of ``x`` ``(n, D)``: ``sum``, ``mean`` or ``gcn`` (full-graph ``degree``).

    The backward pass sums the output gradients over the transposed edges (``index_add``), so the
    kernels can serve a GCN or GIN layer.
    """
    torch, _, _ = _triton()
    if mode not in ("sum", "mean", "gcn"):
        raise NetweaveError(f"unknown aggregation {mode!r}; use sum, mean or gcn")
    dst, src = (torch.as_tensor(a, dtype=torch.int64, device=x.device) for a in _edges(layout))

    class MGGSum(torch.autograd.Function):
        @staticmethod
        def forward(ctx, h):
            return mgg_sum(layout, h.contiguous(), overlap)

        @staticmethod
        def backward(ctx, grad):
            return torch.zeros_like(grad).index_add_(0, src, grad[dst])

    deg = torch.as_tensor(np.maximum(degree, 1), dtype=x.dtype, device=x.device)[:, None]
    if mode == "gcn":
        inv = deg.rsqrt()
        return MGGSum.apply(x * inv) * inv
    out = MGGSum.apply(x)
    return out / deg if mode == "mean" else out
