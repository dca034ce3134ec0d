"""Host-based and strawman traffic: the §2.3.2 volumes, the limits, and exact sums."""

import numpy as np
import pytest

from netweave.graph import load_dataset, rmat
from netweave.ina import (boundary_relation, host_traffic, interleave, random_orders,
                          straw_traffic)
from netweave.partition import comm_relation, metis_partition, random_partition

F = 64 * 4  # 64 float32 values: two aggregators per destination


@pytest.fixture(params=["cora", "rmat"])
def case(request):
    g = load_dataset("cora") if request.param == "cora" else rmat(2000, 12000, seed=4)
    parts = metis_partition(g, 8, seed=0) if request.param == "cora" else random_partition(g, 8, seed=0)
    return g, parts, boundary_relation(g, parts)


def test_relation_matches_the_comm_relation(case):
    g, parts, rel = case
    comm = comm_relation(g, parts)
    u, _ = rel.sender_worker_pairs()
    assert u.size == comm.send_ids.size  # one host copy per (vertex, needing worker)
    assert np.array_equal(np.bincount(u, minlength=g.num_nodes), comm.needers())
    src = g.edge_sources()
    assert rel.need.sum() == rel.num_cross_edges == int((parts.parts[src] != parts.parts[g.indices]).sum())


def test_host_traffic_is_every_copy_up_and_down(case):
    g, parts, rel = case
    t = host_traffic(rel, F)
    copies = comm_relation(g, parts).volume()
    assert np.array_equal(t.up, copies.sum(axis=1)) and np.array_equal(t.down, copies.sum(axis=0))
    assert t.traffic_bytes == 2 * copies.sum() * F


def test_unlimited_straw_uploads_once_and_sends_one_sum(case):
    _, _, rel = case
    t = straw_traffic(rel, F, None, interleave(rel, random_orders(rel, 0)))
    assert t.up.sum() == rel.boundary().size and t.down.sum() == rel.destinations().size
    assert t.unaggregated == 0 and t.traffic_bytes < host_traffic(rel, F).traffic_bytes


def test_straw_without_memory_is_host_down_traffic(case):
    _, _, rel = case
    t = straw_traffic(rel, F, 0, interleave(rel, random_orders(rel, 1)))
    host = host_traffic(rel, F)
    assert np.array_equal(t.down, host.down) and t.unaggregated == host.down.sum() and t.peak_aggregators == 0
    assert t.up.sum() == rel.boundary().size  # the switch still receives each feature once


@pytest.mark.parametrize("memory", [0, 128 * 2 * 10, 128 * 2 * 200, None])
def test_every_strategy_delivers_the_sparse_product(case, memory):
    g, parts, rel = case
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 3))
    src = g.edge_sources()
    cross = parts.parts[src] != parts.parts[g.indices]
    expected = np.zeros_like(x)
    np.add.at(expected, g.indices[cross], x[src[cross]])  # A_cross^T x: remote-neighbour sums
    t = straw_traffic(rel, F, memory, interleave(rel, random_orders(rel, 2)), values=x)
    np.testing.assert_allclose(t.sums, expected, atol=1e-9)
    if memory is not None:
        assert t.peak_aggregators <= memory // 128
    np.testing.assert_allclose(host_traffic(rel, F, values=x).sums, expected, atol=1e-9)


def test_interleave_is_round_robin():
    g = rmat(300, 1500, seed=1)
    rel = boundary_relation(g, random_partition(g, 3, seed=0))
    orders = random_orders(rel, 5)
    seq = interleave(rel, orders)
    assert seq.size == sum(o.size for o in orders)
    assert list(seq[:3]) == [orders[0][0], orders[1][0], orders[2][0]]
