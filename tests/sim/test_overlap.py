"""Overlapped (double-buffered) blocks in the switch simulator (issue 19, beyond the paper): a host
sends block b + 1 as soon as block b is sent, once block b - 1 is complete everywhere. The sums stay
exact (also under loss, tail drop and aggregator overflow), the switches never use more than their
memory, and the schedule matches a hand-computed one."""

import dataclasses

import numpy as np
import pytest

from netweave.graph import load_dataset
from netweave.graph.graph import from_edges
from netweave.ina import boundary_relation
from netweave.ina.plan import ina_plan
from netweave.partition import Partition, metis_partition
from netweave.sim import SimConfig, sim_network, simulate
from netweave.sim.layer import check_sums
from netweave.topology import load_topology_spec

F = 64 * 4  # two 128-byte aggregators per destination
MEMORY = 40 * 2 * 128  # 40 destinations per switch: cora's 8 workers need tens of blocks
STAR = "star:n=8,gbps=100,latency_us=2"
LEAFSPINE = "leafspine:leaves=2,spines=2,hosts=4,gbps=100,latency_us=2"


def net(spec):
    return sim_network(load_topology_spec(spec))


@pytest.fixture(scope="module")
def cora():
    g = load_dataset("cora")
    parts = metis_partition(g, 8, seed=0)
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 3))
    return g, parts.parts, boundary_relation(g, parts), x


@pytest.fixture(scope="module")
def halves(cora):
    """Blocks sized to half of ``MEMORY`` on switches that have all of it: the barrier and the overlap
    run the same plan."""
    _, _, rel, _ = cora
    plan = dataclasses.replace(ina_plan(rel, "switchgnn", F, MEMORY // 2, "gamr", 1, blocking="paper"), memory_bytes=MEMORY)
    assert plan.num_blocks >= 10
    return plan, dataclasses.replace(plan, overlap=True)


def exact(cora, result):
    g, parts, _, x = cora
    return check_sums(g, parts, x, result.sums) < 1e-9


@pytest.mark.parametrize("topology", [STAR, LEAFSPINE])
def test_overlap_delivers_the_sparse_product(cora, halves, topology):
    _, plan = halves
    r = simulate(plan, net(topology), SimConfig(), cora[3])
    assert exact(cora, r)
    assert r.counters["unaggregated_messages"] == 0  # two half-memory blocks fit the switch together
    assert r.counters["aggregation_results"] > 0 and r.peak_aggregator_bytes.max() <= MEMORY


@pytest.mark.parametrize("topology", [STAR, LEAFSPINE])
@pytest.mark.parametrize("loss", [0.0, 0.02])
def test_overlap_stays_exact_when_the_blocks_overflow_the_memory(cora, topology, loss):
    """Blocks sized to ``MEMORY`` on switches with an eighth of it: the blocks in flight overflow the
    switches; the copies that find no free aggregator bypass it, best effort, and the sums stay exact."""
    _, _, rel, x = cora
    small = MEMORY // 8
    plan = dataclasses.replace(ina_plan(rel, "switchgnn", F, MEMORY, "random", 0, blocking="paper"), memory_bytes=small, overlap=True)
    r = simulate(plan, net(topology), SimConfig(loss=loss, seed=6), x)
    assert exact(cora, r)
    assert r.counters["unaggregated_messages"] > 0 and r.counters["aggregation_results"] > 0
    assert r.peak_aggregator_bytes.max() == small  # all of it used, never more


@pytest.mark.parametrize("topology", [STAR, LEAFSPINE])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss,buffer", [(0.01, None), (0.0, 1000.0), (0.05, 1500.0)])
def test_overlap_recovers_from_loss_and_tail_drop(cora, halves, topology, seed, loss, buffer):
    _, plan = halves
    r = simulate(plan, net(topology), SimConfig(loss=loss, buffer_bytes=buffer, seed=seed), cora[3])
    assert exact(cora, r)  # and it finished: a stall or the horizon raises
    assert r.counters["lost_messages"] + r.counters["dropped_messages"] > 0
    assert r.peak_aggregator_bytes.max() <= MEMORY
    if buffer is not None:
        assert r.max_queue_bytes.max() <= buffer


def test_overlap_with_per_switch_memory_stays_within_each_switch(cora):
    _, _, rel, x = cora
    network = net(LEAFSPINE)
    memory = np.array([60, 40, 80, 50]) * 2 * 128  # leaves, then spines
    plan = ina_plan(rel, "switchgnn", F, memory // 2, "gamr", 0, blocking="paper")
    plan = dataclasses.replace(plan, memory_bytes=memory, overlap=True)
    for config in (SimConfig(), SimConfig(loss=0.02, seed=4)):
        r = simulate(plan, network, config, x)
        assert exact(cora, r)
        assert (r.peak_aggregator_bytes <= memory).all()


@pytest.mark.parametrize("topology", [STAR, LEAFSPINE])
def test_overlap_is_faster_and_sends_the_same_features(halves, topology):
    barrier, overlap = halves
    network = net(topology)
    a, b = simulate(barrier, network), simulate(overlap, network)
    assert b.completion_time_s < 0.8 * a.completion_time_s
    assert np.array_equal(a.up_bytes, b.up_bytes) and np.array_equal(a.down_bytes, b.down_bytes)
    assert a.core_bytes == b.core_bytes
    assert a.counters["unaggregated_messages"] == b.counters["unaggregated_messages"] == 0
    assert a.counters["aggregation_results"] == b.counters["aggregation_results"]
    # DONE + NEXT per host for every block some block waits on: B - 1 with the barrier, B - 2 with
    # overlap, where one NEXT may announce two blocks (the later one was complete first)
    hops = 1 if topology == STAR else 2  # host -> coordinator
    assert a.counters["control_bytes"] == (barrier.num_blocks - 1) * 2 * hops * 8 * 64
    assert (barrier.num_blocks - 2) * hops * 8 * 64 < b.counters["control_bytes"]
    assert b.counters["control_bytes"] <= (barrier.num_blocks - 2) * 2 * hops * 8 * 64


def test_overlap_changes_nothing_for_one_block(cora):
    _, _, rel, x = cora
    plan = ina_plan(rel, "switchgnn", F, 10**7, "gamr", 0, blocking="paper")
    assert plan.num_blocks == 1
    a = simulate(plan, net(STAR), SimConfig(loss=0.02, seed=3), x)
    b = simulate(dataclasses.replace(plan, overlap=True), net(STAR), SimConfig(loss=0.02, seed=3), x)
    assert a.completion_time_s == b.completion_time_s and a.counters == b.counters
    assert np.array_equal(a.sums, b.sums)


@pytest.mark.parametrize("blocks", [4, 5, 6])
def test_closed_form_schedules(blocks):
    """Two hosts on a star swap one feature per block: vertex 2i (host 0) and 2i + 1 (host 1) are
    neighbours, and a switch of two aggregators makes every pair its own block. A unit takes
    ``a = F / r`` to serialise and ``d`` per link, a DONE or NEXT ``k = 64 B / r``; nothing queues.

    Barrier: block b's sums arrive ``2a + 2d`` after it starts; DONE up and NEXT down take
    ``2k + 2d`` more, so blocks start every ``P = 2a + 4d + 2k`` and the last ends at
    ``(B - 1) P + 2a + 2d``.

    Overlap: block 1 follows block 0 one unit later (``a``); block b + 2 waits for NEXT, which
    follows DONE(b) as above, so blocks 2j and 2j + 1 start at ``j P`` and ``j P + a``. The last
    block ends ``2a + 2d`` after its start, after the block before it."""
    g = from_edges(np.arange(blocks) * 2, np.arange(blocks) * 2 + 1, 2 * blocks)
    rel = boundary_relation(g, Partition(np.tile([0, 1], blocks).astype(np.int32), 2))
    f = 128
    plan = ina_plan(rel, "switchgnn", f, 2 * 128, "gamr", 0, blocking="paper")
    assert plan.num_blocks == blocks and (np.diff(plan.unit_ptr) == 1).all() and (np.diff(plan.dest_ptr) == 1).all()
    plan = dataclasses.replace(plan, memory_bytes=4 * 128)  # room for two blocks
    network = net("star:n=2,gbps=100,latency_us=2")
    a, k, d = f / 12.5e9, 64 / 12.5e9, 2e-6
    period = 2 * a + 4 * d + 2 * k
    barrier = (blocks - 1) * period + 2 * a + 2 * d
    j = (blocks - 1) // 2
    overlap = j * period + (a if blocks % 2 == 0 else 0.0) + 2 * a + 2 * d
    x = np.random.default_rng(1).standard_normal((2 * blocks, 2))
    for p, expected in ((plan, barrier), (dataclasses.replace(plan, overlap=True), overlap)):
        r = simulate(p, network, SimConfig(), x)
        assert r.completion_time_s == pytest.approx(expected, rel=1e-9)
        np.testing.assert_allclose(r.finish_s, expected, rtol=1e-9)
        np.testing.assert_allclose(r.sums[0::2], x[1::2], atol=1e-12)
        np.testing.assert_allclose(r.sums[1::2], x[0::2], atol=1e-12)
