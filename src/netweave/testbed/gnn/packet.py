"""The packets of the kernel data plane (``bpf/gnn_switch.bpf.c``), built and parsed a batch at a
time as rows of a ``uint8`` array (:mod:`netweave.testbed.net.batchio`).

A packet is UDP: a 28-byte little-endian :data:`HEADER`, then ``count`` float32 values (chunk
``chunk`` of a row, :data:`~.tables.VALUES` values a chunk; or, in a UNIT or COPY of a layer whose
rows are one chunk, ``count / dim`` whole rows: units ``unit``, ``unit + 1``, … of one sender and
block with one copy mask, :func:`~.tables.unit_packets`, beyond the paper)::

    magic "NWGU" | kind u8 | layer u8 | direction u8 | flags u8 | seq u32 | block u16 | sender u16 |
    unit u32 | chunk u16 | count u16 | target u32 | values

Kinds (switchgnn.txt §3.2–3.4): UNIT (a worker's row chunk, up), SUM (a complete sum, down: ``unit``
is the destination vertex, ``sender`` the worker whose unit completed it; with flag :data:`ROWS`,
several sums to one worker, beyond the paper: ``count = rows · (dim + 1)`` words, the ``rows`` rows'
values, then their ``rows`` uint32 vertices; ``sender`` the worker whose unit completed the last),
COPY (a unit copied down to a worker that sums it itself), DONE (up) and NEXT (down): block
synchronisation; PULL (up, copied to every other worker: ``count`` u32 pairs (vertex, chunk) whose
contributions the puller wants; ``target`` its rank) and RESEND (a contribution again, forwarded to
``target``, never aggregated); CNP (§3.4: a packet to this worker was ECN-marked; forwarded to
``target``, that packet's sender, which halves its rate); END (up, copied to every worker: the
sender's last unit of the block has gone up, so a worker that has every worker's END and still
misses a cell has lost it: beyond the paper; a switch of several shards copies it from each shard,
behind the units it walked there, with ``chunk`` the shard and ``target`` the shards, and a worker
waits for every shard's). ``flags`` bit 0: a value saturated (:mod:`.fixed`);
bit 1: ECN, set by the switch's port when its queue is longer than the threshold (:mod:`.ecn`); bit
3: :data:`ROWS` (a SUM of several rows). ``seq`` numbers the exchanges of a run, from 1.
"""

from __future__ import annotations

import numpy as np

from .fixed import LANES
from .tables import VALUES

MAGIC = b"NWGU"
UNIT, SUM, COPY, DONE, NEXT, PULL, RESEND, CNP, END = range(1, 10)
SATURATED, ECN, ROWS = 1, 2, 8
HEADER = np.dtype([("magic", "S4"), ("kind", "u1"), ("layer", "u1"), ("direction", "u1"), ("flags", "u1"),
                   ("seq", "<u4"), ("block", "<u2"), ("sender", "<u2"), ("unit", "<u4"), ("chunk", "<u2"),
                   ("count", "<u2"), ("target", "<u4")])
assert HEADER.itemsize == 28
HB = HEADER.itemsize
MAX_WORDS = VALUES + VALUES // LANES  # 4-byte words after the header, at most: a SUM of rows' values and vertices


def build(kind: int, *, layer: int, direction: int, seq: int, block: int, sender: int, unit, chunk, values: np.ndarray,
          target: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(k, 28 + 4 n)`` and lengths of ``k`` packets: ``unit``/``chunk`` per packet (arrays or
    scalars), ``values`` ``(k, n)`` float32 (or uint32 words)."""
    values = np.ascontiguousarray(values)
    k, n = values.shape
    rows = np.empty((k, HB + 4 * n), np.uint8)
    head = rows[:, :HB].view(HEADER).reshape(k)
    head["magic"], head["kind"], head["layer"], head["direction"], head["flags"] = MAGIC, kind, layer, direction, 0
    head["seq"], head["block"], head["sender"], head["unit"], head["chunk"] = seq, block, sender, unit, chunk
    head["count"], head["target"] = n, target
    rows[:, HB:] = values.view(np.uint8).reshape(k, 4 * n)
    return rows, np.full(k, HB + 4 * n, np.int64)


def parse(rows: np.ndarray, lengths: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The well-formed packets among the first ``k`` rows (magic, a length of ``28 + 4 count``):
    their headers and their row indices."""
    lengths = np.asarray(lengths[:k], np.int64)
    idx = np.flatnonzero(lengths >= HB)
    head = np.ascontiguousarray(rows[idx, :HB]).view(HEADER).reshape(idx.size)
    ok = (head["magic"] == MAGIC) & (lengths[idx] == HB + 4 * head["count"].astype(np.int64))
    return head[ok], idx[ok]
