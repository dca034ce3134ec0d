"""A worker's received batch of kernel-data-plane packets (:mod:`.packet_transport`), walked in
compiled code: which exchange and block each packet is of, then, per block in flight, its SUMs,
COPYs, ENDs and NEXT, row by row and edge by edge.

A batch is a handful of packets (about 13 at 0.1 Gb/s on 2 cores); in numpy each field of each
step was a call of its own, about a hundred a batch, and on 2 cores the eight workers' calls cost
more CPU than the switch's program (issue 32). Here a batch costs one call to :func:`sort` and
one to :func:`take` per block in flight; what is rare (a PULL to serve, a packet of a later
block, §3.4's rate control, a probe's record) goes back to numpy.

The batch is the receive buffer itself (:class:`Batch`): ``rows`` ``uint8 (n, stride)``,
C-contiguous, packet ``i`` in row ``i`` (its first ``lengths[i]`` bytes), with ``words`` and
``values`` its ``uint32`` and ``float32`` views (a packet's payload word ``w`` is ``words[i, 7 +
w]``). The kernels take named tuples (:class:`Batch`, :class:`Tables`, :class:`Cells`,
:class:`Found`), at most 8 arguments (tests/test_layout.py).
Header fields are read from the bytes, little-endian (:mod:`.packet`). Packets come from the
network: a packet is used only when its magic and its length (``28 + 4 count``) are right, and
every field is checked against the block's tables before it indexes anything (a row's vertex or
unit not in them, a chunk or count that does not fit, a row past the packet: left out).

* **SUM** (a sum a packet, or with flag :data:`~.packet.ROWS` several: ``count = rows · (dim +
  1)`` words, the rows' values, then their uint32 vertices; ``rows ≥ 1``, an END flushes what
  the switch holds; beyond the paper): each row the complete sum of one aggregated cell (a
  destination's chunk) of mine, added into ``out`` once (a duplicate, or the late SUM of a cell
  already pulled, is not).
* **COPY** (and a RESEND to me, §3.4) of one unit's chunk, or of several consecutive units' rows
  (``count = rows · dim``, ``rows ≥ 2``: units ``unit``, ``unit + 1``, …): added once per (edge,
  chunk) into every destination of mine the unit feeds whose cell is summed here (forwarded or
  bypassed: the host path; or pulled).
* **END** (beyond the paper): worker ``sender``'s last unit of the block went up, copied by shard
  ``chunk`` of a switch of ``target`` shards; **NEXT** (§3.3): the block is over.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from .packet import CNP, COPY, ECN, END, HB, HEADER, MAGIC, NEXT, PULL, RESEND, ROWS, SATURATED, SUM
from .tables import VALUES

MAGIC32 = int(np.frombuffer(MAGIC, "<u4")[0])
W0 = HB // 4  # a payload's first word
# where the kernels read the header (packet.HEADER): bytes, and for the 32-bit fields, words. Written
# out here, not derived, because numba caches the kernels by this file alone; checked against HEADER
KIND, FLAGS, BLOCK, SENDER, CHUNK, COUNT = 4, 7, 12, 14, 20, 22
SEQ_W, UNIT_W, TARGET_W = 2, 4, 6
_AT = {name: HEADER.fields[name][1] for name in HEADER.names}
if (_AT["kind"], _AT["flags"], _AT["block"], _AT["sender"], _AT["chunk"], _AT["count"]) != \
        (KIND, FLAGS, BLOCK, SENDER, CHUNK, COUNT) or (_AT["seq"], _AT["unit"], _AT["target"]) != \
        (4 * SEQ_W, 4 * UNIT_W, 4 * TARGET_W) or _AT["magic"] != 0:
    raise ImportError("receive.py's header offsets differ from packet.HEADER: update them")

# sort's stats
S_BYTES, S_ENDS, S_STALE, S_LATER, S_NEXT_FIRST, S_SATURATED, S_RATE, S_PACKETS = range(8)
S_RUN = 8  # S_RUN + j: packets of block first + j
# take's stats
T_SUMS, T_ROWS, T_COPIES, T_ENDS_IGNORED, T_NEXT, T_PULLS, T_PROGRESS, T_TAKEN = range(8)
LATER, SKIP = -1, -2  # sort's pick for a packet of a later block or exchange, and for one to leave


class Batch(NamedTuple):
    """A receive buffer: ``rows`` ``uint8 (n, stride)`` (C-contiguous, ``stride`` a multiple of 4),
    packet ``i`` its first ``lengths[i]`` bytes; ``words`` and ``values`` the same bytes as
    ``uint32`` and ``float32`` ``(n, stride / 4)``; ``pick`` ``(n,)`` int64, :func:`sort`'s."""

    rows: np.ndarray
    words: np.ndarray
    values: np.ndarray
    lengths: np.ndarray
    pick: np.ndarray


def as_batch(rows: np.ndarray, lengths: np.ndarray) -> Batch:
    """:class:`Batch` over ``rows`` and ``lengths`` (views, not copies)."""
    return Batch(rows, rows.view("<u4"), rows.view("<f4"), lengths, np.empty(len(rows), np.int64))


class Tables(NamedTuple):
    """What worker ``rank`` expects of one block of an exchange of rows of ``dim`` values
    (``chunks`` a row): ``slot_v`` (its destinations' vertices, sorted), ``slot_row`` (their rows
    in the exchange's ``out``), ``e_unit`` (its incoming edges' units, sorted), ``e_slot`` (their
    destinations)."""

    rank: int
    dim: int
    chunks: int
    slot_v: np.ndarray
    slot_row: np.ndarray
    e_unit: np.ndarray
    e_slot: np.ndarray


class Cells(NamedTuple):
    """A block's state: ``mode`` (per cell ``s · chunks + c``: 0 aggregated, 1 copies, 2 pulled),
    ``left`` (what each cell still needs), ``got`` ``(E, chunks)`` (the (edge, chunk) pairs come),
    ``ends`` ``(workers, shards)`` (whose END came from which shard), ``out`` ``(R, dim)`` float64
    (the sums)."""

    mode: np.ndarray
    left: np.ndarray
    got: np.ndarray
    ends: np.ndarray
    out: np.ndarray


class Found(NamedTuple):
    """What :func:`take` reports: ``taken`` ``(m, 4)`` (m ≥ 0), ``last`` ``(n,)``, ``stats`` (8)."""

    taken: np.ndarray
    last: np.ndarray
    stats: np.ndarray


@numba.njit(cache=True, inline="always")
def _u16(rows, i, at):
    return np.int64(rows[i, at]) | (np.int64(rows[i, at + 1]) << 8)


@numba.njit(cache=True, inline="always")
def _count(rows, i):
    return _u16(rows, i, COUNT)


@numba.njit(cache=True, inline="always")
def _chunk_len(dim, c):
    """Values in chunk ``c`` of a row of ``dim`` (0 past its last)."""
    return min(max(dim - c * VALUES, 0), VALUES)


@numba.njit(cache=True)
def _row(slot_row, s, out):
    """Destination ``s``'s row in ``out``, checked (the tables are checked where they are used,
    not whole at every batch)."""
    row = slot_row[s]
    if row < 0 or row >= out.shape[0]:
        raise ValueError("take: the block's tables do not fit")
    return row


@numba.njit(cache=True)
def sort(b, k, seq, first, runs, window, stats):
    """Which block in flight each of the first ``k`` packets of batch ``b`` is of (exchange ``seq``, blocks
    ``first .. first + runs - 1``): ``pick[i]`` = ``j`` for block ``first + j``, :data:`LATER`
    for a later block or exchange (kept for it), :data:`SKIP` for a malformed packet, one of an
    earlier block (stale) or a CNP. ``stats`` (int64, ``S_RUN + runs`` or more, zeroed by the
    caller): the packets' bytes, ENDs, stale and later ones, whether a later one is of block
    ``first + window`` or beyond (it exists only after block ``first``'s NEXT), whether one is
    flagged saturated, how many are for §3.4's rate control (a CNP, or an ECN-marked SUM, COPY
    or RESEND), the well-formed ones, and per block in flight how many are of it."""
    rows, words, lengths, pick = b.rows, b.words, b.lengths, b.pick
    if pick.size < k or lengths.size < k or rows.shape[0] < k or words.shape[0] < k \
            or rows.shape[1] != 4 * words.shape[1] or stats.size < S_RUN + runs:
        raise ValueError("sort: the batch's arrays do not fit")
    for i in range(k):
        pick[i] = SKIP
        n = lengths[i]
        if n < HB or n > rows.shape[1] or words[i, 0] != MAGIC32 or n != HB + 4 * _count(rows, i):
            continue
        stats[S_PACKETS] += 1
        stats[S_BYTES] += n
        kind, flags = rows[i, KIND], rows[i, FLAGS]
        if kind == END:
            stats[S_ENDS] += 1
        if kind == CNP or ((flags & ECN) != 0 and (kind == SUM or kind == COPY or kind == RESEND)):
            stats[S_RATE] += 1
            if kind == CNP:
                continue
        if (flags & SATURATED) != 0:
            stats[S_SATURATED] += 1
        s, block = np.int64(words[i, SEQ_W]), _u16(rows, i, BLOCK)
        if s > seq or (s == seq and block >= first + runs):
            pick[i] = LATER
            stats[S_LATER] += 1
            if s > seq or block >= first + window:
                stats[S_NEXT_FIRST] = 1
        elif s < seq or block < first:
            stats[S_STALE] += 1
        else:
            pick[i] = block - first
            stats[S_RUN + block - first] += 1


@numba.njit(cache=True)
def take(b, k, j, tables, cells, found):
    """The packets ``i < k`` of batch ``b`` with ``pick[i] == j`` (one block: its
    :class:`Tables`, its :class:`Cells`), each used as its kind says; ``found``
    (:class:`Found`) gets what was taken.

    * a SUM row whose vertex is mine, whose chunk ``c < chunks`` holds ``count`` values and whose
      cell is aggregated and incomplete: ``out[slot_row[s], c VALUES:]`` += its values, ``left`` =
      0. ``taken`` ``(m, 4)`` (m ≥ 0) gets, for the first ``m`` rows taken, (packet, first value,
      vertex, values); ``last[i]`` the vertex of SUM ``i``'s last row (a SUM of several rows names
      the worker that completed that one);
    * a COPY, or RESEND with ``target == rank``: its row's or rows' unit, for each edge of mine
      from it whose cell is summed here (``mode > 0``) and whose pair has not come: the values
      added, ``got``, ``left[cell] -= 1``;
    * an END with ``sender`` < workers, ``target`` = the shards, ``chunk`` < shards:
      ``ends[sender, chunk]``; any other END is ignored (counted);
    * NEXT: noted; a PULL from another worker: counted (the caller serves it).

    ``stats`` (int64, 8, zeroed by the caller): SUM rows added, SUM rows, COPY contributions
    added, ENDs ignored, whether a NEXT came, PULLs to serve, whether anything but an END that
    counted came (progress), rows taken."""
    rows, words, values, pick = b.rows, b.words, b.values, b.pick
    rank, dim, chunks = tables.rank, tables.dim, tables.chunks
    slot_v, slot_row, e_unit, e_slot = tables.slot_v, tables.slot_row, tables.e_unit, tables.e_slot
    mode, left, got, ends, out = cells.mode, cells.left, cells.got, cells.ends, cells.out
    taken, last, stats = found.taken, found.last, found.stats
    width = words.shape[1]
    S, E = slot_v.size, e_unit.size
    if rows.shape[0] < k or words.shape[0] < k or values.shape[0] < k or values.shape[1] != width \
            or rows.shape[1] != 4 * width or width < W0 or pick.size < k or last.size < k or taken.shape[1] != 4:
        raise ValueError("take: the batch's arrays do not fit")
    if slot_row.size != S or mode.size != S * chunks or left.size != mode.size or dim > out.shape[1] \
            or e_slot.size != E or got.shape[0] != E or got.shape[1] != chunks:
        raise ValueError("take: the block's tables do not fit")
    workers, shards = ends.shape[0], ends.shape[1]
    for i in range(k):
        if pick[i] != j:
            continue
        kind = rows[i, KIND]
        n = _count(rows, i)
        c = _u16(rows, i, CHUNK)
        unit = np.int64(words[i, UNIT_W])
        if kind == END:
            sender, target = _u16(rows, i, SENDER), np.int64(words[i, TARGET_W])
            if sender < workers and target == shards and c < shards:
                ends[sender, c] = True
                continue
            stats[T_ENDS_IGNORED] += 1
        stats[T_PROGRESS] = 1
        if kind == NEXT:
            stats[T_NEXT] = 1
        elif kind == PULL:
            if _u16(rows, i, SENDER) != rank:
                stats[T_PULLS] += 1
        elif kind == SUM:
            packed = (rows[i, FLAGS] & ROWS) != 0 and n > dim and n % (dim + 1) == 0 and n <= width - W0
            m = n // (dim + 1) if packed else np.int64(1)
            for r in range(m):
                stats[T_ROWS] += 1
                if packed:
                    v, at, cnt = np.int64(words[i, W0 + m * dim + r]), r * dim, dim
                else:
                    v, at, cnt = unit, np.int64(0), n
                last[i] = v
                if c >= chunks or cnt != _chunk_len(dim, c) or W0 + at + cnt > width:
                    continue
                s = np.searchsorted(slot_v, v)
                if s >= S or slot_v[s] != v:
                    continue
                cell = s * chunks + c
                if mode[cell] != 0 or left[cell] <= 0:
                    continue
                row, lo = _row(slot_row, s, out), c * VALUES
                for x in range(cnt):
                    out[row, lo + x] += values[i, W0 + at + x]
                left[cell] = 0
                if stats[T_TAKEN] < taken.shape[0]:
                    t = stats[T_TAKEN]
                    taken[t, 0], taken[t, 1], taken[t, 2], taken[t, 3] = i, at, v, cnt
                stats[T_TAKEN] += 1
                stats[T_SUMS] += 1
        elif kind == COPY or (kind == RESEND and np.int64(words[i, TARGET_W]) == rank):
            packed = dim <= VALUES and n > dim and n % dim == 0 and n <= VALUES
            m = n // dim if packed else np.int64(1)
            for r in range(m):
                if packed:
                    u, at, cnt = unit + r, r * dim, dim
                else:
                    u, at, cnt = unit, np.int64(0), n
                if c >= chunks or cnt != _chunk_len(dim, c) or W0 + at + cnt > width:
                    continue
                for e in range(np.searchsorted(e_unit, u), np.searchsorted(e_unit, u, side="right")):
                    s = e_slot[e]
                    if s < 0 or s >= S:
                        raise ValueError("take: the block's tables do not fit")
                    cell = s * chunks + c
                    if mode[cell] == 0 or got[e, c]:
                        continue
                    row, lo = _row(slot_row, s, out), c * VALUES
                    for x in range(cnt):
                        out[row, lo + x] += values[i, W0 + at + x]
                    got[e, c] = True
                    left[cell] -= 1
                    stats[T_COPIES] += 1
