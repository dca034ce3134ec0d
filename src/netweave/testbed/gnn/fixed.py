"""Exact sums for the SwitchGNN exchange: float32 rows in, float32 sums out, int64 fixed point in
between (switchgnn.txt §4: the switch's 128-byte aggregators hold integers, as ATP's and
SwitchML's do; a switch has no floating-point adder).

A value ``x`` (float32) enters an aggregator as ``to_fixed(x) = trunc(x · 2^FRAC)`` (an int64:
truncated toward zero, subnormals flushed to 0) and a complete sum leaves it as
``from_fixed(s)``, the float32 nearest to ``s · 2^-FRAC`` (ties to even). Integer addition is
associative, so a sum does not depend on the order its terms arrive in: the kernel data plane
(``bpf/gnn_switch.bpf.c``, the same two functions in C) and the userspace agent (:mod:`.switch`)
give the same bits for the same terms, whatever the interleaving of the workers' packets.

:data:`FRAC` per direction (0: forward embeddings, 1: backward gradients, which are smaller). A
value too large for its direction (``|x| · 2^FRAC ≥ 2^52``, or not finite) saturates and is
flagged (:data:`LIMIT`), and the exchange fails loudly rather than return a wrong sum. Each
aggregator lane is 8 bytes: an aggregator holds :data:`LANES` = 16 values.
"""

from __future__ import annotations

import numpy as np

FRAC = (36, 50)  # fractional bits: forward |x| < 2^16, backward |x| < 2^2 before saturation
SHIFT_MAX = 28  # mantissa (< 2^24) shifted by at most this: |fixed| < 2^52, room for 2^11 terms
LIMIT = (1 << 52) - 1
LANE_BYTES = 8
AGGREGATOR_BYTES = 128  # switchgnn.txt §4
LANES = AGGREGATOR_BYTES // LANE_BYTES


def frac_bits(direction: int) -> int:
    """Fractional bits of the exchange's direction (0 forward, 1 backward)."""
    return FRAC[1 if direction else 0]


def to_fixed(x: np.ndarray, frac: int) -> tuple[np.ndarray, bool]:
    """``(int64 array of x's shape, saturated)``: ``trunc(x · 2^frac)`` exactly as the data plane
    computes it from float32 bits (see the module docstring)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.int64)
    e = (bits >> 23) & 0xFF
    m = (bits & 0x7FFFFF) | 0x800000
    sh = e - 150 + frac
    sat = (e == 255) | ((sh > SHIFT_MAX) & (e != 0))
    left = np.left_shift(m, np.clip(sh, 0, SHIFT_MAX))
    right = np.right_shift(m, np.clip(-sh, 0, 63))
    v = np.where(sh >= 0, left, np.where(sh > -25, right, 0))
    v = np.where(e == 0, 0, np.where(sat, LIMIT, v))
    v = np.where(bits >> 31 == 1, -v, v)
    return v.astype(np.int64), bool(sat.any())


def _msb(a: np.ndarray) -> np.ndarray:
    """Index of the highest set bit of positive int64s (0 for 0)."""
    a = a.copy()
    out = np.zeros(a.shape, np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        big = a >= (np.int64(1) << step)
        out += np.where(big, step, 0)
        a = np.where(big, a >> step, a)
    return out


def from_fixed(s: np.ndarray, frac: int) -> np.ndarray:
    """The float32 nearest to ``s · 2^-frac`` (ties to even; below float32's normal range: 0), as
    the data plane rounds."""
    s = np.asarray(s, np.int64)
    neg = s < 0
    a = np.abs(s)
    msb = _msb(a)
    sh = msb - 23
    m_small = np.left_shift(a, np.clip(-sh, 0, 63))
    shr = np.clip(sh, 0, 63)
    m_big = np.right_shift(a, shr)
    rem = a & ((np.int64(1) << shr) - 1)
    half = np.where(shr > 0, np.int64(1) << np.maximum(shr - 1, 0), 1 << 62)
    up = (rem > half) | ((rem == half) & ((m_big & 1) == 1))
    m = np.where(sh <= 0, m_small, m_big + up)
    carry = m >= (1 << 24)
    m = np.where(carry, m >> 1, m)
    msb = msb + carry
    e = msb - frac + 127
    bits = (m & 0x7FFFFF) | (np.clip(e, 0, 255) << 23)
    bits = np.where((a == 0) | (e <= 0), 0, np.where(e >= 255, 0x7F800000, bits))
    bits = bits | np.where(neg, np.int64(1) << 31, 0)
    return bits.astype(np.uint32).view(np.float32)
