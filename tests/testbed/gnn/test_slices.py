"""Column slices (testbed/gnn/slices.py): the sliced plan carries the same cross edges and, summed
edge by edge, gives scipy's cross-partition product slice by slice; each worker sends every
unit's first slice before any unit's second; the plans' files say how each layer is sliced and a
crafted one is refused; a worker's transport splits and joins its rows; the simulator's row is a
slice's; bad input is one line."""

import socket
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from netweave.errors import NetweaveError
from netweave.graph import load_dataset
from netweave.ina import boundary_relation
from netweave.ina.plan import ina_plan
from netweave.partition import Partition, metis_partition
from netweave.testbed.gnn.plans import plan_arrays
from netweave.testbed.gnn.slices import MAX_SLICES, SlicedTransport, column_slices, sliced_boundary
from netweave.testbed.gnn.wire import GRADSUM, SUMS, Conn, ProtocolError, pump
from netweave.testbed.gnn.worker import SwitchTransport, grad_sum


@pytest.fixture(scope="module")
def cora_plan():
    g = load_dataset("cora")
    parts = metis_partition(g, 4, 0).parts.astype(np.int64)
    rel = boundary_relation(g, Partition(parts, 4, "metis"))
    plan = ina_plan(rel, "switchgnn", 128, 10_000_000, "gamr", 0, blocking="paper", forward=True)
    assert plan.num_blocks == 1
    return g, parts, plan


def cross_product(g, parts, x):
    """scipy's sum over every edge whose ends lie on different workers (the outside reference)."""
    n = g.num_nodes
    rows = np.repeat(np.arange(n), np.diff(g.indptr))
    a = sp.csr_matrix((np.ones(g.indices.size), (rows, g.indices)), shape=(n, n))
    a.data[parts[rows] == parts[g.indices]] = 0
    a.eliminate_zeros()
    a.data[:] = 1
    return a @ x


def plan_sums(plan, x):
    """Edge by edge: every destination's sum of its plan edges' sources."""
    out = np.zeros_like(x)
    np.add.at(out, plan.dst, x[plan.src])
    return out


@pytest.mark.parametrize("k", [2, 4])
def test_the_sliced_plan_sums_what_scipy_sums_slice_by_slice(cora_plan, k):
    g, parts, plan = cora_plan
    n, dim = g.num_nodes, 8
    x = np.random.default_rng(k).standard_normal((n, dim))
    s = column_slices(plan, k, n)
    assert s.src.size == k * plan.src.size and s.parts.size == k * n and s.feature_bytes == plan.feature_bytes // k
    sliced = np.vstack([x[:, i * dim // k:(i + 1) * dim // k] for i in range(k)])  # vertex v's slice i: v + i·n
    sums = plan_sums(s, sliced)
    joined = np.hstack([sums[i * n:(i + 1) * n] for i in range(k)])
    np.testing.assert_allclose(joined, cross_product(g, parts, x), atol=1e-9)
    np.testing.assert_allclose(joined, plan_sums(plan, x), atol=1e-9)
    # a slice's vertex keeps its owner; each worker's units: every slice 0 first, then slice 1, …
    assert np.array_equal(s.parts[s.dest_v], np.tile(parts, k)[s.dest_v])
    for h in range(4):
        units = np.arange(s.unit_ptr[h], s.unit_ptr[h + 1])
        slice_of = s.src[s.unit_lo[units]] // n
        assert np.all(np.diff(slice_of) >= 0) and np.array_equal(np.unique(slice_of), np.arange(k))
        assert np.all(s.parts[s.src[s.unit_lo[units]]] == h)
        dests = np.arange(s.dest_ptr[h], s.dest_ptr[h + 1])
        assert np.all(s.parts[s.dest_v[dests]] == h) and np.all(np.diff(s.dest_v[dests] // n) >= 0)
    # the destinations' edge ranges in in_edges name their own edges
    for i in np.random.default_rng(0).choice(s.dest_v.size, 50, replace=False):
        assert np.all(s.dst[s.in_edges[s.dest_lo[i]:s.dest_hi[i]]] == s.dest_v[i])


def test_a_plan_of_several_blocks_or_too_many_slices_is_refused(cora_plan):
    g, parts, plan = cora_plan
    assert column_slices(plan, 1, g.num_nodes) is plan
    with pytest.raises(ValueError, match="1 to 16"):
        column_slices(plan, MAX_SLICES + 1, g.num_nodes)
    rel = boundary_relation(g, Partition(parts, 4, "metis"))
    blocks = ina_plan(rel, "switchgnn", 4 * 1433, 200_000, "gamr", 0, blocking="paper", forward=True)
    assert blocks.num_blocks > 1
    with pytest.raises(ValueError, match="one block"):
        column_slices(blocks, 2, g.num_nodes)


def test_the_job_slices_the_layers_of_one_block_whose_width_k_divides(tmp_path):
    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.plans import load_plans, save_plans

    job = prepare_gnn_job("cora", 4, 200_000, str(tmp_path), hidden=16, column_slices=2)
    assert [(p["dim"], p["slices"]) for p in job.planned[:2]] == [(16, 2), (7, 1)]  # 7 values a row: whole
    plans = load_plans(f"{tmp_path}/plans.npz")
    assert [(int(p["dim"]), int(p["slices"]), p["parts"].size) for p in plans] == [(8, 2, 2 * 2708), (7, 1, 2708)]
    for bad, words in ((0, "inconsistent"), (MAX_SLICES + 1, "inconsistent"), (3, "inconsistent")):
        crafted = [dict(p) for p in plans]
        crafted[0]["slices"] = np.array(bad)  # 3: 2 × 2,708 vertices are not 3 slices of the graph's
        save_plans(f"{tmp_path}/crafted.npz", crafted)
        with pytest.raises(ValueError, match=words):
            load_plans(f"{tmp_path}/crafted.npz")
    with pytest.raises(NetweaveError, match="--column-slices 17"):
        prepare_gnn_job("cora", 4, 200_000, str(tmp_path), column_slices=17)


def test_the_simulator_sends_a_slice_a_row_and_p2p_whole_rows(tmp_path):
    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.predict import predict_epoch_exchange_s

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    whole = prepare_gnn_job("cora", 4, 200_000, str(tmp_path / "a"), hidden=16)
    halves = prepare_gnn_job("cora", 4, 200_000, str(tmp_path / "b"), hidden=16, column_slices=2)
    a = predict_epoch_exchange_s(whole, 4, 0.1, memory_bytes=200_000)
    b = predict_epoch_exchange_s(halves, 4, 0.1, memory_bytes=200_000)
    assert b["p2p_s"] == a["p2p_s"] and b["layers"][1] == a["layers"][1]  # layer 1 (7 wide) is not sliced
    # a slice's 8 values instead of a row's 16, with the same share of the headers (32 rows a packet either way)
    row, half = a["layers"][0]["ina_row_bytes"], b["layers"][0]["ina_row_bytes"]
    assert b["layers"][0]["dim"] == 16 and half - 4 * 8 == pytest.approx(row - 4 * 16, abs=0.5)


class Exact:
    """A transport that sums the plan's edges exactly (its vertices are ``boundary``'s rows)."""

    def __init__(self, plans, boundary):
        self.plans, self.boundary, self.calls = plans, boundary, []

    def exchange(self, layer, direction, rows):
        p = self.plans[layer]
        out = np.zeros_like(rows)
        np.add.at(out, np.searchsorted(self.boundary, p.dst), rows[np.searchsorted(self.boundary, p.src)])
        return out


class ExactBegun(Exact):
    """... that can begin an exchange and end it later."""

    def begin(self, layer, direction, rows):
        self.calls.append(rows.shape)
        self._pending = (layer, direction, rows)

    def end(self):
        return self.exchange(*self._pending)


def test_a_workers_transport_splits_its_rows_into_slices_and_joins_the_sums(cora_plan):
    g, parts, plan = cora_plan
    n = g.num_nodes
    boundary = np.arange(n)  # every vertex a row: the whole product, as scipy's
    x = np.random.default_rng(1).standard_normal((n, 8)).astype(np.float32)
    plans = [column_slices(plan, 4, n), plan]  # layer 0 in 4 slices, layer 1 whole
    for kind in (ExactBegun, Exact):
        inner = kind(plans, sliced_boundary(boundary, n, 4))
        t = SlicedTransport(inner, [4, 1], 4)
        begin = kind is ExactBegun
        assert hasattr(t, "begin") == begin  # SumExchange overlaps only where the inner transport can
        want = cross_product(g, parts, x)
        np.testing.assert_allclose(t.exchange(0, 0, x), want, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(t.exchange(1, 0, x), want, rtol=1e-5, atol=1e-4)
        if begin:
            t.begin(0, 1, x)
            assert inner.calls == [(4 * n, 2)]  # 4 slices of 2 values a row
            np.testing.assert_allclose(t.end(), want, rtol=1e-5, atol=1e-4)
    assert t.plans is plans  # anything else is the inner transport's


def test_sums_that_come_with_the_gradients_wait_for_the_next_exchange_through_the_slices(cora_plan):
    """A faster worker may begin the next exchange while this one still sums its gradients, and the
    switch agent then sends this worker sums that wait for none of its units: they must reach the
    transport on the switch's stream through SlicedTransport (a wrapper once refused them, and the
    worker died: 1 in 8 runs through the userspace agent)."""
    g, parts, plan = cora_plan
    n = g.num_nodes
    plans = [plan_arrays(column_slices(plan, 2, n), 64, 2)]
    listener = socket.create_server(("127.0.0.1", 0))
    with listener, socket.create_connection(listener.getsockname()) as a, listener.accept()[0] as b:
        worker, switch = Conn(a), Conn(b)
        t = SlicedTransport(SwitchTransport(worker, 0, plans, sliced_boundary(np.flatnonzero(parts == 0), n, 2), 5.0),
                            [2], 2)
        switch.queue(SUMS, np.array([n + 7], np.int32), np.array([3], np.int32), np.ones((1, 64), np.float32),
                     layer=0, direction=0, block=0, count=1, dim=64, seq=1)  # exchange 1's: slice 1 of vertex 7
        switch.queue(GRADSUM, np.full(3, 2.0, np.float32), count=3, offset=0, dim=3, seq=1)
        pump([switch], lambda: True, lambda c, m: None, 5.0, "the sums")
        got = grad_sum(worker, 0, np.ones(3, np.float32), 1, 5.0, on_other=getattr(t, "hold", None))
        np.testing.assert_array_equal(got, [2.0, 2.0, 2.0])
        assert [(m.kind, m.seq, m.count) for m in t.inner.early] == [(SUMS, 1, 1)]
        switch.queue(SUMS, np.array([7], np.int32), np.array([3], np.int32), np.ones((1, 64), np.float32),
                     layer=0, direction=0, block=0, count=1, dim=64, seq=1)
        switch.queue(GRADSUM, np.full(3, 2.0, np.float32), count=3, offset=0, dim=3, seq=2)
        pump([switch], lambda: True, lambda c, m: None, 5.0, "the sums")
        with pytest.raises(ProtocolError, match="unexpected message kind"):  # a transport without a switch stream
            grad_sum(worker, 0, np.ones(3, np.float32), 2, 5.0, on_other=getattr(object(), "hold", None))


def test_bad_column_slices_are_one_line():
    done = subprocess.run([sys.executable, "-m", "netweave", "testbed", "gnn", "cora", "--column-slices", "17"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == ("netweave: error: --column-slices 17: give 1 (whole rows) to 16, or 0 to let "
                                   "the model choose each layer's")


def test_only_the_kernel_plane_slices_by_default():
    """--column-slices 0 lets the model choose for the kernel plane; the userspace agent, bound by
    its CPU (BENCHMARKS.md: slices cost it 3-19 %), and p2p take whole rows unless asked."""
    from netweave.testbed.gnn.slices import slices_asked

    assert slices_asked(0, "ina", "xdp") == 0  # the model's choice, per layer
    assert slices_asked(0, "ina", "user") == 1
    assert slices_asked(2, "ina", "user") == 2 and slices_asked(4, "ina", "xdp") == 4
    assert slices_asked(0, "p2p", "xdp") == slices_asked(2, "p2p", "user") == 1
