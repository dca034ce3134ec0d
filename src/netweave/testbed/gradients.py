"""A worker's gradients on the wire: cast to its precision, then to the int32 fixed point the
switches add (PAHInA §IV-B: workers send fp8/fp16/fp32 gradients; switches aggregate each precision
apart; the PS normalises the precisions and updates).

Two steps, both explicit about their error:

1. **Precision.** fp32 is kept; fp16 is rounded to IEEE half (relative error ≤ 2^-11); fp8 is
   rounded to E4M3 (``torch.float8_e4m3fn``, relative error ≤ 2^-4) after a per-tensor
   power-of-two scale that brings its largest magnitude under E4M3's 448 (the usual fp8 scaling;
   a power of two is exact and is undone after the cast).
2. **Fixed point.** The cast values become ``round(v · 2^E)`` in int32 with one exponent ``E`` per
   step shared by all workers, chosen from the previous step's largest gradient so that the sum
   of all workers still fits int32 with a margin (:func:`step_exponent`; netweave's choice where
   the paper is silent, like dynamic loss scaling). A value beyond the range saturates and is
   counted, never silent. The absolute error of one value is ≤ 2^-(E+1).

The PS decodes each precision's sum with the same ``E``, adds the precisions and divides by the
number of workers: the data-parallel mean gradient.
"""

from __future__ import annotations

import numpy as np

from ..dataplane import fixedpoint

E4M3_MAX = 448.0
HEADROOM_BITS = 2  # the sum of all workers stays 4x below int32's limit
MAX_EXPONENT = 24  # finer than fp32's own resolution for the gradients LeNet-size models have


def cast(g: np.ndarray, precision: str) -> np.ndarray:
    """``g`` (float32) rounded to ``precision`` and returned as float32."""
    g = np.asarray(g, dtype=np.float32)
    if precision == "fp32":
        return g
    if precision == "fp16":
        return g.astype(np.float16).astype(np.float32)
    if precision == "fp8":
        import torch

        peak = float(np.abs(g).max(initial=0.0))
        shift = 0 if peak == 0 else int(np.floor(np.log2(E4M3_MAX / peak)))
        scaled = torch.from_numpy(np.ldexp(g, shift))
        return np.ldexp(scaled.to(torch.float8_e4m3fn).to(torch.float32).numpy(), -shift)
    raise ValueError(f"unknown precision {precision!r}")


def step_exponent(peak: float, workers: int) -> int:
    """The fixed-point exponent E for gradients whose largest magnitude is about ``peak``, summed
    over ``workers``: the largest E with workers · peak · 2^E ≤ 2^(31 - HEADROOM_BITS)."""
    if not np.isfinite(peak) or peak <= 0:
        return MAX_EXPONENT
    e = int(np.floor(31 - HEADROOM_BITS - np.log2(workers * peak)))
    return max(-8, min(MAX_EXPONENT, e))


def encode(g: np.ndarray, precision: str, exponent: int) -> tuple[np.ndarray, int]:
    """``(int32 fixed-point values, how many saturated)`` of ``g`` cast to ``precision``."""
    wide = np.rint(np.ldexp(cast(g, precision).astype(np.float64), exponent))
    saturated = int(((wide < fixedpoint.INT32_MIN) | (wide > fixedpoint.INT32_MAX)).sum())
    return np.clip(wide, fixedpoint.INT32_MIN, fixedpoint.INT32_MAX).astype(np.int32), saturated


def decode_mean(sums: dict[str, np.ndarray], exponent: int, workers: int) -> np.ndarray:
    """The mean gradient (float32) from each precision's int32 sum (the PS's normalisation)."""
    total = sum(np.asarray(v, dtype=np.float64) for v in sums.values())
    return (np.ldexp(total, -exponent) / workers).astype(np.float32)
