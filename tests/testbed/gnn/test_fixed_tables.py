"""Exact fixed-point sums (gnn/fixed.py) and the kernel data plane's tables (gnn/tables.py),
without root."""

from fractions import Fraction

import numpy as np
import pytest

from netweave.testbed.gnn.fixed import LIMIT, from_fixed, to_fixed


def test_fixed_point_round_trip_and_nearest_rounding():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(20000) * 10.0 ** rng.integers(-6, 3, 20000)).astype(np.float32)
    f, sat = to_fixed(x, 36)
    assert not sat
    back = from_fixed(f, 36)
    assert np.all(np.abs(back - x) <= 2.0 ** -36)  # truncation below 2^-36 only
    big = np.abs(x) > 1e-3
    np.testing.assert_array_equal(back[big], x[big])  # 24 mantissa bits fit: exact
    sums = f[:10000].reshape(-1, 4).sum(1)
    got = from_fixed(sums, 36)
    for s, g in zip(sums[:500].tolist(), got[:500]):
        assert np.float32(float(Fraction(s, 2 ** 36))) == g  # the float32 nearest to the exact sum


def test_fixed_point_sums_do_not_depend_on_order_and_saturation_is_flagged():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 64)).astype(np.float32)
    f, _ = to_fixed(x, 36)
    a = from_fixed(f.sum(0), 36)
    b = from_fixed(f[rng.permutation(50)].sum(0), 36)
    assert a.tobytes() == b.tobytes()
    f, sat = to_fixed(np.array([1e6, np.inf, -3.0], np.float32), 36)
    assert sat and f[0] == LIMIT and f[1] == LIMIT and f[2] == -3 * 2 ** 36
    assert to_fixed(np.array([1e-30, -0.0], np.float32), 36)[0].tolist() == [0, 0]


def _plan(dataset: str, **kw) -> list[dict]:
    """The plans of 4 workers and a 200 kB switch."""
    pytest.importorskip("pymetis")
    import tempfile

    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.plans import load_plans

    with tempfile.TemporaryDirectory() as d:
        prepare_gnn_job(dataset, 4, 200_000, d, **kw)
        return load_plans(f"{d}/plans.npz")


def _edges(p: dict, shards: int) -> dict[str, np.ndarray]:
    """Plan ``p``'s edges from each unit (in order), each with what the switch's cell of its
    destination is (worked out from the plan and the memory's layout, without the tables), its
    shard (``shards`` where it is not aggregated: a copy) and its map entry."""
    from netweave.testbed.gnn.plans import edge_ranges
    from netweave.testbed.gnn.tables import edge_shard, entry_of, layer_view

    v = layer_view(p, 200_000)
    e, u = edge_ranges(p["unit_lo"], p["unit_hi"])
    k = v.slot_of_edge[e]
    return {"unit": u, "dest_v": p["dst"][e], "pos": v.pos[k], "need": v.need[k], "owner": v.owner[k],
            "pbase": v.pbase[k], "copy": v.copy[k], "shard": edge_shard(v, k, shards), "entry": entry_of(v, k)}


def test_tables_place_every_aggregated_destination_in_memory_and_copy_the_rest():
    from netweave.testbed.gnn.tables import ENTRY_AGGS, layer_view, switch_tables

    plans = _plan("cora", transform_first=False)  # wide rows in blocks
    t = switch_tables(plans, 200_000)
    assert t.layers.size == 2 and t.units.size == sum(p["unit_lo"].size for p in plans)
    for i, p in enumerate(plans):
        v = layer_view(p, 200_000)
        agg = ~v.copy
        assert ((v.pos[agg] + 1) * v.per_dest <= t.region * ENTRY_AGGS).all()
        for b in range(int(p["num_blocks"])):  # distinct places within a block
            s = np.flatnonzero(agg & (v.block == b))
            assert np.unique(v.pos[s]).size == s.size
        assert (v.copy == p["forward"][p["dest_v"]]).all()  # the plan fits: only the forwarded are copied
        L = t.layers[i]
        units = t.units[L["unit_base"]:L["unit_base"] + L["units"]]
        e = _edges(p, 1)
        # from the plan alone: a unit's COPY goes to the owner (its part) of each forwarded destination it feeds
        dst = e["dest_v"]  # each edge's destination vertex, in the units' order
        copied = p["forward"][dst].astype(bool)
        want = np.zeros(units.size, np.uint64)
        np.bitwise_or.at(want, e["unit"][copied], np.left_shift(np.uint64(1), p["parts"][dst[copied]].astype(np.uint64)))
        assert copied.any() and (want != 0).sum() > 0
        np.testing.assert_array_equal(units["copy_mask"], want)
        assert (e["need"] > 0).all()


def test_sharded_tables_give_each_entry_to_one_shard_and_add_every_edge():
    """Three shards: the entries shard s adds into (its touches', worked out from each touch's own
    position and base) form a range below shard s + 1's, so no entry, lock or cache line is shared
    by two CPUs; the shards add nearly equal numbers of cells (each within one entry's cells of a
    third); the touches add each aggregated edge once, on its shard, and no copy."""
    from netweave.testbed.gnn.tables import ENTRY_AGGS, switch_tables

    plans = _plan("cora", transform_first=False)  # 1,433 values: full and partial cells
    one, three = switch_tables(plans, 200_000), switch_tables(plans, 200_000, shards=3)
    np.testing.assert_array_equal(one.units["copy_mask"], three.units["copy_mask"])
    for p, L in zip(plans, three.layers):
        part = int(L["part"])
        packets = three.packets[L["packet_base"]:][:L["packets"]]
        touches = three.touches[L["touch_base"]:][:L["touches"]]
        spans, cells = [], np.zeros(3, np.int64)
        for s in range(3):
            x = np.concatenate([touches[int(q["cut"][s]):int(q["cut"][s + 1])] for q in packets])
            entry = (x["pbase"].astype(int) + x["pos"].astype(int) * part) // ENTRY_AGGS if part else x["pos"]
            spans.append(entry.astype(int))
            cells[s] = x["cnt"].sum()
        assert all(a.size for a in spans) and spans[0].max() < spans[1].min() and spans[1].max() < spans[2].min()
        e = _edges(p, 3)
        np.testing.assert_array_equal(cells, np.bincount(e["shard"][~e["copy"]], minlength=3))  # each edge once
        biggest = np.bincount(e["entry"][~e["copy"]]).max()  # the cells of the fullest entry: what a cut can be off by
        assert np.abs(cells - cells.sum() / 3).max() <= biggest
    with pytest.raises(ValueError, match="shards"):
        switch_tables(plans, 200_000, shards=9)


def test_the_sums_owed_are_each_shards_distinct_destinations_per_block_and_owner():
    """``owed`` (when a pinned switch sends what it holds for an owner) against a count made from
    the touches each shard adds: per block, shard and owner, the distinct destinations."""
    from netweave.testbed.gnn.tables import switch_tables

    plans = _plan("cora", transform_first=False)
    for shards in (1, 3):
        t = switch_tables(plans, 200_000, shards=shards)
        t.check(4)
        for L in t.layers:
            B = int(L["blocks"])
            units = t.units[L["unit_base"]:][:L["units"]]
            touches = t.touches[L["touch_base"]:][:L["touches"]]
            want = np.zeros(B * shards * 4, np.int64)
            seen = set()
            for q in t.packets[L["packet_base"]:][:L["packets"]]:
                b = int(units[int(q["first"])]["block"])
                for s in range(shards):
                    for x in touches[int(q["cut"][s]):int(q["cut"][s + 1])]:
                        key = (b, s, int(x["owner"]), int(x["dest_v"]))
                        if key not in seen:
                            seen.add(key)
                            want[(b * shards + s) * 4 + key[2]] += 1
            base = int(L["owed_base"]) * shards * 4
            np.testing.assert_array_equal(t.owed[base:base + want.size], want)
        assert t.owed.size == int(t.layers["blocks"].sum()) * shards * 4 and t.owed.sum() > 0
        t.layers["owed_base"][-1] += 1  # a layer's counts read from another's
        with pytest.raises(ValueError, match="owed"):
            t.check(4)
        t.layers["owed_base"][-1] -= 1
        t.owed = t.owed[:-1]
        with pytest.raises(ValueError, match="owed"):
            t.check(4)


@pytest.mark.parametrize("dataset,shards", [("cora", 1), ("cora", 3), ("reddit-like:scale=0.003", 2)])
def test_touches_add_each_destination_the_rows_of_each_packet_that_feed_it(dataset, shards):
    """The touches (gnn/touches.py) against the edges, one packet at a time: per shard and
    destination, the rows its touches add are exactly the packet's units with an edge to it on that
    shard, each once; a touch's cell fields are its edges'; every subset of two or more rows a
    touch adds is made (``used``), from a smaller one made before it; only rows that some touch adds
    are converted. On a dense graph the touches are far fewer than the edges they add."""
    from netweave.testbed.gnn.tables import switch_tables
    from netweave.testbed.gnn.touches import GROUP, GROUPS, SUBSETS

    plans = _plan(dataset, hidden=16, transform_first=dataset != "cora")
    t = switch_tables(plans, 200_000, shards=shards)
    t.check(4)
    fields = ("pos", "need", "dest_v", "owner", "pbase")
    for p, L in zip(plans, t.layers):
        units = t.units[L["unit_base"]:][:L["units"]]
        e = _edges(p, shards)
        at = np.searchsorted(e["unit"], np.arange(units.size + 1))  # unit u's edges: at[u]..at[u + 1]
        touches = t.touches[L["touch_base"]:][:L["touches"]]
        packets = t.packets[L["packet_base"]:][:L["packets"]]
        assert (units["pk"][packets["first"]] == np.arange(packets.size)).all()
        assert packets["rows"].sum() == units.size  # every unit in one packet
        for q in packets:
            first, rows = int(q["first"]), int(q["rows"])
            for sh in range(shards):
                want, cell = {}, {}
                for r in range(rows):
                    for j in range(at[first + r], at[first + r + 1]):
                        if e["copy"][j] or e["shard"][j] != sh:  # forwarded or bypassed, or another shard's
                            continue
                        want.setdefault(int(e["dest_v"][j]), []).append(r)
                        cell[int(e["dest_v"][j])] = tuple(int(e[f][j]) for f in fields)
                bits = q["used"][sh]  # (GROUPS, SUBSETS // 64) words of 64 subsets
                used = [sum(int(w) << (64 * j) for j, w in enumerate(bits[g])) for g in range(GROUPS)]
                got = {}
                for x in touches[int(q["cut"][sh]):int(q["cut"][sh + 1])]:
                    g, m = divmod(int(x["sub"]), SUBSETS)
                    assert tuple(int(x[f]) for f in fields) == cell[int(x["dest_v"])]
                    assert int(x["cnt"]) == bin(m).count("1")
                    got.setdefault(int(x["dest_v"]), []).extend(GROUP * g + b for b in range(GROUP) if m >> b & 1)
                    if x["cnt"] >= 2:
                        assert used[g] >> m & 1
                assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}
                for g in range(GROUPS):
                    for m in range(SUBSETS):
                        if used[g] >> m & 1:  # two rows or more, built from one made before (or a row)
                            below = m & (m - 1)
                            assert below and (not below & (below - 1) or used[g] >> below & 1)
                rows_added = {r for v in want.values() for r in v}
                assert int(q["conv"][sh]) == sum(1 << r for r in rows_added)
        if dataset.startswith("reddit"):  # dense: a packet's rows share most destinations
            assert touches.size < 0.8 * touches["cnt"].sum()
    r = int(t.packets["rows"][0])  # touch 0 is the first packet's: the row past its last alone
    t.touches["sub"][0], t.touches["cnt"][0] = SUBSETS * (r // GROUP) + (1 << r % GROUP), 1
    with pytest.raises(ValueError, match="inconsistent"):
        t.check(4)


def test_cells_never_straddle_an_entry():
    from netweave.testbed.gnn.tables import ENTRY_AGGS, VALUES, cell_shape, footprint

    for dim in (1, 16, 17, 128, 511, 512, 513, 602, 767, 1433, 4096):
        full, part = cell_shape(dim)
        assert full * VALUES + part * 16 >= dim and part & (part - 1) == 0 and part < ENTRY_AGGS + 1
        assert footprint(dim) == full * ENTRY_AGGS + part


def test_every_addend_of_every_width_lies_in_the_cpus_scratch():
    """Addend ``sub = SUBSETS · group + m`` (a row alone, or a subset's sum) takes lanes ``sub ·
    lanes`` onwards of the program's scratch (``SUBS`` lanes): for every row width, the last
    subset of the last group of a packet of the most rows ends within it, and a group's subsets
    index no other group's."""
    from netweave.testbed.gnn.tables import rows_per_packet
    from netweave.testbed.gnn.touches import GROUP, GROUPS, SUBS, SUBSETS

    assert SUBSETS == 1 << GROUP and SUBS == 16384  # the bpf program's 128 KiB a CPU
    tightest = 0
    for d in range(1, 1100):
        rows, lanes = rows_per_packet(d), 16 * -(-min(d, 512) // 16)
        last = (rows - 1) // GROUP
        assert last < GROUPS
        assert rows - GROUP * last <= GROUP  # the last group's subsets stay below the next group's first
        top = SUBSETS * last + (1 << (rows - GROUP * last)) - 1  # every row of the last group
        assert (top + 1) * lanes <= SUBS, d
        tightest = max(tightest, (top + 1) * lanes)
    assert tightest == SUBS  # 8 rows of 64 lanes (and 16 of 32, 32 of 16) fill it


def test_the_subsets_made_are_closed_under_dropping_the_lowest_row():
    """Subset 0b1011 of group 1 on shard 2 of packet 0 needs 0b1010 made first (one row more each);
    a row alone is not made (it is converted); a layer without touches makes none."""
    from netweave.testbed.gnn.touches import used_subsets

    used = used_subsets(2, np.array([0]), np.array([2]), np.array([1]), np.array([0b1011]))
    assert used[0, 2, 1, 0] == (1 << 0b1011) | (1 << 0b1010) and used.sum() == used[0, 2, 1, 0]
    assert not used_subsets(2, np.array([1]), np.array([0]), np.array([0]), np.array([0b100])).any()
    none = np.zeros(0, np.int64)
    assert not used_subsets(3, none, none, none, none).any()


def test_packets_round_trip_and_malformed_ones_are_left_out():
    from netweave.testbed.gnn.packet import HB, SUM, UNIT, build, parse

    vals = np.arange(12, dtype=np.float32).reshape(3, 4)
    rows, lengths = build(UNIT, layer=1, direction=1, seq=7, block=2, sender=3, unit=np.array([5, 6, 7]), chunk=1,
                          values=vals)
    assert rows.shape == (3, HB + 16) and (lengths == HB + 16).all()
    buf = np.zeros((5, HB + 64), np.uint8)
    buf[:3, :rows.shape[1]] = rows
    buf[3, :rows.shape[1]] = rows[0]
    buf[3, :4] = np.frombuffer(b"XXXX", np.uint8)  # not our magic
    buf[4, :rows.shape[1]] = rows[1]
    lens = np.r_[lengths, lengths[0], lengths[1] - 4]  # the last is cut short
    head, idx = parse(buf, lens, 5)
    assert idx.tolist() == [0, 1, 2]
    assert head["unit"].tolist() == [5, 6, 7] and (head["seq"] == 7).all() and (head["kind"] == UNIT).all()
    np.testing.assert_array_equal(buf[idx, HB:HB + 16].copy().view(np.float32), vals)
    assert SUM != UNIT


def test_a_packet_carries_as_many_rows_as_fit_at_aggregator_boundaries():
    from netweave.testbed.gnn.tables import rows_per_packet, unit_packets

    # rows start at an aggregator (16 lanes) in the switch's 512-lane scratch
    assert [rows_per_packet(d) for d in (1, 10, 16, 17, 41, 128, 256, 257, 512, 513, 1433)] == \
        [32, 32, 32, 16, 10, 4, 2, 1, 1, 1, 1]
    for d in range(1, 600):
        r = rows_per_packet(d)
        assert r * 16 * -(-min(d, 512) // 16) <= 512 or d > 512
        assert d > 256 or (r + 1) * 16 * -(-d // 16) > 512  # no room for one more
    # runs of one copy mask, cut every `per` units; every unit in exactly one packet, in order
    masks = np.array([0, 0, 0, 0, 0, 4, 4, 0, 0, 1], np.uint64)
    first, rows = unit_packets(masks, 2)
    assert first.tolist() == [0, 2, 4, 5, 7, 9] and rows.tolist() == [2, 2, 1, 2, 2, 1]
    for f, r in zip(first, rows):
        assert (masks[f:f + r] == masks[f]).all()
    assert unit_packets(np.zeros(0, np.uint64), 4)[0].size == 0


def test_tables_whose_touches_would_add_stale_scratch_are_refused():
    """``check`` refuses a touch whose addend its packet's shard does not make, so that the program
    never adds what another packet left in the CPU's scratch: a subset not in ``used``, a row not
    converted (``conv``), a made subset whose smaller part is not made, a row alone in ``used``."""
    from netweave.testbed.gnn.tables import switch_tables
    from netweave.testbed.gnn.touches import GROUP, SUBSETS

    t = switch_tables(_plan("reddit-like:scale=0.003", hidden=16, transform_first=True), 200_000, shards=2)
    t.check(4)
    L = t.layers[0]
    cut = t.packets["cut"][L["packet_base"]:][:L["packets"]]
    i = int(np.flatnonzero(t.touches["cnt"][L["touch_base"]:][:L["touches"]] >= 3)[0])
    q = int(L["packet_base"]) + int(np.searchsorted(cut[:, -1], i, side="right"))
    s = int(np.searchsorted(t.packets["cut"][q], i, side="right")) - 1
    g, m = divmod(int(t.touches["sub"][int(L["touch_base"]) + i]), SUBSETS)
    word, bit, lower = m // 64, np.uint64(1) << np.uint64(m % 64), m & (m - 1)
    low = (m & -m).bit_length() - 1  # its lowest row
    assert t.packets["used"][q, s, g, word] & bit and t.packets["conv"][q, s] >> (GROUP * g + low) & 1

    def refused(field, index, value):
        old = t.packets[field][index]
        t.packets[field][index] = value
        with pytest.raises(ValueError, match="inconsistent"):
            t.check(4)
        t.packets[field][index] = old
        t.check(4)

    refused("used", (q, s, g, word), t.packets["used"][q, s, g, word] & ~bit)  # the touch's subset not made
    # its lowest row not converted:
    refused("conv", (q, s), t.packets["conv"][q, s] & ~np.uint32(1 << (GROUP * g + low)))
    lw, lb = lower // 64, np.uint64(1) << np.uint64(lower % 64)  # made from a part not made
    refused("used", (q, s, g, lw), t.packets["used"][q, s, g, lw] & ~lb)
    one = m & -m  # a row alone is converted, not made
    refused("used", (q, s, g, one // 64), t.packets["used"][q, s, g, one // 64] | np.uint64(1) << np.uint64(one % 64))
