"""Fixed-point gradients, as a switch or an XDP program must add them (no floating point in the
data path), in precision-sized containers.

**Containers.** Each precision travels in a signed integer twice its float's width (the one table
every part of netweave uses: packet, XDP program, userspace planes, PS, gradients)::

    precision   container   bytes per value   (PAHInA's payload ratio fp8 : fp16 : fp32 = 1 : 2 : 4)
    fp8         int16       2
    fp16        int32       4
    fp32        int64       8

A single *value* may use its whole container, except fp32's: it is limited to ±2^56 (a signed
57-bit value, :data:`VALUE_BITS`) so that the int64 sum of :data:`MAX_WORKERS` (the bitmap's 64)
values cannot wrap (64 · 2^56 = 2^62). A *sum* is accumulated exactly in int64
(:func:`accumulate`: 64 int16/int32 values or int57 values never overflow it) and saturated
once, when it is complete, to its container's range (:func:`saturate`): the result does not
depend on the order packets arrive in, so an XDP data plane adding with atomic 64-bit adds on
several CPUs and the userspace service give bit-identical sums. (Saturating after every addition
would not: ``MAX + 1 - 1`` gives ``MAX - 1`` in one order and ``MAX`` in another.) Saturation
is reported (counted, and flagged on the result), never silent; an fp32 sum never saturates.

**The demo's scales** (:func:`encode`/:func:`decode`, used by ``netweave aggsvc demo``): a value
``v`` of precision ``p`` travels as ``round(v · 2^SCALE_BITS[p])``: fp8 (E4M3, 3 mantissa bits)
2^4, fp16 (10 bits) 2^10, fp32 2^16. fp8 values must stay within ±2048 (int16), fp16 within
±2^21 (int32), fp32 within ±2^40 (the int57 value limit); beyond, a value saturates and is
counted. The absolute error of one value is at most 2^-(SCALE_BITS[p]+1). (The testbed's training
uses a per-step exponent instead: :mod:`netweave.testbed.gradients`.)
"""

from __future__ import annotations

import numpy as np

CONTAINER_BITS = {"fp8": 16, "fp16": 32, "fp32": 64}  # the fixed-point container of each precision
MAX_WORKERS = 64  # values one sum adds at most (the aggregators' 64-bit worker bitmap)
VALUE_BITS = {p: min(b, 57) for p, b in CONTAINER_BITS.items()}  # 57: 64 values of ±2^56 sum within ±2^62
SCALE_BITS = {"fp8": 4, "fp16": 10, "fp32": 16}  # the demo's fixed scales


def container_dtype(precision: str) -> np.dtype:
    """The numpy dtype of ``precision``'s container (native byte order)."""
    return np.dtype(f"int{CONTAINER_BITS[precision]}")


def wire_dtype(precision: str) -> np.dtype:
    """The container as it travels: big-endian (``>i2``, ``>i4``, ``>i8``)."""
    return np.dtype(f">i{CONTAINER_BITS[precision] // 8}")


def value_bytes(precision: str) -> int:
    """Bytes one value of ``precision`` takes on the wire (2, 4, 8)."""
    return CONTAINER_BITS[precision] // 8


def container_range(precision: str) -> tuple[int, int]:
    """The range of ``precision``'s container, where complete sums saturate."""
    bits = CONTAINER_BITS[precision]
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def value_range(precision: str) -> tuple[int, int]:
    """The range one encoded value may take: the container's, but ±2^56 for fp32 (int57)."""
    bits = VALUE_BITS[precision]
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def clip(wide: np.ndarray, precision: str) -> tuple[np.ndarray, int]:
    """Rounded float64 values as ``precision``'s container: ``(clipped, how many were out of the
    value range)`` — the one place encoders saturate."""
    lo, hi = value_range(precision)
    # compared as integers: 2^56 - 1 has no float64 (|rounded values| ≤ 2^62 convert exactly; beyond
    # is beyond every value range anyway)
    ints = np.clip(wide, -2.0 ** 62, 2.0 ** 62).astype(np.int64)
    saturated = int(((ints < lo) | (ints > hi)).sum())
    return np.clip(ints, lo, hi).astype(container_dtype(precision)), saturated


def encode(values: np.ndarray, precision: str) -> tuple[np.ndarray, int]:
    """``(fixed-point values in the container's dtype, how many saturated)`` at the demo's scale."""
    return clip(np.rint(np.asarray(values, dtype=np.float64) * (1 << SCALE_BITS[precision])), precision)


def decode(values: np.ndarray, precision: str) -> np.ndarray:
    return np.asarray(values, dtype=np.float64) / (1 << SCALE_BITS[precision])


def accumulate(acc: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The exact int64 running sum ``acc + values`` (no sum of MAX_WORKERS values within their
    value range can overflow it)."""
    return acc.astype(np.int64) + values.astype(np.int64)


def saturate(total: np.ndarray, precision: str) -> tuple[np.ndarray, int]:
    """A complete int64 sum in ``precision``'s container: ``(clipped, how many values saturated)``."""
    lo, hi = container_range(precision)
    total = np.asarray(total, dtype=np.int64)
    saturated = int(((total < lo) | (total > hi)).sum())
    return np.clip(total, lo, hi).astype(container_dtype(precision)), saturated
