"""The worker's compiled receive path (gnn/receive.py) against packets built here and a reference
written from the packet format (gnn/packet.py) one row and one edge at a time in plain Python; and
crafted batches, run through bounds-checked builds of the same kernels, never index outside."""

import numba
import numpy as np
import pytest

from netweave.testbed.gnn.packet import CNP, COPY, ECN, END, HB, HEADER, MAX_WORDS, NEXT, PULL, ROWS, SATURATED, SUM, \
    build, parse
from netweave.testbed.gnn.receive import LATER, S_BYTES, S_ENDS, S_LATER, S_NEXT_FIRST, S_PACKETS, S_RATE, S_RUN, \
    S_SATURATED, S_STALE, SKIP, T_COPIES, T_ENDS_IGNORED, T_NEXT, T_PROGRESS, T_PULLS, T_ROWS, T_SUMS, T_TAKEN, Cells, Found, \
    Tables, as_batch, sort, take
from netweave.testbed.gnn.tables import VALUES

STRIDE = HB + 4 * MAX_WORDS


def _batch(*packets):
    """Built packets as a received batch: rows of STRIDE bytes and their lengths."""
    rows = np.zeros((len(packets), STRIDE), np.uint8)
    for i, (p, _) in enumerate(packets):
        rows[i, :p.shape[1]] = p[0]
    return rows, np.array([p[1][0] for p in packets], np.int64)


def _pkt(kind, *, seq=1, block=0, sender=1, unit=0, chunk=0, values=None, target=0, flags=0):
    p = build(kind, layer=0, direction=0, seq=seq, block=block, sender=sender, unit=unit, chunk=chunk,
              values=np.zeros((1, 0), np.float32) if values is None else values, target=target)
    p[0][0, 7] = flags
    return p


class _Block:
    """A block's tables and state as the transport keeps them (packet_transport._Block, _Run)."""

    def __init__(self, dim, slot_v=(), slot_row=(), e_unit=(), e_slot=(), mode=None, left=None, workers=3, shards=1,
                 rows=8):
        self.dim, self.chunks = dim, -(-dim // VALUES)
        self.slot_v, self.slot_row = np.array(slot_v, np.int64), np.array(slot_row, np.int64)
        self.e_unit, self.e_slot = np.array(e_unit, np.int64), np.array(e_slot, np.int64)
        cells = self.slot_v.size * self.chunks
        self.mode = np.zeros(cells, np.int8) if mode is None else np.array(mode, np.int8)
        self.left = np.ones(cells, np.int64) if left is None else np.array(left, np.int64)
        self.got = np.zeros((self.e_unit.size, self.chunks), bool)
        self.ends = np.zeros((workers, shards), bool)
        self.out = np.zeros((rows, dim))

    def take(self, rows, lengths, rank=0, record=64, kernel=take, b=None):
        k = len(rows)
        if b is None:  # every packet of exchange 1, block 0: block 0 in flight
            b = as_batch(rows, lengths)
            sort(b, k, 1, 0, 1, 1, np.zeros(S_RUN + 1, np.int64))
        found = Found(np.zeros((record, 4), np.int64), np.full(k, -1, np.int64), np.zeros(8, np.int64))
        kernel(b, k, 0, Tables(rank, self.dim, self.chunks, self.slot_v, self.slot_row, self.e_unit, self.e_slot),
               Cells(self.mode, self.left, self.got, self.ends, self.out), found)
        return found.stats, found.taken[:min(found.stats[T_TAKEN], record)], found.last


def test_a_sum_of_several_rows_adds_each_row_into_its_destination():
    """A SUM with flag ROWS (a pinned switch's held sums): the rows' values, then their vertices; one
    row held alone (an owner's last sum, flushed by an END) keeps that layout."""
    dim = 3
    vals = np.arange(3 * dim, dtype=np.float32).reshape(3, dim) + 0.5
    words = np.r_[vals.reshape(-1), np.array([40, 7, 1 << 20], np.uint32).view(np.float32)].reshape(1, -1)
    one = np.r_[np.full(dim, 3, np.float32), np.array([12], np.uint32).view(np.float32)].reshape(1, -1)
    rows, lengths = _batch(_pkt(SUM, unit=40, values=words, flags=ROWS),
                           _pkt(SUM, unit=9, values=np.full((1, dim), 2, np.float32)),
                           _pkt(SUM, unit=12, values=one, flags=ROWS))
    blk = _Block(dim, slot_v=[7, 9, 12, 40, 1 << 20], slot_row=[4, 0, 1, 2, 3], rows=5)
    stats, taken, last = blk.take(rows, lengths)
    assert (stats[T_SUMS], stats[T_ROWS]) == (5, 5) and not blk.left.any() and stats[T_PROGRESS]
    np.testing.assert_array_equal(blk.out, np.r_[np.full((1, dim), 2), np.full((1, dim), 3), vals[[0, 2, 1]]])
    assert taken[:, 2].tolist() == [40, 7, 1 << 20, 9, 12] and (taken[:, 3] == dim).all()
    assert last.tolist() == [1 << 20, 9, 12]  # each packet's last row, whose completer it names
    # again: every cell is complete, so each row is a duplicate and nothing is added
    stats, _, _ = blk.take(rows, lengths)
    assert (stats[T_SUMS], stats[T_ROWS]) == (0, 5) and blk.out.sum() == 2 * dim + 3 * dim + vals.sum()
    # a count that is not rows of dim + 1 words: one row of that count, which no chunk holds
    rows[0, 22:24] = np.array([3 * (dim + 1) - 1], "<u2").view(np.uint8)
    lengths[0] -= 4
    blk.left[:] = 1
    stats, _, last = blk.take(rows, lengths)
    assert (stats[T_SUMS], stats[T_ROWS]) == (2, 3) and last.tolist() == [40, 9, 12]
    assert blk.left.tolist() == [1, 0, 0, 1, 1]


def test_a_copy_of_several_rows_adds_each_unit_into_every_destination_it_feeds():
    dim = 3
    many = np.arange(4 * dim, dtype=np.float32).reshape(1, 4 * dim)  # units 7..10
    rows, lengths = _batch(_pkt(COPY, unit=7, values=many), _pkt(COPY, unit=2, values=np.full((1, dim), -1, np.float32)))
    # my edges' units (sorted) and their destinations; every cell summed here
    blk = _Block(dim, slot_v=[0, 1, 2], slot_row=[2, 0, 1], e_unit=[2, 7, 8, 8, 10, 11], e_slot=[0, 0, 1, 2, 1, 2],
                 mode=[1, 1, 1], left=[3, 2, 1], rows=3)
    stats, _, _ = blk.take(rows, lengths)
    assert stats[T_COPIES] == 5
    r = many.reshape(4, dim)
    np.testing.assert_array_equal(blk.out[2], r[0] - 1)  # units 7 and 2 into destination 0
    np.testing.assert_array_equal(blk.out[0], r[1] + r[3])  # 8 and 10 into 1
    np.testing.assert_array_equal(blk.out[1], r[1])  # 8 into 2 (11 has not come)
    assert blk.left.tolist() == [1, 0, 0] and blk.got[:, 0].tolist() == [True] * 5 + [False]
    assert blk.take(rows, lengths)[0][T_COPIES] == 0  # the same again: each (edge, chunk) is added once
    # not a whole number of rows: one unit's chunk of that count, which no chunk holds
    rows[0, 22:24] = np.array([4 * dim - 1], "<u2").view(np.uint8)
    lengths[0] -= 4
    blk.got[:] = False
    assert blk.take(rows, lengths)[0][T_COPIES] == 1


def test_sort_gives_each_packet_its_block_and_counts_the_rest():
    """Exchange 5, blocks 2 and 3 in flight, a window of 2."""
    rows, lengths = _batch(_pkt(SUM, seq=5, block=2, unit=1, values=np.ones((1, 4), np.float32)),
                           _pkt(END, seq=5, block=3),
                           _pkt(NEXT, seq=5, block=4),  # later: kept for its block
                           _pkt(SUM, seq=5, block=1),  # stale
                           _pkt(SUM, seq=4, block=9),  # an earlier exchange: stale
                           _pkt(CNP, seq=0, flags=0),  # rate control, no block
                           _pkt(COPY, seq=5, block=2, flags=ECN | SATURATED),
                           _pkt(SUM, seq=6, block=0))  # the next exchange: later, and after block 2's NEXT
    lengths = np.r_[lengths, 40]
    rows = np.r_[rows, rows[:1]]
    rows[8, 0] = ord("X")  # not our magic
    lengths[1] += 4  # a length its count does not give
    b, stats = as_batch(rows, lengths), np.zeros(S_RUN + 2, np.int64)
    sort(b, 9, 5, 2, 2, 2, stats)
    assert b.pick.tolist() == [0, SKIP, LATER, SKIP, SKIP, SKIP, 0, LATER, SKIP]
    assert stats[S_RUN:].tolist() == [2, 0] and (stats[S_LATER], stats[S_STALE]) == (2, 2)
    assert stats[S_NEXT_FIRST] == 1 and stats[S_SATURATED] == 1 and stats[S_RATE] == 2 and stats[S_ENDS] == 0
    assert stats[S_PACKETS] == 7 and stats[S_BYTES] == lengths[[0, 2, 3, 4, 5, 6, 7]].sum()


def test_ends_next_and_pulls_of_a_block():
    rows, lengths = _batch(_pkt(END, sender=0, chunk=0, target=2), _pkt(END, sender=2, chunk=1, target=2),
                           _pkt(END, sender=1, chunk=2, target=2),  # no such shard
                           _pkt(END, sender=1, chunk=0, target=1),  # another switch's count
                           _pkt(END, sender=3, chunk=0, target=2),  # no such worker
                           _pkt(PULL, sender=1, values=np.zeros((1, 2), np.float32)), _pkt(PULL, sender=0))
    blk = _Block(4, workers=3, shards=2)
    stats, _, _ = blk.take(rows[:2], lengths[:2])
    assert blk.ends.tolist() == [[True, False], [False, False], [False, True]] and not stats[T_PROGRESS]
    stats, _, _ = blk.take(rows, lengths, rank=0)
    assert stats[T_ENDS_IGNORED] == 3 and stats[T_PULLS] == 1 and stats[T_PROGRESS] and not stats[T_NEXT]
    rows, lengths = _batch(_pkt(NEXT))
    assert blk.take(rows, lengths)[0][T_NEXT] == 1


def _reference_sums(rows, lengths, blk):
    """The format read one row at a time (packet.py's docstring)."""
    taken = 0
    head, idx = parse(rows, lengths, len(rows))
    slots = blk.slot_v.tolist()
    for h, i in zip(head, idx):
        if h["kind"] != SUM or (h["seq"], h["block"]) != (1, 0):
            continue
        n, c, dim = int(h["count"]), int(h["chunk"]), blk.dim
        w, f = rows[i, HB:].view("<u4"), rows[i, HB:].view("<f4")
        if h["flags"] & ROWS and n > dim and n % (dim + 1) == 0 and n <= MAX_WORDS:
            got = [(int(w[n // (dim + 1) * dim + j]), f[j * dim:(j + 1) * dim]) for j in range(n // (dim + 1))]
        else:
            got = [(int(h["unit"]), f[:n])]
        for v, x in got:
            if v not in slots or c >= blk.chunks or x.size != min(max(dim - c * VALUES, 0), VALUES):
                continue
            cell = slots.index(v) * blk.chunks + c
            if blk.mode[cell] == 0 and blk.left[cell] > 0:
                blk.out[blk.slot_row[slots.index(v)], c * VALUES:c * VALUES + x.size] += x
                blk.left[cell] = 0
                taken += 1
    return taken


def _reference_copies(rows, lengths, blk):
    added = 0
    head, idx = parse(rows, lengths, len(rows))
    for h, i in zip(head, idx):
        if h["kind"] != COPY or (h["seq"], h["block"]) != (1, 0):
            continue
        n, c, dim = int(h["count"]), int(h["chunk"]), blk.dim
        f = rows[i, HB:].view("<f4")
        if dim <= VALUES and n > dim and n % dim == 0 and n <= VALUES:
            got = [(int(h["unit"]) + j, f[j * dim:(j + 1) * dim]) for j in range(n // dim)]
        else:
            got = [(int(h["unit"]), f[:n])]
        for u, x in got:
            if c >= blk.chunks or x.size != min(max(dim - c * VALUES, 0), VALUES):
                continue
            for e in np.flatnonzero(blk.e_unit == u):
                cell = blk.e_slot[e] * blk.chunks + c
                if blk.mode[cell] > 0 and not blk.got[e, c]:
                    blk.out[blk.slot_row[blk.e_slot[e]], c * VALUES:c * VALUES + x.size] += x
                    blk.got[e, c] = True
                    blk.left[cell] -= 1
                    added += 1
    return added


def _random_packets(rng, kind, dim, vertices, count):
    """``count`` packets of ``kind``: well formed (several rows or one), duplicated, and damaged
    (a count, chunk or flag that does not fit; a vertex or unit not the block's; another block)."""
    chunks = -(-dim // VALUES)
    out = []
    for _ in range(count):
        c = int(rng.integers(0, chunks + 1))
        width = min(max(dim - c * VALUES, 0), VALUES)
        block = 0 if rng.random() < 0.9 else 1
        if kind == SUM and dim <= VALUES and rng.random() < 0.5:
            rows = int(rng.integers(1, MAX_WORDS // (dim + 1) + 1))
            words = np.r_[rng.standard_normal(rows * dim).astype(np.float32),
                          rng.choice(vertices, rows).astype(np.uint32).view(np.float32)]
            pkt = _pkt(SUM, block=block, values=words[None], flags=ROWS)
        elif kind == COPY and dim <= VALUES // 2 and rng.random() < 0.5:
            rows = int(rng.integers(2, VALUES // dim + 1))
            pkt = _pkt(COPY, block=block, unit=int(rng.choice(vertices)),
                       values=rng.standard_normal((1, rows * dim)).astype(np.float32))
        else:
            n = width if rng.random() < 0.8 else int(rng.integers(0, VALUES + 1))
            pkt = _pkt(kind, block=block, unit=int(rng.choice(vertices)), chunk=c,
                       values=rng.standard_normal((1, n)).astype(np.float32), flags=ROWS if rng.random() < 0.1 else 0)
        out.append(pkt)
        if rng.random() < 0.2:
            out.append(pkt)  # a duplicate
    return out


@pytest.mark.parametrize("dim", [3, 16, 128, 600, 1100])
def test_sums_and_copies_match_a_row_by_row_reference(dim):
    rng = np.random.default_rng(dim)
    mine = np.sort(rng.choice(200, 40, replace=False))
    slot_row = rng.permutation(60)[:40]
    vertices = np.r_[mine, 500, 1 << 31]  # two that are not the block's
    chunks = -(-dim // VALUES)
    mode = rng.choice(np.array([0, 1, 2], np.int8), mine.size * chunks)
    left = np.where(mode == 0, 1, rng.integers(1, 4, mode.size))
    e_unit, e_slot = np.sort(rng.choice(mine, 90)), rng.integers(0, mine.size, 90)
    for kind in (SUM, COPY):
        rows, lengths = _batch(*_random_packets(rng, kind, dim, vertices, 40))
        a, b = (_Block(dim, mine, slot_row, e_unit, e_slot, mode, left, rows=60) for _ in range(2))
        stats, _, _ = a.take(rows, lengths)
        if kind == SUM:
            assert stats[T_SUMS] == _reference_sums(rows, lengths, b) > 0 and stats[T_ROWS] > stats[T_SUMS]
        else:
            assert stats[T_COPIES] == _reference_copies(rows, lengths, b) > 0
            np.testing.assert_array_equal(a.got, b.got)
        np.testing.assert_array_equal(a.left, b.left)
        np.testing.assert_allclose(a.out, b.out, rtol=1e-12, atol=1e-12)


def test_crafted_batches_never_index_outside_the_arrays():
    """Random bytes and lengths, and random header fields over their whole range, through builds of
    the kernels that check every index (numba does not by default): nothing raises, and only the
    block's rows change."""
    checked_sort = numba.njit(boundscheck=True)(sort.py_func)
    checked_take = numba.njit(boundscheck=True)(take.py_func)
    rng = np.random.default_rng(7)
    for trial in range(20):
        rows = rng.integers(0, 256, (64, STRIDE), dtype=np.uint8)
        lengths = rng.integers(0, STRIDE + 100, 64)
        head = rows[:, :HB].view(HEADER).reshape(64)
        head["magic"] = b"NWGU"
        head["seq"], head["block"] = 1, rng.integers(0, 2, 64)
        if trial % 2:  # fields near the edges of what fits, lengths that agree with the counts
            head["kind"] = rng.integers(0, 12, 64)
            head["count"] = rng.choice([0, 40, 41, 82, MAX_WORDS - 1, MAX_WORDS, MAX_WORDS + 1, 65535], 64)
            head["chunk"] = rng.integers(0, 3, 64)
            head["unit"] = rng.choice([3, 9, 70000, 0xFFFFFFFF], 64)
            head["sender"], head["target"] = rng.integers(0, 5, 64), rng.integers(0, 3, 64)
            lengths = HB + 4 * head["count"].astype(np.int64)
        b = as_batch(rows, lengths)
        checked_sort(b, 64, 1, 0, 1, 1, np.zeros(S_RUN + 1, np.int64))
        blk = _Block(40, slot_v=[3, 9, 70000], slot_row=[0, 2, 4], e_unit=[3, 3, 9], e_slot=[0, 1, 2],
                     mode=[0, 1, 2], left=[1, 5, 5], rows=6)
        blk.take(rows, lengths, kernel=checked_take, b=b)
        assert not blk.out[[1, 3, 5]].any()


def test_tables_that_do_not_fit_are_refused():
    """Checked where a row uses them: a destination's row past ``out``, an edge's destination past
    the destinations."""
    rows, lengths = _batch(_pkt(SUM, unit=3, values=np.ones((1, 4), np.float32)))
    with pytest.raises(ValueError, match="tables do not fit"):
        _Block(4, slot_v=[3], slot_row=[5], rows=2).take(rows, lengths)
    rows, lengths = _batch(_pkt(COPY, unit=3, values=np.ones((1, 4), np.float32)))
    with pytest.raises(ValueError, match="tables do not fit"):
        _Block(4, slot_v=[3], slot_row=[0], e_unit=[3], e_slot=[1], mode=[1], rows=2).take(rows, lengths)
    with pytest.raises(ValueError, match="tables do not fit"):  # cells for another number of destinations
        _Block(4, slot_v=[3], slot_row=[0], mode=[1, 1], rows=2).take(rows, lengths)
