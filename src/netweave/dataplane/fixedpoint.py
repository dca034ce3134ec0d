"""Fixed-point gradients, as a switch or an XDP program must add them (no floating point in the
data path).

A value ``v`` of precision ``p`` travels as ``round(v · 2^SCALE_BITS[p])`` in a signed 32-bit
integer. The scales follow the precisions' resolution: fp8 (E4M3, 3 mantissa bits) 2^4, fp16
(10 bits) 2^10, fp32 2^16 — so fp32 gradients must stay within ±32768 and sums of N of them
within ±32768 as well. Encoding a value out of range, or a sum leaving the int32 range,
*saturates* at the bound and is reported (counted and flagged on the result), never silent.

A sum is accumulated exactly in 64 bits (:func:`accumulate`) and saturated once, when it is
complete (:func:`saturate`): the result does not depend on the order packets arrive in, so an XDP
data plane adding with atomic 64-bit adds on several CPUs and the userspace service give
bit-identical sums. (Saturating after every addition would not: ``MAX + 1 - 1`` gives ``MAX - 1``
in one order and ``MAX`` in another.)
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


def accumulate(acc: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The exact int64 running sum ``acc + values`` (no int32 sum of up to 2^32 workers can overflow it)."""
    return acc.astype(np.int64) + values.astype(np.int64)


def saturate(total: np.ndarray) -> tuple[np.ndarray, int]:
    """A complete int64 sum as int32: ``(clipped, how many values saturated)``."""
    saturated = int(((total < INT32_MIN) | (total > INT32_MAX)).sum())
    return np.clip(total, INT32_MIN, INT32_MAX).astype(np.int32), saturated
