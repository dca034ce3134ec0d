"""graph_allgather's shared-memory transport: where it is taken, and that it leaves nothing in
/dev/shm on any exit path (normal end, a failed set-up, a peer that dies)."""

import datetime
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import netweave.runtime.shm_transport as shm  # noqa: E402
from netweave.graph import rmat  # noqa: E402
from netweave.partition import comm_relation, random_partition  # noqa: E402
from netweave.plan.cost import DGCL_MODEL  # §5.1: relayed, multi-stage plans
from netweave.plan import p2p_plan, spst_plan, worker_links  # noqa: E402
from netweave.runtime.graph_allgather import graph_allgather  # noqa: E402
from netweave.runtime.launcher import exit_rank, free_port  # noqa: E402
from netweave.runtime.rank_tables import rank_tables  # noqa: E402
from netweave.topology import star  # noqa: E402

D = 4
pytestmark = pytest.mark.skipif(shm.locality_key() is None, reason="no shared memory here (/dev/shm, x86-64)")


def make_case(world: int, planner: str):
    g = rmat(300, 1500, seed=world)
    links = worker_links(star(world))
    comm = comm_relation(g, random_partition(g, world, seed=world))
    plan = p2p_plan(comm, links, 4 * D) if planner == "p2p" else spst_plan(comm, links, 4 * D, seed=1, guard_p2p=False, model=DGCL_MODEL)
    return g, comm, plan


def ours(prefix: str) -> list[str]:
    return sorted(n for n in os.listdir(shm.SHM_DIR) if n.startswith(prefix))


def worker(rank, world, port, scenario, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))  # a failing rank cannot hang the test
    report = {"rank": rank}
    try:
        g, comm, plan = make_case(world, "spst" if world > 2 else "p2p")
        tables = rank_tables(plan, comm, rank)
        x_global = torch.from_numpy(np.random.default_rng(0).standard_normal((g.num_nodes, D)))
        own, ids = torch.from_numpy(comm.local(rank)), torch.from_numpy(comm.global_ids(rank))
        if scenario == "remote":
            if rank == 1:  # as if on another host: nobody may take shared memory
                shm.locality_key = lambda: ("another host",)
            out = graph_allgather(x_global[own], tables)
            report["exact"] = bool(torch.equal(out, x_global[ids]))
            report["group_state"] = repr(shm.shm_group(None))
            try:
                graph_allgather(x_global[own], tables, transport="shm")
            except RuntimeError as e:
                report["refused"] = str(e)
        elif scenario == "normal":
            out = graph_allgather(x_global[own], tables, transport="shm")
            state = shm.shm_group(None)
            report["prefix"] = state.prefix
            report["during"] = ours(state.prefix)  # set up and in use: already unlinked
            report["exact"] = bool(torch.equal(out, x_global[ids]))
        elif scenario == "setup_fails":
            state = shm.shm_group(None)
            report["prefix"] = state.prefix

            def fail(*a, **k):
                report["before_failure"] = ours(state.prefix)
                raise RuntimeError("injected")

            shm.dist.barrier = fail  # the barrier after which segments are unlinked
            try:
                graph_allgather(x_global[own], tables, transport="shm")
            except Exception as e:  # ours, or (a peer failed first and removed its segments) a missing one
                report["error"] = str(e)
            report["after_failure"] = [n for n in ours(state.prefix) if f"-r{rank}-" in n]  # its own ones
        elif scenario == "peer_dies":
            out = graph_allgather(x_global[own], tables, transport="shm")
            report["prefix"] = shm.shm_group(None).prefix
            report["exact"] = bool(torch.equal(out, x_global[ids]))
            if rank == 1:
                os._exit(0)  # no teardown of any kind, like a killed process
            try:
                graph_allgather(x_global[own], tables, transport="shm")
            except RuntimeError as e:
                report["error"] = str(e)
            with open(f"{out_dir}/rank{rank}.json", "w") as f:
                json.dump(report, f)
            exit_rank()  # the group cannot be torn down with a dead peer
        with open(f"{out_dir}/rank{rank}.json", "w") as f:
            json.dump(report, f)
    finally:
        if scenario != "peer_dies":
            dist.destroy_process_group()
    exit_rank()


def run(tmp_path, world, scenario) -> list[dict]:
    mp.start_processes(worker, args=(world, free_port(), scenario, str(tmp_path)), nprocs=world,
                       start_method="spawn", join=True)
    return [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rank*.json"))]


@pytest.mark.slow
def test_segments_are_unlinked_once_set_up(tmp_path):
    reports = run(tmp_path, 3, "normal")
    assert len(reports) == 3 and all(r["exact"] for r in reports)
    prefix = reports[0]["prefix"]
    assert prefix.startswith(shm.PREFIX) and len({r["prefix"] for r in reports}) == 1
    assert all(r["during"] == [] for r in reports)
    assert ours(prefix) == []


@pytest.mark.slow
def test_a_failed_set_up_removes_its_segments(tmp_path):
    reports = run(tmp_path, 2, "setup_fails")
    prefix = reports[0]["prefix"]
    assert len(reports) == 2 and all(r["error"] for r in reports) and any(r["error"] == "injected" for r in reports)
    assert all(len(r["before_failure"]) >= shm.SLOTS for r in reports if "before_failure" in r)
    assert all(r["after_failure"] == [] for r in reports)  # each rank removed its own before returning
    assert ours(prefix) == []


@pytest.mark.slow
def test_a_dead_peer_is_an_error_not_a_hang(tmp_path):
    reports = run(tmp_path, 2, "peer_dies")
    assert len(reports) == 1 and reports[0]["exact"]
    assert "is gone" in reports[0]["error"]
    assert ours(reports[0]["prefix"]) == []


@pytest.mark.slow
def test_ranks_on_other_hosts_use_the_process_group(tmp_path):
    reports = run(tmp_path, 2, "remote")
    assert all(r["exact"] and r["group_state"] == "None" for r in reports)
    assert all("not possible" in r["refused"] for r in reports)


def test_stages_that_read_rows_still_being_written_are_refused():
    stages = [[(1, np.array([0, 1]), np.array([2]))], [(1, np.array([2]), np.array([3]))]]
    assert shm._race_free(stages, 4)
    assert not shm._race_free(stages + [[(1, np.array([0]), np.array([2]))]], 4)  # row 2 sent in stage 1, written in 2
    assert not shm._race_free([[(1, np.array([0]), np.array([0]))]], 1)  # read and written in one stage
