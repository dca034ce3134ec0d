"""graph_allgather against a single-process computation, with 2–8 gloo ranks on loopback, through
gloo's point-to-point ops and through shared memory."""

import datetime

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from netweave.graph import rmat  # noqa: E402
from netweave.partition import comm_relation, random_partition  # noqa: E402
from netweave.plan.cost import DGCL_MODEL  # §5.1: relayed, multi-stage plans
from netweave.plan import p2p_plan, spst_plan, worker_links  # noqa: E402
from netweave.runtime.graph_allgather import CommCounter, graph_allgather  # noqa: E402
from netweave.runtime.launcher import exit_rank, free_port  # noqa: E402
from netweave.runtime.rank_tables import rank_tables  # noqa: E402
from netweave.topology import dgx1, star  # noqa: E402

D = 5


def make_case(num_ranks: int, planner: str, seed: int):
    g = rmat(300, 1500, seed=seed)
    if num_ranks == 8:
        links = worker_links(dgx1())
    else:
        links = worker_links(star(num_ranks))
    parts = random_partition(g, num_ranks, seed=seed)
    comm = comm_relation(g, parts)
    if planner == "p2p":
        plan = p2p_plan(comm, links, 4 * D)
    else:
        plan = spst_plan(comm, links, 4 * D, seed=seed, guard_p2p=False, model=DGCL_MODEL)
    return g, comm, plan


TRANSPORTS = ("group", "shm")  # gloo's point-to-point ops; shared memory between these local ranks


def worker(rank, world, port, planner, seed, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))  # a failing rank cannot hang the test
    try:
        g, comm, plan = make_case(world, planner, seed)
        rng = np.random.default_rng(seed)
        x_global = torch.from_numpy(rng.standard_normal((g.num_nodes, D)).astype(np.float64))
        weight = torch.from_numpy(rng.standard_normal((world, g.num_nodes, D)))  # per-rank loss weights
        tables = rank_tables(plan, comm, rank)
        own = torch.from_numpy(comm.local(rank))
        ids = torch.from_numpy(comm.global_ids(rank))
        for transport in TRANSPORTS:
            x = x_global[own].clone().requires_grad_(True)
            counter = CommCounter()
            out = graph_allgather(x, tables, counter, transport=transport)
            (out * weight[rank][ids]).sum().backward()
            np.savez(f"{out_dir}/{transport}-rank{rank}.npz", out=out.detach().numpy(), ids=ids.numpy(),
                     grad=x.grad.numpy(), own=own.numpy(), bytes=counter.bytes_sent)
    finally:
        dist.destroy_process_group()
    exit_rank()


@pytest.mark.slow
@pytest.mark.parametrize("world, planner", [(2, "p2p"), (3, "spst"), (4, "spst"), (8, "spst")])
def test_forward_and_gradients_match_single_process(tmp_path, world, planner):
    seed = world
    port = free_port()
    mp.start_processes(worker, args=(world, port, planner, seed, str(tmp_path)), nprocs=world,
                       start_method="spawn", join=True)
    g, comm, plan = make_case(world, planner, seed)
    if planner == "spst" and world == 8:
        assert plan.num_stages > 1  # relayed (multi-hop) plan on a DGX-1
    rng = np.random.default_rng(seed)
    x_global = rng.standard_normal((g.num_nodes, D))
    weight = rng.standard_normal((world, g.num_nodes, D))
    expected_grad = np.zeros_like(x_global)
    for r in range(world):
        ids = np.load(tmp_path / f"group-rank{r}.npz")["ids"]
        expected_grad[ids] += weight[r][ids]
    for transport in TRANSPORTS:
        total_bytes = 0
        for r in range(world):
            z = np.load(tmp_path / f"{transport}-rank{r}.npz")
            np.testing.assert_allclose(z["out"], x_global[z["ids"]], rtol=0, atol=0)
            np.testing.assert_allclose(z["grad"], expected_grad[z["own"]], rtol=1e-12, atol=1e-12)
            total_bytes += int(z["bytes"])
        assert total_bytes == 2 * plan.num_hops * D * 8  # forward + backward, float64
