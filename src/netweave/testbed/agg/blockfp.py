"""The paper's byte widths on the wire: block floating point with a shared exponent per packet.

PAHInA's workers send fp8, fp16 or fp32 gradients, and its model charges 1 : 2 : 4 bytes a value
(pahina.txt §III, ``netweave.route.pahina.PAYLOAD``). Exact integer sums in a switch need integers,
so a packet carries ``b``-bit integers (b = 8, 16, 32) and one exponent ``e``: value ``i`` stands for
``q_i · 2^e`` — block floating point, as SwitchML does (Sapio et al., NSDI 2021, §4.3). The switch
adds integers, wider than ``b`` bits, and never sees a float.

* **No overflow, by construction.** A group of ``N`` workers quantises to ``|q| ≤ Q = ⌊(2^(b−1) − 1) / N⌋``
  (:func:`q_limit`), so the sum of all ``N`` fits ``b`` bits again: a RESULT is as long as a DATA
  packet (the sum goes down at the width it came up), and the switch never saturates. A worker
  whose value exceeds ``Q · 2^e`` clips it and says so (a flag the switch ORs into the result).
* **Biased integers** (:data:`BIAS`): ``u = q + 2^(b−1)``, unsigned, little-endian. A switch adds
  ``N`` of them in lanes twice as wide (XDP adds eight 1-byte values with four 64-bit
  instructions: :file:`bpf/stream_agg.bpf.c`) and removes ``(N − 1) · 2^(b−1)`` when the sum is
  complete, which leaves ``Σq + 2^(b−1)``: again a biased ``b``-bit integer (:func:`aggregate`).
  Partial sums of a multi-level tree are such integers too, so a parent adds its children's sums
  exactly like workers' values (``N`` is then the workers under the root of the tree).
* **The exponent every worker agrees on.** All workers of a group must use the same ``e`` for a
  chunk. Each packet also carries ``want``, the exponent its own values need
  (:func:`exponent_for`); the switch keeps the largest, and the RESULT carries it to every worker.
  Step ``t + 1`` uses ``want_t + HEADROOM`` for that chunk, known to all. The first step has no
  sum to learn from: every worker computes the first step's gradient of *every* worker's shard
  (the models start equal, so all find the same peaks: :func:`exponents_for`), a one-time cost of
  ``N − 1`` extra backward passes. This is netweave's choice (SwitchML negotiates per tensor block
  with the same one-step lag); it needs no extra round trip.

Everything here is the reference the XDP program and the userspace plane are checked against, bit
for bit (``tests/testbed/agg/test_blockfp.py``, ``test_stream.py``).
"""

from __future__ import annotations

import numpy as np

BITS = {"fp8": 8, "fp16": 16, "fp32": 32}
WIDTH = {p: b // 8 for p, b in BITS.items()}  # bytes a value on the wire: 1 : 2 : 4, the paper's
PAYLOAD_BYTES = 2048  # values of one packet: 2,048 fp8, 1,024 fp16, 512 fp32 (a 3,000-byte MTU holds it)
WIRE = {p: np.dtype(f"<u{w}") for p, w in WIDTH.items()}
BIAS = {p: 1 << (b - 1) for p, b in BITS.items()}
HEADROOM = {"fp8": 1, "fp16": 2, "fp32": 4}  # next step's exponent: the largest wanted one + this (×2, ×4, ×16 of
# room for gradients that grow between steps; the wider the integers, the more room costs nothing)
MIN_EXPONENT, MAX_EXPONENT = -126, 127  # an int8 in the header


def values_per_packet(precision: str) -> int:
    """Values one packet of ``precision`` carries (2,048, 1,024 or 512)."""
    return PAYLOAD_BYTES // WIDTH[precision]


def chunks(size: int, precision: str) -> int:
    """Packets (chunks) a vector of ``size`` values takes at ``precision``."""
    return -(-size // values_per_packet(precision))


def q_limit(precision: str, workers: int) -> int:
    """``Q``: the largest ``|q|`` one of ``workers`` may send, so that their sum fits ``b`` bits."""
    return ((1 << (BITS[precision] - 1)) - 1) // workers


def exponent_for(peak: np.ndarray | float, precision: str, workers: int) -> np.ndarray:
    """The smallest exponent ``e`` with ``peak ≤ Q · 2^e`` (``peak`` 0 or not finite: the smallest
    exponent), clipped to an int8."""
    peak = np.asarray(peak, dtype=np.float64)
    ok = np.isfinite(peak) & (peak > 0)
    e = np.where(ok, np.ceil(np.log2(np.where(ok, peak, 1.0) / q_limit(precision, workers))), MIN_EXPONENT)
    return np.clip(e, MIN_EXPONENT, MAX_EXPONENT).astype(np.int8)


def next_exponent(want: np.ndarray, precision: str) -> np.ndarray:
    """Every chunk's exponent for the next step from the largest ``want`` its RESULT carried."""
    return np.clip(np.asarray(want, np.int64) + HEADROOM[precision], MIN_EXPONENT, MAX_EXPONENT).astype(np.int8)


def exponents_for(g: np.ndarray, precision: str, workers: int) -> np.ndarray:
    """The exponent of every chunk of ``g`` (float, the largest magnitudes any worker will send,
    e.g. the elementwise maximum of every worker's ``|gradient|``)."""
    per = values_per_packet(precision)
    rows = np.zeros(chunks(g.size, precision) * per)
    rows[:g.size] = np.abs(g)
    return exponent_for(rows.reshape(-1, per).max(axis=1), precision, workers)


def quantize(g: np.ndarray, precision: str, workers: int, exponents: np.ndarray):
    """``g`` (float32, any length) as biased ``b``-bit integers, chunk ``c`` at ``exponents[c]``.

    Returns ``(u, want, clipped)``: ``u`` ``(chunks, values_per_packet)`` of :data:`WIRE` (the last
    chunk padded with zeros, ``u = BIAS``), ``want`` ``(chunks,)`` int8, the exponent each chunk's own
    values need, and ``clipped`` ``(chunks,)`` bool, whether a value exceeded ``Q · 2^e``.
    Rounding is to nearest, ties to even (``np.rint``)."""
    return quantize_rows(_rows(g, precision), precision, workers, exponents)


def quantize_chunks(g: np.ndarray, precision: str, workers: int, ids: np.ndarray, exponents: np.ndarray):
    """:func:`quantize` of chunks ``ids`` of ``g`` only (a second round of a step's chunks)."""
    return quantize_rows(_rows(g, precision)[ids], precision, workers, exponents)


def _rows(g: np.ndarray, precision: str) -> np.ndarray:
    """``g`` zero-padded into ``(chunks, values_per_packet)`` float64 rows."""
    per = values_per_packet(precision)
    rows = np.zeros(chunks(g.size, precision) * per, np.float64)
    rows[:g.size] = g
    return rows.reshape(-1, per)


def quantize_rows(rows: np.ndarray, precision: str, workers: int, exponents: np.ndarray):
    """:func:`quantize` of rows already cut into chunks."""
    q_max = q_limit(precision, workers)
    scaled = np.ldexp(rows, -np.asarray(exponents, np.int64)[:, None])
    q = np.rint(scaled)
    clipped = (np.abs(q) > q_max).any(axis=1)
    q = np.clip(q, -q_max, q_max).astype(np.int64)
    want = exponent_for(np.abs(rows).max(axis=1), precision, workers)
    return (q + BIAS[precision]).astype(WIRE[precision]), want, clipped


def aggregate(u: np.ndarray, precision: str) -> np.ndarray:
    """The complete sum of ``k`` biased rows ``u`` ``(k, values)`` (workers' values or children's
    partial sums): ``Σ u − (k − 1) · BIAS``, a biased ``b``-bit integer again — what the switch sends."""
    u = np.asarray(u)
    total = u.astype(np.int64).sum(axis=0) - (u.shape[0] - 1) * BIAS[precision]
    if total.size and (total.min() < 0 or total.max() >= 2 * BIAS[precision]):
        raise ValueError("the sum left its width: the senders used a q limit for fewer workers")
    return total.astype(WIRE[precision])


def decode(u: np.ndarray, precision: str, exponents: np.ndarray) -> np.ndarray:
    """``Σq · 2^e`` (float64) of result rows ``u`` ``(chunks, values)``, chunk ``c`` at ``exponents[c]``."""
    q = np.asarray(u).astype(np.int64) - BIAS[precision]
    return np.ldexp(q.astype(np.float64), np.asarray(exponents, np.int64)[:, None])
