"""Dropout keyed by global vertex id, so a partitioned run drops exactly what one process drops.

``torch.nn.functional.dropout`` draws its mask from a per-process stream, so the mask a vertex
gets would depend on which worker owns it and in what order. Here the keep decision for entry
``(v, c)`` of layer ``l`` at step ``t`` is a hash of ``(seed, t, l, v, c)``: every partition of the
graph, and the single-process run, see the same mask. Hashes are 32-bit integer mixes evaluated
in int64 with constants below 2**31, so no product overflows on any device.
"""

from __future__ import annotations

import torch

_MASK32 = 0xFFFFFFFF
_C1, _C2 = 0x7FEB352D, 0x5BD1E995  # odd multipliers < 2**31 (lowbias32, murmur2)


def _mix32(h: torch.Tensor) -> torch.Tensor:
    """A 32-bit avalanche mix of int64 tensors holding values in ``[0, 2**32)``."""
    h = h ^ (h >> 16)
    h = (h * _C1) & _MASK32
    h = h ^ (h >> 15)
    h = (h * _C2) & _MASK32
    return h ^ (h >> 16)


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
    return h.to(torch.float64) >= p * 2.0 ** 32


def vertex_dropout(x: torch.Tensor, vertex_ids: torch.Tensor, p: float, key: int, training: bool) -> torch.Tensor:
    """Inverted dropout of the rows of ``x`` (``(R, D)``) owned by global vertices ``vertex_ids`` (``(R,)``).

    When ``x`` needs no gradient (input features) only its non-zero entries are hashed, which
    keeps bag-of-words inputs cheap and gives the same values as hashing every entry.
    """
    if not training or p <= 0.0:
        return x
    if p >= 1.0:
        return torch.zeros_like(x)
    scale = 1.0 / (1.0 - p)
    if x.requires_grad:
        rows = vertex_ids.repeat_interleave(x.shape[1])
        cols = torch.arange(x.shape[1], device=x.device).repeat(x.shape[0])
        return x * keep_mask(rows, cols, p, key).view_as(x).to(x.dtype) * scale
    r, c = torch.nonzero(x, as_tuple=True)
    out = torch.zeros_like(x)
    kept = keep_mask(vertex_ids[r], c, p, key)
    out[r[kept], c[kept]] = x[r[kept], c[kept]] * scale
    return out
