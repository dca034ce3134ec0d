"""Fixed-point gradients, as a switch or an XDP program must add them (no floating point in the
data path).

A value ``v`` of precision ``p`` travels as ``round(v · 2^SCALE_BITS[p])`` in a signed 32-bit
integer. The scales follow the precisions' resolution: fp8 (E4M3, 3 mantissa bits) 2^4, fp16
(10 bits) 2^10, fp32 2^16 — so fp32 gradients must stay within ±32768 and sums of N of them
within ±32768 as well. Encoding a value out of range, or a sum leaving the int32 range,
*saturates* at the bound and is reported (counted and flagged on the result), never silent.
"""

from __future__ import annotations

import numpy as np

SCALE_BITS = {"fp8": 4, "fp16": 10, "fp32": 16}
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def encode(values: np.ndarray, precision: str) -> tuple[np.ndarray, int]:
    """``(int32 fixed-point values, how many saturated)``."""
    scaled = np.rint(np.asarray(values, dtype=np.float64) * (1 << SCALE_BITS[precision]))
    saturated = int(((scaled < INT32_MIN) | (scaled > INT32_MAX)).sum())
    return np.clip(scaled, INT32_MIN, INT32_MAX).astype(np.int32), saturated


def decode(values: np.ndarray, precision: str) -> np.ndarray:
    return np.asarray(values, dtype=np.float64) / (1 << SCALE_BITS[precision])


def add(acc: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, int]:
    """Saturating int32 addition: ``(acc + values clipped, how many saturated)``."""
    wide = acc.astype(np.int64) + values.astype(np.int64)
    saturated = int(((wide < INT32_MIN) | (wide > INT32_MAX)).sum())
    return np.clip(wide, INT32_MIN, INT32_MAX).astype(np.int32), saturated
