"""Transports: each one's α–β constants reproduce the figures they were taken from.

* gloo: the graph allgathers measured over shaped links (see test_cost_models.py, which checks the
  fit against ``benchmarks/results``); here, that the hosts' topology selects exactly that model.
* nccl: the constants are NCCL 2.7.5's own latency figures (quoted below from the cited file), and
  with DGCL Table 1's link speeds the model recomputes DGCL's measured Table 1 (one large transfer per
  link type) and Table 3 (the bandwidth one GPU attains while k GPUs share the QPI link).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from netweave.plan import GraphCommPlan, plan_cost, worker_links
from netweave.plan.cost import ALPHA_BETA, DGCL_MODEL, alpha_beta, cost_model
from netweave.plan.transport import GLOO, NCCL, NCCL_TUNING_URL, transport, transport_for
from netweave.errors import NetweaveError
from netweave.topology import load_topology_spec

HETERO4 = Path(__file__).resolve().parents[2] / "benchmarks" / "topologies" / "hetero4.yaml"

# NVIDIA/nccl src/graph/tuning.cc @ 01afd20 (NCCL 2.7.5), "Latencies in us":
#   baseLat[Ring] = { LL 3.6, LL128 10.0, Simple 8.4 }; hwLat[NVLINK][Ring] = { .47, 1.9, 3.4 }
NCCL_BASE_LAT_RING_SIMPLE_US = 8.4
NCCL_HW_LAT_NVLINK_RING_SIMPLE_US = 3.4

# dgcl.txt §3, Table 1 (GB/s, measured) and Table 3 (attainable bandwidth of a GPU when 1, 2, 3 GPUs use the QPI link)
DGCL_TABLE1_GBS = {"NV2": 48.35, "NV1": 24.22, "PCIe": 11.13, "QPI": 9.56}
DGCL_TABLE3_GBS = {1: 9.50, 2: 5.12, 3: 3.34}


def one_stage(links, pairs: list[tuple[str, str]], nbytes: int) -> GraphCommPlan:
    """A one-stage plan in which each (sender, receiver) pair moves one embedding of ``nbytes``."""
    rank = {w: i for i, w in enumerate(links.workers)}
    src = [rank[a] for a, _ in pairs]
    return GraphCommPlan.from_hops(np.ones(len(pairs)), src, [rank[b] for _, b in pairs], src,  # vertex i on worker i
                                   np.arange(links.num_workers), nbytes, links.workers, "test")


def test_the_nccl_constants_are_the_cited_figures():
    assert NCCL.stage_overhead_s == pytest.approx(NCCL_BASE_LAT_RING_SIMPLE_US * 1e-6, rel=1e-12)
    assert NCCL.message_latency_s == pytest.approx(NCCL_HW_LAT_NVLINK_RING_SIMPLE_US * 1e-6, rel=1e-12)
    assert NCCL.message_overhead_s == 0 and NCCL.bandwidth_efficiency == 1.0
    assert NCCL_TUNING_URL in NCCL.source and "01afd20a77b5804e0ecf1042509dd9d20ebf9e93" in NCCL_TUNING_URL


def test_a_small_message_costs_ncclS_launch_and_step_latency():
    """One 8-byte message over NVLink: NCCL's model gives baseLat + one hwLat step = 11.8 µs; the α–β
    model adds only the link's own wire latency (0.5 µs on the dgx1 builder's NVLinks)."""
    links = worker_links(load_topology_spec("dgx1"))
    t = plan_cost(one_stage(links, [("G0", "G3")], 8), links, alpha_beta(NCCL)).total_s
    expected = (NCCL_BASE_LAT_RING_SIMPLE_US + NCCL_HW_LAT_NVLINK_RING_SIMPLE_US) * 1e-6
    assert t == pytest.approx(expected + 0.5e-6 + 8 / 48.35e9, rel=1e-9)


@pytest.mark.parametrize("kind, topology, pair", [("NV2", "dgx1", ("G0", "G3")), ("NV1", "dgx1", ("G0", "G1")),
                                                  ("PCIe", "pcie8", ("G0", "G1")), ("QPI", "dgx1", ("G0", "G5"))])
def test_one_large_transfer_attains_dgcl_table_1(kind, topology, pair):
    """256 MB over one link type: the NCCL model's achieved speed is Table 1's within 1 %."""
    links = worker_links(load_topology_spec(topology))
    nbytes = 256 * 2 ** 20
    t = plan_cost(one_stage(links, [pair], nbytes), links, alpha_beta(NCCL)).total_s
    assert nbytes / t / 1e9 == pytest.approx(DGCL_TABLE1_GBS[kind], rel=0.01)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_gpus_sharing_the_qpi_link_attain_dgcl_table_3(k):
    """k GPUs of one socket each send 256 MB to a GPU of the other socket without an NVLink between
    them: all cross QPI in the same stage. The model's per-GPU bandwidth (bytes over the stage's
    time) is DGCL Table 3's measured one within 10 % (the measurement: 9.50, 5.12, 3.34 GB/s)."""
    links = worker_links(load_topology_spec("dgx1"))
    pairs = [("G0", "G5"), ("G2", "G7"), ("G3", "G6")][:k]  # no NVLink in any pair: PCIe-QPI-PCIe
    assert all(links.link_class(links.workers.index(a) * 8 + links.workers.index(b)) == "PCIe-QPI-PCIe"
               for a, b in pairs)
    nbytes = 256 * 2 ** 20
    t = plan_cost(one_stage(links, pairs, nbytes), links, alpha_beta(NCCL)).total_s
    assert nbytes / t / 1e9 == pytest.approx(DGCL_TABLE3_GBS[k], rel=0.10)


def test_hosts_get_the_measured_gloo_model_and_gpus_the_cited_nccl_one():
    assert transport_for(load_topology_spec(str(HETERO4))) is GLOO
    assert cost_model("alpha-beta", GLOO) == ALPHA_BETA  # what test_cost_models checks against the measurement
    assert transport_for(load_topology_spec("dgx1")) is NCCL and transport_for(load_topology_spec("pcie8")) is NCCL
    assert transport_for(load_topology_spec("dgx1"), "gloo") is GLOO
    assert cost_model("dgcl", NCCL) is DGCL_MODEL
    with pytest.raises(NetweaveError, match="unknown transport 'rdma'; choose one of gloo, nccl"):
        transport("rdma")


def test_link_classes_name_the_physical_links_a_logical_link_crosses():
    links = worker_links(load_topology_spec("dgx1"))
    m = links.num_workers
    assert links.link_class(0 * m + 3) == "NVLink" and links.link_class(0 * m + 5) == "PCIe-QPI-PCIe"
    assert worker_links(load_topology_spec("star:n=3")).link_class(1) == "network"
    per_stage = np.zeros((2, m * m))
    per_stage[0, 3], per_stage[1, 5], per_stage[1, 3] = 10, 7, 1
    assert links.bytes_by_class(per_stage) == {"NVLink": 11, "PCIe-QPI-PCIe": 7}


def test_cli_plan_states_the_transport_and_spst_wins_on_a_dgx1(capsys):
    from netweave.cli import main
    from netweave.cli.options import TransportName
    from netweave.plan.transport import TRANSPORTS

    assert sorted(t.value for t in TransportName) == sorted(TRANSPORTS)
    with pytest.raises(SystemExit):
        main(["plan", "cora", "--topology", "dgx1", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["transport"] == "nccl" and r["transport_constants"] == NCCL.constants() and r["transport_source"] == NCCL.source
    assert r["predicted_time_s"] < r["p2p_predicted_time_s"] and r["speedup_vs_p2p"] > 1
    with pytest.raises(SystemExit):
        main(["plan", "cora", "--topology", "dgx1", "--transport", "gloo", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["transport"] == "gloo" and r["transport_constants"]["stage_overhead_s"] == GLOO.stage_overhead_s
