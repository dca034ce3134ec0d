from dataclasses import replace

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset, rmat
from netweave.partition import random_partition
from netweave.plan.cost import DGCL_MODEL
from netweave.plan import (GraphCommPlan, backward_substage_tables, backward_tables, forward_tables,
                           load_plan, p2p_plan, plan_problems, spst_plan, validate_plan, worker_links)
from netweave.topology import dgx1

from plan_fixtures import relation

FB = 256


@pytest.fixture(scope="module")
def setup():
    g = rmat(800, 6000, seed=4)
    links = worker_links(dgx1())
    comm = relation(g, random_partition(g, 8, seed=1).parts)
    return comm, links, spst_plan(comm, links, FB, seed=2, model=DGCL_MODEL)


def drop(plan, mask):
    keep = ~mask
    return replace(plan, hop_stage=plan.hop_stage[keep], hop_src=plan.hop_src[keep],
                   hop_dst=plan.hop_dst[keep], hop_vertex=plan.hop_vertex[keep])


def test_valid_plans_pass(setup):
    comm, links, plan = setup
    assert plan.num_stages > 1  # relays happen on a DGX-1
    validate_plan(plan, comm, links)
    validate_plan(p2p_plan(comm, links, FB), comm, links)


def test_missing_destination(setup):
    comm, links, plan = setup
    leaf = np.flatnonzero(plan.hop_stage == plan.num_stages)[:1]  # a last-stage hop feeds nobody
    broken = drop(plan, np.isin(np.arange(plan.num_hops), leaf))
    with pytest.raises(NetweaveError, match="never receives vertex"):
        validate_plan(broken, comm, links)


def test_forwarding_before_receipt(setup):
    comm, links, plan = setup
    relay = np.flatnonzero(plan.hop_stage == 2)[0]
    early = plan.hop_stage.copy()
    early[relay] = 1
    problems = plan_problems(replace(plan, hop_stage=early), comm, links)
    assert any("forwards a vertex before receiving it" in p for p in problems)


def test_cycle_and_double_receipt(setup):
    comm, links, plan = setup
    i = 0
    u, owner, src = plan.hop_vertex[i], plan.parts[plan.hop_vertex[i]], plan.hop_dst[i]
    back = GraphCommPlan.from_hops(np.r_[plan.hop_stage, plan.num_stages + 1], np.r_[plan.hop_src, src],
                                   np.r_[plan.hop_dst, owner], np.r_[plan.hop_vertex, u], plan.parts, FB,
                                   plan.workers, "broken")
    with pytest.raises(NetweaveError, match="sent back to its owner"):
        validate_plan(back, comm, links)
    other = next(w for w in range(8) if w not in (owner, plan.hop_dst[i]))
    twice = GraphCommPlan.from_hops(np.r_[plan.hop_stage, 1, 1], np.r_[plan.hop_src, owner, owner],
                                    np.r_[plan.hop_dst, other, other], np.r_[plan.hop_vertex, u, u],
                                    plan.parts, FB, plan.workers, "broken")
    with pytest.raises(NetweaveError, match="receives the same vertex twice"):
        validate_plan(twice, comm, links)


def test_bad_ranks_and_missing_links(setup):
    comm, links, plan = setup
    bad = replace(plan, hop_dst=np.where(np.arange(plan.num_hops) == 0, 99, plan.hop_dst).astype(np.int32))
    assert "worker rank outside 0..7" in plan_problems(bad)[0]
    no_link = replace(links, exists=np.zeros_like(links.exists))
    assert any("does not exist" in p for p in plan_problems(plan, comm, no_link))


def test_save_load_roundtrip(tmp_path, setup):
    comm, links, plan = setup
    plan.save(tmp_path / "plan.npz")
    back = load_plan(tmp_path / "plan.npz")
    for key in ("hop_stage", "hop_src", "hop_dst", "hop_vertex", "parts"):
        assert np.array_equal(getattr(back, key), getattr(plan, key))
    assert back.workers == plan.workers and back.feature_bytes == FB and back.planner == "spst"
    np.savez(tmp_path / "bad.npz", hop_stage=np.zeros(2))
    with pytest.raises(NetweaveError, match="not a netweave plan"):
        load_plan(tmp_path / "bad.npz")


def test_forward_tables_cover_every_hop_once(setup):
    _, _, plan = setup
    tables = forward_tables(plan)
    sent = sum(t.send.size for t in tables)
    recv = sum(t.recv.size for t in tables)
    assert sent == recv == plan.num_hops
    index = {(t.worker, t.peer, t.stage): t for t in tables}
    for t in tables:  # what i sends to j is what j receives from i
        assert np.array_equal(t.send, index[(t.peer, t.worker, t.stage)].recv)


def test_backward_tables_are_the_exact_reverse(setup):
    _, _, plan = setup
    fwd = {(t.worker, t.peer, t.stage): t for t in forward_tables(plan)}
    bwd = backward_tables(plan)
    assert len(bwd) == len(fwd)
    for t in bwd:
        f = fwd[(t.worker, t.peer, plan.num_stages + 1 - t.stage)]
        assert np.array_equal(t.send, f.recv) and np.array_equal(t.recv, f.send)


def test_substages_give_one_sender_per_vertex(setup):
    _, _, plan = setup
    sub = backward_substage_tables(plan)
    seen = {}
    for t in sub:
        for u in t.recv.tolist():
            key = (t.worker, t.stage, t.substage, u)
            assert key not in seen, "two gradients for one vertex in one sub-stage"
            seen[key] = t.peer
    # together the sub-stages carry exactly the backward tables
    total = {}
    for t in sub:
        total.setdefault((t.worker, t.peer, t.stage), []).append(t.recv)
    for t in backward_tables(plan):
        got = np.sort(np.concatenate(total.get((t.worker, t.peer, t.stage), [np.zeros(0, np.int64)])))
        assert np.array_equal(got, t.recv)
    assert max(t.substage for t in sub) <= plan.num_workers - 2  # at most |D| - 1 sub-stages


def test_cora_p2p_needs_several_substages():
    g = load_dataset("cora")
    links = worker_links(dgx1())
    comm = relation(g, random_partition(g, 8, seed=0).parts)
    sub = backward_substage_tables(p2p_plan(comm, links, FB))
    assert max(t.substage for t in sub) >= 2  # vertices needed by several workers
