"""A worker's gradients on the wire: cast to its precision, then to the fixed point the switches
add, in the precision's container (PAHInA §IV-B: workers send fp8/fp16/fp32 gradients; switches
aggregate each precision apart; the PS normalises the precisions and updates).

Two steps, both explicit about their error:

1. **Precision.** fp32 is kept; fp16 is rounded to IEEE half (relative error ≤ 2^-11 for normal
   values, absolute ≤ 2^-25 below 2^-14); fp8 is rounded to E4M3 (``torch.float8_e4m3fn``,
   relative error ≤ 2^-4) after a per-tensor power-of-two scale that brings its largest magnitude
   under E4M3's 448 (the usual fp8 scaling; a power of two is exact and is undone after the cast),
   so values below 2^-9 of that scale (E4M3's subnormals) lose relative precision.
2. **Fixed point.** The cast values become ``round(v · 2^E_p)`` in the precision's container
   (:data:`~netweave.dataplane.fixedpoint.CONTAINER_BITS`: fp8 int16, fp16 int32, fp32 int64),
   with one exponent ``E`` per step shared by all workers (:func:`step_exponent`, chosen from the
   previous step's largest gradient; netweave's choice where the paper is silent, like dynamic
   loss scaling) on the int64 scale, and ``E_p = E − (64 − VALUE_BITS[p])``: E − 48 for fp8, E − 32
   for fp16, and E − 7 for fp32, whose int64 values are limited to ±2^56 (int57) so that a sum of
   64 workers cannot wrap int64. Every container thus has the same relative headroom (the sum of
   all workers stays 2^HEADROOM_BITS below its value limit), and up-casting p → q is a left shift
   by ``VALUE_BITS[q] − VALUE_BITS[p]`` (:func:`upcast`: 16 for fp8 → fp16, 25 for fp16 → fp32,
   41 for fp8 → fp32), exact. The absolute error of one value is ≤ 2^-(E_p+1): for the same
   ``E``, fp8's is 2^16 times fp16's, which is 2^25 times fp32's. A value beyond the container's
   value range saturates at its bound and is counted, never silent.

The switches add each precision exactly in int64 and saturate the complete sum to its container
(:mod:`netweave.dataplane.fixedpoint`; counted and flagged). The PS decodes each precision's sum
with its ``E_p`` in float64 (exact while |sum| < 2^53, relative error ≤ 2^-53 above), adds the
precisions and divides by the number of workers: the data-parallel mean gradient, returned in
float32 (relative error ≤ 2^-24).
"""

from __future__ import annotations

import numpy as np

from ...dataplane import fixedpoint

E4M3_MAX = 448.0
HEADROOM_BITS = 2  # the sum of all workers stays 4x below the containers' value limits
SCALE_BITS = 64  # E is the exponent of this scale; a container of VALUE_BITS b uses E - (64 - b)
MAX_EXPONENT = 24 + SCALE_BITS - fixedpoint.VALUE_BITS["fp8"]  # 72: fp8 resolves at most 2^-25 (finer ones finer)
MIN_EXPONENT = -8 + SCALE_BITS - fixedpoint.VALUE_BITS["fp16"]  # 24: fp16 holds values up to 2^39
UNKNOWN_PEAK = 1.0  # a peak that says nothing (0, NaN, inf) is taken as 1.0, the training's first guess


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


def container_exponent(precision: str, exponent: int) -> int:
    """``E_p``, the exponent of ``precision``'s container for the step exponent ``E``."""
    return exponent - (SCALE_BITS - fixedpoint.VALUE_BITS[precision])


def step_exponent(peak: float, workers: int) -> int:
    """The fixed-point exponent E for gradients whose largest magnitude is about ``peak``, summed
    over ``workers``: the largest E with workers · peak · 2^E ≤ 2^(63 − HEADROOM_BITS), within
    [MIN_EXPONENT, MAX_EXPONENT]. Then in every container the sum of all workers' values of
    magnitude ``peak`` stays 2^HEADROOM_BITS below the container's value limit, and one worker's
    value saturates only beyond 2^HEADROOM_BITS · workers · peak."""
    if not np.isfinite(peak) or peak <= 0:
        peak = UNKNOWN_PEAK
    e = int(np.floor(SCALE_BITS - 1 - HEADROOM_BITS - np.log2(workers * peak)))
    return max(MIN_EXPONENT, min(MAX_EXPONENT, e))


def encode(g: np.ndarray, precision: str, exponent: int) -> tuple[np.ndarray, int]:
    """``(fixed-point values in precision's container dtype, how many saturated)`` of ``g`` cast to
    ``precision`` at step exponent ``exponent`` (the container's ``E_p``: see the module)."""
    wide = np.rint(np.ldexp(cast(g, precision).astype(np.float64), container_exponent(precision, exponent)))
    return fixedpoint.clip(wide, precision)


def upcast(ints: np.ndarray, from_precision: str, to_precision: str) -> np.ndarray:
    """Fixed-point values (or complete sums) of ``from_precision`` at step exponent E as
    ``to_precision``'s container at the same E: a left shift by VALUE_BITS[to] − VALUE_BITS[from],
    exact; any value of the source container, saturated sums included, lands within the target's
    value range (so 64 of them still cannot wrap an int64 sum). Only widening is possible."""
    shift = fixedpoint.VALUE_BITS[to_precision] - fixedpoint.VALUE_BITS[from_precision]
    if shift < 0:
        raise ValueError(f"cannot up-cast {from_precision} to the narrower {to_precision}")
    ints = np.asarray(ints)
    lo, hi = fixedpoint.container_range(from_precision)
    if ints.size and (ints.dtype.kind not in "iu" or int(ints.min()) < lo or int(ints.max()) > hi):
        raise ValueError(f"{from_precision} values must be integers within its container [{lo}, {hi}]")
    return np.left_shift(ints.astype(np.int64), shift).astype(fixedpoint.container_dtype(to_precision))


def decode_mean(sums: dict[str, np.ndarray], exponent: int, workers: int) -> np.ndarray:
    """The mean gradient (float32) from each precision's fixed-point sum, each decoded with its
    container's exponent (the PS's normalisation)."""
    total = sum(np.ldexp(np.asarray(v, dtype=np.float64), -container_exponent(p, exponent)) for p, v in sums.items())
    return (total / workers).astype(np.float32)
