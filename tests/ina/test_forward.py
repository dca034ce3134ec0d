"""Forwarding the destinations an aggregator cannot help: never more messages, counted in closed form."""

import numpy as np
import pytest

from netweave.graph import load_dataset, rmat
from netweave.ina import boundary_relation
from netweave.ina.forward import forwarded_destinations
from netweave.ina.replay import plan_replay
from netweave.ina.plan import ina_plan
from netweave.partition import metis_partition, random_partition


@pytest.fixture(scope="module", params=["cora-8", "cora-64", "rmat"])
def rel(request):
    if request.param == "rmat":
        g = rmat(1500, 9000, seed=2)
        return boundary_relation(g, random_partition(g, 6, seed=1))
    g = load_dataset("cora")
    return boundary_relation(g, metis_partition(g, int(request.param.split("-")[1]), seed=0))


def test_forwarded_destinations_are_those_without_gain(rel):
    fwd = forwarded_destinations(rel)
    assert (fwd[rel.need == 1]).all() and not fwd[rel.need == 0].any()
    sender, owner = rel.senders(), rel.parts[rel.dst]
    copies = set(zip(sender[fwd[rel.dst] & (rel.need[rel.dst] == 1)], owner[fwd[rel.dst] & (rel.need[rel.dst] == 1)]))
    for v in np.flatnonzero(fwd & (rel.need > 1)):  # every sender already copies to v's worker
        e = rel.dst == v
        assert all((u, w) in copies for u, w in zip(sender[e], owner[e]))


def test_unlimited_messages_in_closed_form(rel):
    """One block, unlimited memory: up = boundary vertices; down = aggregated destinations + one copy
    per (sender, worker) with a forwarded destination."""
    fwd = forwarded_destinations(rel)
    plan = ina_plan(rel, "switchgnn", 256, 10**12, "gamr", 0, blocking="single", forward=True)
    replay = plan_replay(plan)
    sender, owner = rel.senders(), rel.parts[rel.dst]
    f = fwd[rel.dst]
    copies = np.unique(sender[f] * rel.num_workers + owner[f]).size
    assert replay.up.sum() == rel.boundary().size
    assert replay.down.sum() == int((~fwd & (rel.need > 0)).sum()) + copies
    plain = plan_replay(ina_plan(rel, "switchgnn", 256, 10**12, "gamr", 0, blocking="single", forward=False))
    assert plain.down.sum() == rel.destinations().size and replay.messages <= plain.messages


def test_forwarded_edges_ride_their_senders_first_block(rel):
    plan = ina_plan(rel, "switchgnn", 256, 40 * 2 * 128, "gamr", 0, blocking="destination", forward=True)
    fwd = plan.forward[plan.dst]
    assert plan.num_blocks > 1 and fwd.any()
    first = {}
    for u, b in zip(plan.src[~fwd], plan.block[~fwd]):
        first[u] = min(first.get(u, b), b)
    for u, b in zip(plan.src[fwd], plan.block[fwd]):
        assert b == first.get(u, 0)
    units = plan.src[plan.unit_lo] * plan.num_blocks + plan.block[plan.unit_lo]
    assert np.unique(units).size == units.size  # still one unit per (sender, block)


@pytest.mark.parametrize("topology", ["star:n=8,gbps=100,latency_us=2",
                                      "leafspine:leaves=2,spines=2,hosts=4,gbps=100,latency_us=2"])
@pytest.mark.parametrize("loss", [0.0, 0.02])
def test_the_simulated_switch_forwards_them_and_the_sums_stay_exact(topology, loss):
    from netweave.sim import SimConfig, sim_network, simulate
    from netweave.sim.layer import check_sums
    from netweave.topology import load_topology_spec

    g = load_dataset("cora")
    parts = metis_partition(g, 8, seed=0)
    rel = boundary_relation(g, parts)
    net = sim_network(load_topology_spec(topology))
    values = np.random.default_rng(0).standard_normal((g.num_nodes, 4))
    plain = ina_plan(rel, "switchgnn", 256, 10**9, "gamr", 0, blocking="single", forward=False)
    plan = ina_plan(rel, "switchgnn", 256, 10**9, "gamr", 0, blocking="single", forward=True)
    a = simulate(plain, net, SimConfig(loss=loss, seed=1), values)
    b = simulate(plan, net, SimConfig(loss=loss, seed=1), values)
    assert check_sums(g, parts.parts, values, b.sums) < 1e-9
    assert b.counters["aggregation_results"] < a.counters["aggregation_results"]
    if loss == 0 and topology.startswith("star"):
        assert b.traffic_bytes == plan_replay(plan).messages * 256 < a.traffic_bytes
