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


def split_rows(head: np.ndarray, data: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Packets of several rows of ``dim`` ≤ :data:`~.tables.VALUES` values (``count`` a multiple of
    ``dim``: a UNIT or COPY of consecutive units) as one packet a row: units ``unit``, ``unit + 1``,
    … with ``count = dim``, as rows ``(m, HB + 4 dim)``; the others keep their header and their
    first ``dim`` values."""
    count = head["count"].astype(np.int64)
    rows = np.where((dim <= VALUES) & (count > dim) & (count % dim == 0) & (count <= VALUES), count // dim, 1)
    return _split(head, data, dim, rows, rows > 1, lambda which, j: head["unit"][which] + j.astype(np.uint32))


def split_sums(head: np.ndarray, data: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """SUM packets of several rows (flag :data:`ROWS`: ``count = rows · (dim + 1)``, the values, then
    the vertices) as one SUM a row (``unit`` its vertex, ``count = dim``, without :data:`ROWS`), as
    rows ``(m, HB + 4 dim)``; the others keep their header and their first ``dim`` values. A
    malformed count leaves the packet whole (the receiver then refuses its count)."""
    ok, rows = _sum_rows(head, dim)

    def vertex(which, j):
        words = _words(data)
        at = np.minimum(rows[which] * dim + j, words.shape[1] - 1)  # after the rows' values (packed ones)
        return words[which, at]

    out, split = _split(head, data, dim, rows, ok, vertex)
    out["flags"] &= ~np.uint8(ROWS)
    return out, split


def last_vertices(head: np.ndarray, split: np.ndarray, dim: int) -> np.ndarray:
    """Per SUM packet ``head``, the vertex of its last row (``(n,)``; a SUM of one row: its
    ``unit``), read from ``split``, the headers :func:`split_sums` made of them: the row whose
    completer a SUM of several rows names as its sender."""
    _, rows = _sum_rows(head, dim)
    return split["unit"][np.cumsum(rows) - 1].astype(np.int64)


def _sum_rows(head: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Which SUM packets hold several rows (flag :data:`ROWS` and a count that fits), and their rows."""
    count = head["count"].astype(np.int64)
    ok = ((head["flags"] & ROWS) != 0) & (count > dim) & (count % (dim + 1) == 0) & (count <= MAX_WORDS)
    return ok, np.where(ok, count // (dim + 1), 1)


def _split(head, data, dim, rows, packed, unit) -> tuple[np.ndarray, np.ndarray]:
    """Packet ``i`` as ``rows[i]`` packets of one row each where ``packed[i]``: row ``j``'s ``dim``
    values, ``unit(which, j)`` its unit; the others (``rows[i] == 1``) kept as they came."""
    if not packed.any():
        return head, data
    which = np.repeat(np.arange(head.size), rows)
    j = np.arange(which.size) - np.repeat(np.cumsum(rows) - rows, rows)
    out = head[which]
    packed = packed[which]
    out["unit"] = np.where(packed, unit(which, j), out["unit"])
    out["count"][packed] = dim
    m = (data.shape[1] - HB) // (4 * dim)  # rows a buffer row holds: row j of a packet is block j
    blocks = np.ascontiguousarray(data[:, HB:HB + 4 * dim * m]).reshape(data.shape[0], m, 4 * dim)
    split = np.empty((which.size, HB + 4 * dim), np.uint8)
    split[:, :HB] = data[which, :HB]
    split[:, HB:] = blocks[which, j]  # whole rows gathered, not byte by byte
    return out, split


def _words(data: np.ndarray) -> np.ndarray:
    """The payloads of packets ``data`` (rows of bytes) as little-endian uint32 words."""
    n = (data.shape[1] - HB) // 4
    return np.ascontiguousarray(data[:, HB:HB + 4 * n]).view("<u4")
