"""Dropout keyed by global vertex id, so a partitioned run drops exactly what one process drops.

``torch.nn.functional.dropout`` draws its mask from a per-process stream, so the mask a vertex
gets would depend on which worker owns it and in what order. Here the keep decision for entry
``(v, c)`` of layer ``l`` at step ``t`` is a hash of ``(seed, t, l, v, c)``: every partition of the
graph, and the single-process run, see the same mask. The hash is a 32-bit integer mix
(``lowbias32``-style); on CPU it runs in a parallel numba kernel, elsewhere in torch int64
arithmetic with multipliers below 2**31 (no overflow). Both give identical bits.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

_MASK32 = 0xFFFFFFFF
_C1, _C2 = 0x7FEB352D, 0x5BD1E995  # odd multipliers < 2**31 (lowbias32, murmur2)


def _mix32(h):
    """A 32-bit avalanche mix of integers in ``[0, 2**32)`` (torch int64 tensors or numba uint64)."""
    h = h ^ (h >> 16)
    h = (h * _C1) & _MASK32
    h = h ^ (h >> 15)
    h = (h * _C2) & _MASK32
    return h ^ (h >> 16)


_C1_32, _C2_32 = np.uint32(_C1), np.uint32(_C2)


@numba.njit(cache=True, inline="always")
def _mix32_nb(h):
    """:func:`_mix32` on a ``uint32``, each step truncated to 32 bits (numba widens ``uint32``
    arithmetic to 64): the same bits, in 32-bit lanes LLVM vectorizes."""
    h = np.uint32(h ^ (h >> np.uint32(16)))
    h = np.uint32(h * _C1_32)
    h = np.uint32(h ^ (h >> np.uint32(15)))
    h = np.uint32(h * _C2_32)
    return np.uint32(h ^ (h >> np.uint32(16)))


def dropout_key(seed: int, step: int, layer: int) -> int:
    """A 32-bit salt for one (seed, step, layer)."""
    h = torch.tensor([(seed * 0x9E3779B1 + step * 0x85EBCA77 + layer * 0xC2B2AE3D) & _MASK32])
    return int(_mix32(_mix32(h) ^ (seed >> 32 & _MASK32)))


def keep_mask(vertex: torch.Tensor, column: torch.Tensor, p: float, key: int) -> torch.Tensor:
    """``(E,)`` bool: is entry ``(vertex[e], column[e])`` kept? Each is kept with probability ``1 - p``."""
    v = vertex.to(torch.int64)
    h = _mix32((v & _MASK32) ^ key)
    h = _mix32(h ^ (v >> 32))
    h = _mix32(h ^ column.to(torch.int64))
    return h >= _threshold(p)


def _threshold(p: float) -> int:
    return int(p * 2.0 ** 32)


@numba.njit(cache=True, parallel=True)
def _scale_kept(x, ids, key, threshold, scale, nonzero_only):
    """``(R, D)`` factors: ``scale`` where entry ``(ids[r], c)`` is kept, else 0 (keep_mask, in numba).
    With ``nonzero_only`` the result is ``x * factor`` (a zero entry stays +0, whatever its sign
    or its mask)."""
    rows, width = x.shape
    out = np.zeros_like(x)
    zero = x.dtype.type(0)
    t, k = np.uint32(threshold), np.uint32(key)
    for r in numba.prange(rows):
        v = np.uint64(ids[r])
        base = _mix32_nb(_mix32_nb(np.uint32(v & np.uint64(_MASK32)) ^ k) ^ np.uint32(v >> np.uint64(32)))
        for c in range(width):  # no branch: every entry hashed, 8 at a time (a zero's product is 0 anyway)
            keep = _mix32_nb(base ^ np.uint32(c)) >= t
            if nonzero_only:
                out[r, c] = x[r, c] * scale if keep and x[r, c] != zero else zero
            else:
                out[r, c] = scale if keep else zero
    return out


def vertex_dropout(x: torch.Tensor, vertex_ids: torch.Tensor, p: float, key: int, training: bool) -> torch.Tensor:
    """Inverted dropout of the rows of ``x`` (``(R, D)``) owned by global vertices ``vertex_ids`` (``(R,)``).

    When ``x`` needs no gradient (input features) the kernel returns ``x`` masked and scaled
    itself, with the same values as masking every entry, instead of the factors.
    """
    if not training or p <= 0.0:
        return x
    if p >= 1.0:
        return torch.zeros_like(x)
    scale = 1.0 / (1.0 - p)
    if x.device.type == "cpu":
        nonzero_only = not x.requires_grad
        values = x.detach().numpy()
        factors = torch.from_numpy(_scale_kept(values, vertex_ids.numpy(), key, _threshold(p),
                                               values.dtype.type(scale), nonzero_only))
        return factors if nonzero_only else x * factors
    rows = vertex_ids.repeat_interleave(x.shape[1])
    cols = torch.arange(x.shape[1], device=x.device).repeat(x.shape[0])
    return x * keep_mask(rows, cols, p, key).view_as(x).to(x.dtype) * scale
