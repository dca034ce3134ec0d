"""InaPlan: every cross edge in exactly one unit, units in the workers' orders, destinations complete."""

import numpy as np
import pytest

from netweave.graph import load_dataset, rmat
from netweave.ina import boundary_relation, gamr_order
from netweave.ina.plan import ina_plan
from netweave.ina.strategies import AGGREGATOR_BYTES
from netweave.partition import metis_partition, random_partition

F = 64 * 4


@pytest.fixture(scope="module", params=["cora", "rmat"])
def rel(request):
    g = load_dataset("cora") if request.param == "cora" else rmat(1500, 9000, seed=2)
    parts = metis_partition(g, 8, seed=0) if request.param == "cora" else random_partition(g, 6, seed=1)
    return boundary_relation(g, parts)


def _edges(rel):
    return rel.senders() * rel.parts.size + rel.dst


@pytest.mark.parametrize("strategy,memory", [("host", None), ("straw", None), ("straw", 0), ("switchgnn", 40 * 2 * 128)])
def test_every_cross_edge_is_in_one_unit_and_one_destination(rel, strategy, memory):
    plan = ina_plan(rel, strategy, F, memory, order="gamr", seed=0, blocking="paper")
    covered = np.concatenate([np.arange(lo, hi) for lo, hi in zip(plan.unit_lo, plan.unit_hi)])
    assert np.array_equal(np.sort(covered), np.arange(plan.dst.size))
    assert np.array_equal(np.sort(plan.src * rel.parts.size + plan.dst), np.sort(_edges(rel)))
    assert np.array_equal(np.sort(plan.in_edges), np.arange(plan.dst.size))
    spans = np.concatenate([plan.in_edges[lo:hi] for lo, hi in zip(plan.dest_lo, plan.dest_hi)])
    assert np.array_equal(np.sort(spans), np.arange(plan.dst.size))
    for k in range(plan.dest_v.size):  # one destination entry = one (block, vertex)
        e = plan.in_edges[plan.dest_lo[k]:plan.dest_hi[k]]
        assert (plan.dst[e] == plan.dest_v[k]).all() and np.unique(plan.block[e]).size == 1
    assert plan.unit_ptr[-1] == plan.num_units and plan.dest_ptr[-1] == plan.dest_v.size
    for h in range(plan.num_workers):  # units of a worker are its own vertices, in block order
        for b in range(plan.num_blocks):
            k = slice(plan.unit_ptr[h * plan.num_blocks + b], plan.unit_ptr[h * plan.num_blocks + b + 1])
            assert (rel.parts[plan.src[plan.unit_lo[k]]] == h).all() and (plan.block[plan.unit_lo[k]] == b).all()


def test_host_units_are_sender_worker_copies(rel):
    plan = ina_plan(rel, "host", F)
    u, w = rel.sender_worker_pairs()
    assert plan.num_units == u.size and (plan.unit_to >= 0).all()
    assert np.array_equal(np.sort(plan.src[plan.unit_lo] * rel.num_workers + plan.unit_to), np.sort(u * rel.num_workers + w))


def test_switchgnn_blocks_fit_and_multicast_units_follow_gamr(rel):
    memory = 30 * 2 * AGGREGATOR_BYTES
    plan = ina_plan(rel, "switchgnn", F, memory, order="gamr", seed=0, blocking="paper")
    assert plan.num_blocks > 1 and plan.synchronised and (plan.unit_to == -1).all()
    for b in range(plan.num_blocks):
        assert np.unique(plan.dst[plan.block == b]).size * 2 <= memory // AGGREGATOR_BYTES
    straw = ina_plan(rel, "straw", F, None, order="gamr")
    order = gamr_order(rel.send_ptr, rel.dst)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    for h in range(rel.num_workers):
        sent = straw.src[straw.unit_lo[straw.unit_ptr[h]:straw.unit_ptr[h + 1]]]
        assert np.all(np.diff(rank[sent]) > 0) and np.array_equal(np.sort(sent), np.flatnonzero((np.diff(rel.send_ptr) > 0) & (rel.parts == h)))


def test_bad_plans_are_one_line(rel):
    from netweave.errors import NetweaveError

    with pytest.raises(NetweaveError, match="finite"):
        ina_plan(rel, "switchgnn", F, None)
    with pytest.raises(NetweaveError, match="unknown strategy"):
        ina_plan(rel, "multicast", F)
    with pytest.raises(NetweaveError, match="aggregators"):
        ina_plan(rel, "switchgnn", F, 128, blocking="paper")


def test_memory_per_switch_sizes_blocks_to_the_smallest_or_to_each_edges_budget(rel):
    """Issue 16: a plan made for switches of different memory keeps it per switch (the simulator's
    capacities); its blocks fit the smallest switch, or each edge's own budget when given."""
    memory = np.array([30, 500]) * 2 * AGGREGATOR_BYTES
    plan = ina_plan(rel, "switchgnn", F, memory, order="gamr", seed=0, blocking="paper")
    small = ina_plan(rel, "switchgnn", F, int(memory.min()), order="gamr", seed=0, blocking="paper")
    assert np.array_equal(plan.memory_bytes, memory) and np.array_equal(plan.block, small.block)
    budget = np.where(rel.parts[rel.senders()] == 0, memory[0], memory[1])  # worker 0 behind the small switch
    per_edge = ina_plan(rel, "switchgnn", F, memory, order="gamr", seed=0, edge_memory=budget, blocking="paper")
    assert per_edge.num_blocks < small.num_blocks
    small_edges = rel.parts[per_edge.src] == 0
    for b in range(per_edge.num_blocks):
        e = per_edge.block == b
        cap = (memory[0] if small_edges[e].all() else memory[1]) // AGGREGATOR_BYTES
        assert small_edges[e].all() or not small_edges[e].any()
        assert np.unique(per_edge.dst[e]).size * 2 <= cap
