"""The testbed's placement: the control plane's choice turned into aggregator groups and pinned
paths, the tree topology of PAHInA's testbed, and the models and data it trains (no root needed)."""

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.route.jobs import Job, Task
from netweave.route.pahina import TrainingModel
from netweave.route.plan import route_precision
from netweave.testbed.agg.plan import (PSEUDO, SCHEMES, TREE_SCHEMES, aggregation_tree, multicast_gbps, place_workers,
                                   plan_training, scaled)
from netweave.topology import load_topology_spec

TREE = "tree:leaves=2,hosts=4,gbps=40,host_gbps=10-25,seed=1"
MIX = ["fp8", "fp8", "fp16", "fp16", "fp16", "fp16"]


def test_the_tree_has_the_ps_on_the_root_and_seeded_host_links_in_range():
    t = load_topology_spec(TREE)
    assert [n.name for n in t.nodes if n.kind != "host"] == ["R0", "L0", "L1"]
    host_links = [l for l in t.links if l.a.startswith("H")]
    assert len(host_links) == 9 and all(10 <= l.gbps <= 25 for l in host_links)
    assert {(l.a, l.b) for l in t.links if not l.a.startswith("H")} == {("L0", "R0"), ("L1", "R0")}
    assert ("H0", "R0") in {(l.a, l.b) for l in t.links}
    assert [l.gbps for l in load_topology_spec(TREE).links] == [l.gbps for l in t.links]  # seeded
    assert [l.gbps for l in load_topology_spec(TREE.replace("seed=1", "seed=2")).links] != [l.gbps for l in t.links]
    with pytest.raises(NetweaveError, match="at least one leaf"):
        load_topology_spec("tree:leaves=0,hosts=2")


def test_workers_are_spread_over_the_leaves():
    ps, workers = place_workers(load_topology_spec(TREE), 4)
    assert ps == "H0" and workers == ["H1", "H5", "H2", "H6"]
    with pytest.raises(NetweaveError, match="need 10"):
        place_workers(load_topology_spec(TREE), 9)


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s not in ("ring", *TREE_SCHEMES)])
def test_groups_match_the_route_command_and_cover_every_worker_once(scheme):
    topo = load_topology_spec(TREE)
    plan = plan_training(topo, MIX, scheme, scale=0.05)
    task = Task("T0", plan.ps, tuple(plan.hosts.values()), tuple(MIX))
    cli = route_precision(scaled(topo, 0.05), [Job("J0", (task,))], scheme, switch_gbps=5.0).tasks["T0"]
    members = sorted(w for g in plan.groups.values() for w in g.workers)
    assert members == sorted(plan.hosts)
    for g in plan.groups.values():
        for w, wire in g.workers.items():
            assert cli.aggregators[plan.hosts[w]] == (g.switch or plan.ps)
            path = plan.routes["T0"]["paths"][plan.hosts[w]]
            assert path == cli.paths[plan.hosts[w]] and path[0] == plan.hosts[w] and path[-1] == plan.ps
            assert g.switch is None or g.switch in path
            if scheme in ("atp", "grid") and g.switch:  # mixed: one precision per switch, the widest
                assert wire == max(g.workers.values(), key=["fp8", "fp16", "fp32"].index)
            else:
                assert wire == plan.precisions[w]
    assert (scheme == "ps") == (set(plan.groups) == {0})


def test_the_prediction_is_the_route_models_on_the_scaled_cluster():
    topo = load_topology_spec(TREE)
    model = TrainingModel(model_mb=0.5, compute_s=0.01, ps_gbps=10, global_batch=64, iterations=22)
    plan = plan_training(topo, MIX, "pahina", scale=0.05)
    task = Task("T0", plan.ps, tuple(plan.hosts.values()), tuple(MIX))
    cli = route_precision(scaled(topo, 0.05), [Job("J0", (task,))], "pahina", switch_gbps=5.0, model=model)
    assert plan.predict(model) == cli.metrics
    assert plan_training(topo, MIX, "ring").predict(model) is None
    # scaling every rate by 1/2 doubles the upload time
    half = plan_training(topo, MIX, "pahina", scale=0.025).predict(model)
    assert half.upload_time_s == pytest.approx(2 * plan.predict(model).upload_time_s)


@pytest.mark.parametrize("name,channels,parameters", [("lenet5", 1, 61_706), ("resnet18", 3, 11_173_962),
                                                       ("resnet50", 3, 23_520_842)])
def test_models_have_their_published_sizes(name, channels, parameters):
    """LeNet-5's 61,706 and the CIFAR ResNets' 11,173,962 and 23,520,842 parameters (10 classes),
    as commonly quoted for these architectures (GroupNorm has BatchNorm's affine parameters)."""
    torch = pytest.importorskip("torch")
    from netweave.testbed.agg.models import build

    model = build(name, channels)
    assert sum(p.numel() for p in model.parameters()) == parameters
    assert model(torch.zeros(2, channels, 32, 32)).shape == (2, 10)


def test_synthetic_cifar_is_deterministic_and_learnable():
    from netweave.testbed.agg.data import cifar_synthetic, load

    x, y, xt, yt = cifar_synthetic(0, train=2000, test=500)
    assert x.shape == (2000, 3, 32, 32) and x.dtype == np.float32 and set(np.unique(y)) == set(range(10))
    assert np.array_equal(cifar_synthetic(0, train=2000, test=500)[0], x)
    centroids = np.stack([x[y == c].mean(0) for c in range(10)]).reshape(10, -1)
    guess = np.argmin(((xt.reshape(len(xt), 1, -1) - centroids[None]) ** 2).sum(-1), axis=1)
    assert (guess == yt).mean() > 0.9  # nearest centroid: a model has something to learn
    with pytest.raises(NetweaveError, match="--data"):
        load("cifar10")


def test_flows_merge_where_they_meet_and_the_tree_has_one_member_per_branch():
    """Two leaves' flows meet at the root: each leaf sums its workers, the root sums the leaves; a
    switch that only one flow passes, or whose flows leave on different routes, does not aggregate."""
    paths = {"a": ["a", "L0", "R", "P"], "b": ["b", "L0", "R", "P"], "c": ["c", "L1", "R", "P"],
             "d": ["d", "L1", "R", "P"], "e": ["e", "L2", "X", "P"]}
    tree = aggregation_tree(paths, "P", {"L0", "L1", "L2", "R", "X"})
    assert tree == {"L0": ({"a", "b"}, "R"), "L1": ({"c", "d"}, "R"), "R": ({"L0", "L1"}, "P")}
    split = {"a": ["a", "S", "T", "P"], "b": ["b", "S", "U", "P"]}  # two pipelines, two routes on
    assert aggregation_tree(split, "P", {"S", "T", "U"}) == {}
    single = {"a": ["a", "L0", "R", "P"], "c": ["c", "L1", "R", "P"]}  # each leaf passes one flow
    assert aggregation_tree(single, "P", {"L0", "L1", "R"}) == {"R": ({"a", "c"}, "P")}


@pytest.mark.parametrize("scheme", TREE_SCHEMES)
def test_aro_and_ecmp_aggregate_in_a_multi_level_tree_of_one_precision(scheme):
    plan = plan_training(load_topology_spec("tree:leaves=2,hosts=3"), ["fp16"] * 6, scheme, scale=0.05)
    by_switch = {g.switch: g for g in plan.groups.values()}
    assert set(by_switch) == {"L0", "L1", "R0"} and by_switch["R0"].parent is None
    assert by_switch["L0"].parent == by_switch["L1"].parent == by_switch["R0"].agg_id
    assert set(by_switch["R0"].workers) == {PSEUDO + by_switch["L0"].agg_id, PSEUDO + by_switch["L1"].agg_id}
    assert sorted(w for g in plan.groups.values() for w in g.workers if w < PSEUDO) == sorted(plan.hosts)
    assert plan.member(PSEUDO + by_switch["L0"].agg_id) == "L0" and all(r > 0 for r in plan.rate_gbps.values())
    with pytest.raises(NetweaveError, match="does not model mixed"):
        plan_training(load_topology_spec(TREE), MIX, scheme)


def test_senders_are_paced_at_their_planned_rate_and_the_multicast_at_the_slowest_link():
    topo = load_topology_spec(TREE)
    plan = plan_training(topo, MIX, "pahina", scale=0.05)
    fp8 = [r for w, r in plan.rate_gbps.items() if plan.precisions[w] == "fp8"]
    fp16 = [r for w, r in plan.rate_gbps.items() if plan.precisions[w] == "fp16"]
    assert fp16[0] == pytest.approx(2 * fp8[0])  # eq. 2: rates in proportion to the payload
    slowest = min(l.gbps for l in topo.links if l.a in plan.hosts.values() or l.a == plan.ps)
    assert multicast_gbps(topo, plan.ps, plan.hosts.values(), 0.05) == pytest.approx(0.05 * slowest)
