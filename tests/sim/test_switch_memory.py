"""Aggregator memory per switch (issue 16): each switch's ``aggregator_memory`` from the topology
sizes its aggregators in the simulator, unless one memory is given for all; SwitchGNN's blocks fit
the smallest switch their edges are aggregated at, so no switch ever overflows."""

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset
from netweave.ina import boundary_relation
from netweave.ina.plan import ina_plan
from netweave.partition import metis_partition
from netweave.sim import sim_network, simulate
from netweave.scenarios import InaScenario
from netweave.sim.layer import DEFAULT_MEMORY, parse_switch_memory, plan_memory
from netweave.topology import load_topology_spec

F = 64 * 4  # two 128-byte aggregators per destination

YAML = """\
name: two-leaves
nodes:
  - {{name: L0, kind: switch, ina: true, aggregator_memory: {l0}}}
  - {{name: L1, kind: switch, ina: true, aggregator_memory: {l1}}}
  - {{name: S0, kind: switch{s0}}}
  - {{name: H0, kind: host}}
  - {{name: H1, kind: host}}
  - {{name: H2, kind: host}}
  - {{name: H3, kind: host}}
links:
  - {{a: H0, b: L0, gbps: 100, latency_us: 1}}
  - {{a: H1, b: L0, gbps: 100, latency_us: 1}}
  - {{a: H2, b: L1, gbps: 100, latency_us: 1}}
  - {{a: H3, b: L1, gbps: 100, latency_us: 1}}
  - {{a: L0, b: S0, gbps: 100, latency_us: 1}}
  - {{a: L1, b: S0, gbps: 100, latency_us: 1}}
"""


def topology(tmp_path, l0="2KB", l1="64KB", s0=None) -> str:
    path = tmp_path / f"two-leaves-{l0}-{l1}-{s0}.yaml"
    path.write_text(YAML.format(l0=l0, l1=l1, s0="" if s0 is None else f", aggregator_memory: {s0}"))
    return str(path)


@pytest.fixture(scope="module")
def rel():
    g = load_dataset("cora")
    return boundary_relation(g, metis_partition(g, 4, seed=0))


def test_each_switch_has_the_topologys_memory_unless_overridden(tmp_path):
    net = sim_network(load_topology_spec(topology(tmp_path)))
    assert net.switch_memory().tolist() == [2000, 64000, DEFAULT_MEMORY]  # S0 gives none: the default
    assert net.switch_memory(5000).tolist() == [5000] * 3 and net.switch_memory(None) is None
    star = sim_network(load_topology_spec("star:n=4"))
    assert star.switch_memory().tolist() == [DEFAULT_MEMORY]  # builders give none unless memory=…
    assert sim_network(load_topology_spec("star:n=4,memory=1MB")).switch_memory().tolist() == [1_000_000]


def test_two_switches_with_different_memory_have_different_capacities(tmp_path, rel):
    """The strawman fills whatever a switch has: the small leaf saturates at its own memory while the
    big one goes beyond it; with one memory for all both stop at the small one."""
    net = sim_network(load_topology_spec(topology(tmp_path)))
    memory, _ = plan_memory(net, rel)
    r = simulate(ina_plan(rel, "straw", F, memory, order="random"), net)
    small = 2000 // (2 * 128) * 2 * 128  # whole destinations of 2 aggregators
    assert r.peak_aggregator_bytes[0] == small and r.peak_aggregator_bytes[1] > 2000
    assert (r.peak_aggregator_bytes <= memory).all()
    same = simulate(ina_plan(rel, "straw", F, 2000, order="random"), net)
    assert same.peak_aggregator_bytes[1] <= small < r.peak_aggregator_bytes[1]
    assert same.counters["unaggregated_messages"] > r.counters["unaggregated_messages"]


@pytest.mark.parametrize("small", ["L0", "L1", "S0"])
def test_switchgnn_blocks_fit_the_smallest_switch_on_their_path(tmp_path, rel, small):
    mems = {"l0": "64KB", "l1": "64KB", "s0": "64KB"} | {small.lower(): "2KB"}
    net = sim_network(load_topology_spec(topology(tmp_path, **mems)))
    memory, edge_memory = plan_memory(net, rel)
    assert memory.min() == 2000 and edge_memory.min() == 2000 and edge_memory.max() == 64000
    plan = ina_plan(rel, "switchgnn", F, memory, order="gamr", edge_memory=edge_memory, blocking="paper")
    r = simulate(plan, net)
    assert (r.peak_aggregator_bytes <= memory).all()  # the small switch is never exceeded ...
    assert r.counters["unaggregated_messages"] == 0  # ... and nothing had to bypass it
    big = ina_plan(rel, "switchgnn", F, 64000, order="gamr", blocking="paper")
    assert plan.num_blocks > big.num_blocks
    budget = net.edge_memory(memory, rel.parts[plan.src], rel.parts[plan.dst], plan.dst)
    for b in range(plan.num_blocks):  # every block's destinations fit every switch its edges aggregate at
        e = plan.block == b
        assert np.unique(plan.dst[e]).size * 2 <= budget[e].min() // 128


def test_equal_memories_plan_exactly_as_one_memory(tmp_path, rel):
    net = sim_network(load_topology_spec(topology(tmp_path, "8KB", "8KB", "8KB")))
    memory, edge_memory = plan_memory(net, rel)
    assert memory == 8000 and edge_memory is None
    report = layer_report(InaScenario(workers=4, topology=topology(tmp_path, "8KB", "8KB", "8KB"),
                                           strategy="switchgnn", feature_dim=64, blocking="paper"))
    one = layer_report(InaScenario(workers=4, topology=topology(tmp_path, "1MB", "1MB", "1MB"),
                                        switch_memory=8000, strategy="switchgnn", feature_dim=64, blocking="paper"))
    assert report["switch_memory_bytes"] == one["switch_memory_bytes"] == 8000
    same = ("num_blocks", "traffic_bytes", "completion_time_s", "peak_aggregator_bytes", "unaggregated_messages")
    assert {k: report[k] for k in same} == {k: one[k] for k in same}


def layer_report(scenario):
    return scenario.run().summary()


def test_the_layer_takes_memory_from_the_topology_by_default(tmp_path):
    path = topology(tmp_path)
    run = InaScenario(workers=4, topology=path, strategy="switchgnn", feature_dim=64, blocking="paper").run()
    report, result = run.summary(), run.sim
    assert report["switch_memory_bytes"] == [2000, 64000, DEFAULT_MEMORY]
    assert report["unaggregated_messages"] == 0 and (result.peak_aggregator_bytes <= [2000, 64000, DEFAULT_MEMORY]).all()
    forced = layer_report(InaScenario(workers=4, topology=path, switch_memory=64000, strategy="switchgnn",
                                           feature_dim=64, blocking="paper"))
    assert forced["switch_memory_bytes"] == 64000 and forced["num_blocks"] < report["num_blocks"]
    star = layer_report(InaScenario(workers=4, strategy="straw"))
    assert star["switch_memory_bytes"] == DEFAULT_MEMORY  # a builder's star: 100MB as before


def test_switch_memory_option_and_bad_input(tmp_path, rel):
    assert parse_switch_memory("topology") == "topology" and parse_switch_memory("unlimited") is None
    assert parse_switch_memory("1MB") == 1_000_000
    with pytest.raises(NetweaveError, match="'biggest' is not a size.* or 'unlimited', or 'topology'"):
        parse_switch_memory("biggest")
    with pytest.raises(NetweaveError, match="switch_memory: 'biggest' is not a size"):
        InaScenario(workers=4, switch_memory="biggest").run()
    net = sim_network(load_topology_spec(topology(tmp_path)))
    plan = ina_plan(rel, "straw", F, np.array([1000, 2000]), order="random")
    with pytest.raises(NetweaveError, match="memory for 2 switches but the network has 3"):
        simulate(plan, net)
    with pytest.raises(NetweaveError, match="smallest switch on its path has 1"):
        memory, edge_memory = plan_memory(net, rel, "topology")
        ina_plan(rel, "switchgnn", F, memory, order="random", edge_memory=np.where(edge_memory == 2000, 200, edge_memory), blocking="paper")
