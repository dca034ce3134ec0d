"""The streaming aggregation's packets (:mod:`.blockfp` on the wire), built and parsed a batch at
a time as rows of a ``uint8`` array (for ``sendmmsg``/``recvmmsg``: :mod:`netweave.testbed.net.batchio`).

A packet is a 22-byte header, big-endian, then ``count`` values of the precision's width,
little-endian biased integers (:mod:`.blockfp`)::

    magic "NWA2" | kind u8 | agg_id u16 | wor_id u16 | precision u8 | step u32 | chunk u16 |
    count u16 | exponent i8 | want i8 | flags u8 | workers u8 | values

``kind`` is DATA (a worker's values, or a child aggregator's partial sum), RESULT (a complete
sum, multicast down to every worker) or PULL (a worker asks an aggregator for a sum it missed; a
PULL is as long as the sum, so the aggregator writes the sum into it). ``exponent``: the chunk's shared exponent; ``want``: the
largest exponent its values need (the switch keeps the maximum); ``flags`` bit 0: a value was
clipped (the switch ORs it); ``workers``: how many workers a RESULT sums. The XDP program
(:file:`bpf/stream_agg.bpf.c`) reads the same layout; the precision codes are
:data:`netweave.dataplane.packet.PRECISION_CODE`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dataplane.packet import PRECISION_CODE
from .blockfp import WIDTH, WIRE, values_per_packet

MAGIC = b"NWA2"
DATA, RESULT, PULL = 1, 2, 3
CLIPPED = 1  # flags bit 0
HEADER = np.dtype([("magic", "S4"), ("kind", "u1"), ("agg_id", ">u2"), ("wor_id", ">u2"), ("precision", "u1"),
                   ("step", ">u4"), ("chunk", ">u2"), ("count", ">u2"), ("exponent", "i1"), ("want", "i1"),
                   ("flags", "u1"), ("workers", "u1")])
assert HEADER.itemsize == 22
PRECISION_OF = {code: p for p, code in PRECISION_CODE.items()}


def packet_bytes(precision: str, count: int) -> int:
    """UDP payload of a packet of ``count`` values."""
    return HEADER.itemsize + count * WIDTH[precision]


def stream_bytes(precision: str, size: int) -> int:
    """UDP payload bytes of a whole vector of ``size`` values at ``precision``."""
    per = values_per_packet(precision)
    full, rest = divmod(size, per)
    return full * packet_bytes(precision, per) + (packet_bytes(precision, rest) if rest else 0)


def build(kind: int, agg_id: int, wor_id: int, precision: str, step: int, first_chunk: int | np.ndarray,
          u: np.ndarray, *, exponents: np.ndarray | int, want: np.ndarray | int, flags: np.ndarray | int, size: int,
          workers: int = 0):
    """Rows ``(chunks, 22 + payload)`` and lengths of packets for chunks ``first_chunk, …`` (or the
    chunk numbers ``first_chunk`` lists) of a vector of ``size`` values whose biased integers are
    ``u`` ``(chunks, values_per_packet)`` (the last chunk of the vector holds ``size`` modulo the
    packet's values)."""
    k, per = u.shape
    ids = first_chunk + np.arange(k) if np.isscalar(first_chunk) else np.asarray(first_chunk, np.int64)
    counts = np.minimum(per, size - ids * per).astype(np.int64)
    rows = np.zeros((k, HEADER.itemsize + per * WIDTH[precision]), np.uint8)
    head = rows[:, :HEADER.itemsize].view(HEADER).reshape(k)
    head["magic"], head["kind"], head["agg_id"], head["wor_id"] = MAGIC, kind, agg_id, wor_id
    head["precision"], head["step"], head["chunk"] = PRECISION_CODE[precision], step, ids
    head["count"], head["exponent"], head["want"], head["flags"], head["workers"] = counts, exponents, want, flags, workers
    rows[:, HEADER.itemsize:] = np.ascontiguousarray(u, WIRE[precision]).view(np.uint8).reshape(k, -1)
    return rows, HEADER.itemsize + counts * WIDTH[precision]


@dataclass(frozen=True)
class Batch:
    """Parsed packets: ``header`` (a structured array of :data:`HEADER`) and the rows they came in."""

    header: np.ndarray
    rows: np.ndarray
    lengths: np.ndarray

    def values(self, i: int) -> np.ndarray:
        """Packet ``i``'s biased integers (``count`` of them)."""
        p = PRECISION_OF[int(self.header["precision"][i])]
        n = int(self.header["count"][i])
        return self.rows[i, HEADER.itemsize:HEADER.itemsize + n * WIDTH[p]].view(WIRE[p])


def parse(rows: np.ndarray, lengths: np.ndarray, k: int) -> Batch:
    """The well-formed packets among the first ``k`` rows (magic, a known precision, a length of
    exactly ``22 + count × width``); anything else is left out."""
    rows, lengths = rows[:k], np.asarray(lengths[:k], np.int64)
    long_enough = lengths >= HEADER.itemsize
    rows, lengths = rows[long_enough], lengths[long_enough]
    head = np.ascontiguousarray(rows[:, :HEADER.itemsize]).view(HEADER).reshape(len(rows))
    width = np.zeros(len(rows), np.int64)
    for p, code in PRECISION_CODE.items():
        width[head["precision"] == code] = WIDTH[p]
    ok = (head["magic"] == MAGIC) & (width > 0) & (lengths == HEADER.itemsize + head["count"].astype(np.int64) * width)
    return Batch(head[ok], rows[ok], lengths[ok])
