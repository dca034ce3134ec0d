"""A saved plan is bounded by its partition before anything is sized by it (issue 29): a valid plan
listing 100,000 workers made ``plan --validate`` request 74.5 GiB, and one with stage numbers up to
2⁴⁰ was reported valid, then ``train --plan-file`` requested 32 TiB."""

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset
from netweave.partition import comm_relation, metis_partition
from netweave.partition.partition import Partition
from netweave.plan.cost import DGCL_MODEL
from netweave.plan import load_plan, spst_plan, validate_plan, worker_links
from netweave.plan.plan import compact_stages
from netweave.topology import load_topology_spec


@pytest.fixture(scope="module")
def dgx_plan():
    g = load_dataset("cora")
    comm = comm_relation(g, metis_partition(g, 8, seed=0))
    links = worker_links(load_topology_spec("dgx1"))
    plan = spst_plan(comm, links, feature_bytes=64, model=DGCL_MODEL)  # §5.1 relays even 64 B rows
    assert plan.num_stages >= 2  # relays through NVLink: a multi-stage plan
    return plan, comm, links


def test_stage_numbers_are_compacted_in_order(dgx_plan, tmp_path):
    plan, comm, links = dgx_plan
    plan.save(tmp_path / "p.npz")
    z = dict(np.load(tmp_path / "p.npz"))
    z["hop_stage"] = z["hop_stage"].astype(np.int64) * 2**39  # stages 2^39, 2^40, ...: same order
    np.savez(tmp_path / "big.npz", **z)
    loaded = load_plan(tmp_path / "big.npz")
    assert loaded.hop_stage.dtype == np.int16 and np.array_equal(loaded.hop_stage, plan.hop_stage)
    validate_plan(loaded, comm, links)


def test_compaction_keeps_what_the_validator_must_name():
    assert compact_stages(np.array([5, 9, 9, 2**40]), "x").tolist() == [1, 2, 2, 3]
    assert compact_stages(np.array([0, 3]), "x").tolist() == [0, 3]  # stage 0 stays: "stages must start at 1"
    with pytest.raises(NetweaveError, match="at most 32,767"):
        compact_stages(np.arange(1, 40_000), "x")


def test_more_workers_than_vertices_is_one_line(tmp_path):
    np.savez(tmp_path / "w.npz", hop_stage=np.ones(2, np.int16), hop_src=np.array([0, 1], np.int32),
             hop_dst=np.array([1, 0], np.int32), hop_vertex=np.array([0, 4]), parts=np.array([0] * 4 + [1] * 4, np.int32),
             feature_bytes=np.int64(512), workers=np.array([f"H{i}" for i in range(100_000)]))
    with pytest.raises(NetweaveError, match=r"100,000 workers for a partition of 8 vertices"):
        load_plan(tmp_path / "w.npz")


def test_a_relation_of_more_parts_than_memory_allows_is_refused():
    g = load_dataset("reddit-like:scale=0.01")
    parts = np.arange(g.num_nodes, dtype=np.int64) % 2
    with pytest.raises(NetweaveError, match="at most one part per vertex"):
        comm_relation(g, Partition(parts, g.num_nodes + 1, "range"))
    with pytest.raises(NetweaveError, match=r"communication relation of .* parts: needs about .* GB"):
        from unittest import mock

        with mock.patch("netweave.graph.memory.available_bytes", return_value=10**6):
            comm_relation(g, Partition(parts, 1000, "range"))
