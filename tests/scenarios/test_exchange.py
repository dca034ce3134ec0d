"""ExchangeScenario wires dataset → partition → plan → cost once, with the shared defaults."""

import dataclasses

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset
from netweave.partition import comm_relation, partition_by_method
from netweave.plan import p2p_plan, plan_cost, spst_plan, worker_links
from netweave.plan.cost import ALPHA_BETA, DGCL_MODEL, alpha_beta
from netweave.plan.transport import GLOO, NCCL
from netweave.scenarios import FEATURE_DIM, ExchangeScenario, PlanCheck, feature_bytes
from netweave.topology import load_topology_spec


def test_scenarios_are_frozen_and_keyword_only():
    with pytest.raises(TypeError):
        ExchangeScenario("cora")  # noqa
    s = ExchangeScenario(dataset="cora")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.seed = 3


def test_the_result_is_the_layers_called_by_hand(tmp_path):
    r = ExchangeScenario(dataset="cora", topology="dgx1", seed=1).run()
    graph = load_dataset("cora")
    topo = load_topology_spec("dgx1")
    links = worker_links(topo)
    comm = comm_relation(graph, partition_by_method(graph, "metis", None, topo, 1))
    fb = feature_bytes(graph.feature_dim)  # the dataset's width by default
    model = alpha_beta(NCCL)  # a topology of GPUs: NCCL's constants
    plan = spst_plan(comm, links, fb, 1, model=model)
    assert np.array_equal(r.plan.hop_vertex, plan.hop_vertex) and r.plan.feature_bytes == 4 * 1433
    s = r.summary()
    assert s["transport"] == "nccl" and s["transport_constants"]["stage_overhead_s"] == NCCL.stage_overhead_s
    assert "tuning.cc" in s["transport_source"]
    assert s["predicted_time_s"] == plan_cost(plan, links, model).total_s
    assert s["dgcl_predicted_time_s"] == plan_cost(plan, links, DGCL_MODEL).total_s
    assert s["p2p_predicted_time_s"] == plan_cost(p2p_plan(comm, links, fb), links, model).total_s
    assert sum(s["bytes_per_link_class"].values()) == s["total_bytes"]
    r.plan.save(tmp_path / "p.npz")
    assert PlanCheck(plan_file=str(tmp_path / "p.npz"), dataset="cora", topology="dgx1").run().summary()["valid"]


def test_feature_width_defaults_and_errors():
    r = ExchangeScenario(dataset="er:n=60,m=200", topology="star:n=4").run()  # no features: the shared default
    assert r.plan.feature_bytes == feature_bytes(FEATURE_DIM)
    with pytest.raises(NetweaveError, match="--feature-dim 0"):
        ExchangeScenario(dataset="cora", topology="star:n=4", feature_dim=0).run()
    with pytest.raises(NetweaveError, match="unknown planner"):
        ExchangeScenario(dataset="cora", topology="star:n=4", planner="ring").run()


def test_prepared_inputs_are_shared_and_must_match():
    """One prepare() serves both cost models (compare's exchange section); inputs of another
    dataset are refused rather than silently planned."""
    a = ExchangeScenario(dataset="cora", topology="dgx1:gpus=4", cost_model="alpha-beta")
    b = ExchangeScenario(dataset="cora", topology="dgx1:gpus=4", cost_model="dgcl")
    inputs = a.prepare()
    shared, alone = b.run(inputs), b.run()
    assert shared.cost.total_s == alone.cost.total_s and shared.plan.num_hops == alone.plan.num_hops
    assert shared.p2p.num_stages == 1 and shared.p2p_cost.total_s == alone.p2p_cost.total_s
    with pytest.raises(ValueError, match="inputs prepared for"):
        ExchangeScenario(dataset="citeseer", topology="dgx1:gpus=4").run(inputs)


def test_the_transport_follows_the_topology_or_the_field():
    """Hosts get gloo's measured constants, GPUs NCCL's; the field overrides; §5.1 ignores both."""
    hosts = ExchangeScenario(dataset="cora", topology="star:n=4").run()
    assert hosts.transport is GLOO and hosts.cost.total_s == plan_cost(hosts.plan, hosts.links, ALPHA_BETA).total_s
    forced = ExchangeScenario(dataset="cora", topology="star:n=4", transport="nccl").run()
    assert forced.summary()["transport"] == "nccl" and forced.cost.total_s < hosts.cost.total_s / 10
    gpus = ExchangeScenario(dataset="cora", topology="dgx1", cost_model="dgcl", transport="gloo").run()
    assert gpus.cost.total_s == gpus.time_by_model_s["dgcl"]  # §5.1 has no transport constants
    with pytest.raises(NetweaveError, match="unknown transport 'tcp'"):
        ExchangeScenario(dataset="cora", topology="dgx1", transport="tcp").run()


def test_spst_beats_p2p_on_a_dgx1_under_the_default_model_by_moving_bytes_off_qpi():
    """The issue's acceptance line: ``plan cora --topology dgx1`` under the default model. SPST
    relays over NVLink, so fewer bytes take the PCIe-QPI-PCIe links, and it is predicted faster."""
    s = ExchangeScenario(dataset="cora", topology="dgx1").run().summary()
    assert s["cost_model"] == "alpha-beta" and s["transport"] == "nccl"
    assert s["num_stages"] > 1 and s["speedup_vs_p2p"] > 1.2
    assert s["bytes_per_link_class"]["PCIe-QPI-PCIe"] < s["p2p_bytes_per_link_class"]["PCIe-QPI-PCIe"] / 2
    assert s["bytes_per_link_class"]["NVLink"] > s["p2p_bytes_per_link_class"]["NVLink"]
