"""graph_allgather's pooled buffers, pairwise-round schedule and shared-memory transport, with 2-4
gloo ranks on loopback.

Every check is exact against the single-process answer: outputs that are still alive when the same
tables and width run again keep their values, gradients through two exchanges of one width add up,
a dropped output's buffer is reused, and ``schedule="rounds"`` gives what ``"batch"`` gives.
"""

import datetime
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from netweave.graph import rmat  # noqa: E402
from netweave.partition import comm_relation, random_partition  # noqa: E402
from netweave.plan.cost import DGCL_MODEL  # §5.1: relayed, multi-stage plans
from netweave.plan import p2p_plan, spst_plan, worker_links  # noqa: E402
from netweave.runtime.graph_allgather import CommCounter, graph_allgather, release_buffers  # noqa: E402
from netweave.runtime.launcher import exit_rank, free_port  # noqa: E402
from netweave.runtime.rank_tables import rank_tables, tables_on  # noqa: E402
from netweave.topology import star  # noqa: E402

D = 6


def make_case(world: int, planner: str, seed: int):
    g = rmat(400, 2500, seed=seed)
    links = worker_links(star(world))
    comm = comm_relation(g, random_partition(g, world, seed=seed))
    if planner == "p2p":
        return g, comm, p2p_plan(comm, links, 4 * D)
    return g, comm, spst_plan(comm, links, 4 * D, seed=seed, guard_p2p=False, model=DGCL_MODEL)


def check(rank, world, planner, seed, schedule, moved, transport):
    g, comm, plan = make_case(world, planner, seed)
    tables = rank_tables(plan, comm, rank)
    if moved:
        tables = tables_on(tables, "cpu")
    rng = np.random.default_rng(seed)
    xs = [torch.from_numpy(rng.standard_normal((g.num_nodes, D))) for _ in range(3)]
    weights = [torch.from_numpy(rng.standard_normal((world, g.num_nodes, D))) for _ in range(2)]
    own, ids = torch.from_numpy(comm.local(rank)), torch.from_numpy(comm.global_ids(rank))

    def run(x, **kw):
        return graph_allgather(x, tables, schedule=schedule, transport=transport, **kw)

    # Two exchanges of one width, both outputs alive (as two layers' are until the backward).
    x1, x2 = (xs[i][own].clone().requires_grad_(True) for i in (0, 1))
    counter = CommCounter()
    out1 = graph_allgather(x1, tables, counter, schedule=schedule, transport=transport)
    out2 = run(x2)
    assert torch.equal(out1, xs[0][ids]) and torch.equal(out2, xs[1][ids])
    assert out1.data_ptr() != out2.data_ptr()
    ((out1 * weights[0][rank][ids]).sum() + (out2 * weights[1][rank][ids]).sum()).backward()
    for x, w in ((x1, weights[0]), (x2, weights[1])):
        expected = torch.zeros(g.num_nodes, D, dtype=torch.float64)
        for r in range(world):
            r_ids = torch.from_numpy(comm.global_ids(r))
            expected[r_ids] += w[r][r_ids]
        torch.testing.assert_close(x.grad, expected[own], rtol=1e-12, atol=1e-12)
    sent = sum(len(s) for st in tables.forward + tables.backward for _, s, _ in st)
    assert counter.bytes_sent == sent * D * 8  # forward and backward, float64

    # An exchange whose input is a view of a live output's buffer must not overwrite that buffer.
    chained = run(run(xs[2][own].clone())[: tables.num_local])
    assert torch.equal(chained, xs[2][ids])

    # A dropped output's buffer is handed out again; a live one's is not.
    del out1, out2, x1, x2, chained
    first = run(xs[0][own].clone())
    ptr = first.data_ptr()
    del first
    again = run(xs[1][own].clone())
    assert again.data_ptr() == ptr and torch.equal(again, xs[1][ids])
    held = [run(xs[i][own].clone()) for i in range(3)]  # three layers' outputs until the backward
    ptrs = {h.data_ptr() for h in held} | {again.data_ptr()}
    del held
    held = [run(xs[i][own].clone()) for i in range(3)]
    assert {h.data_ptr() for h in held} | {again.data_ptr()} == ptrs  # the next step reuses all four
    assert all(torch.equal(h, xs[i][ids]) for i, h in enumerate(held))
    del held
    alive = [run(xs[i % 3][own].clone()) for i in range(6)]  # more than the pool keeps
    assert len({a.data_ptr() for a in alive + [again]}) == 7
    for i, a in enumerate(alive):
        assert torch.equal(a, xs[i % 3][ids])
    fresh = graph_allgather(xs[2][own].clone(), tables, schedule=schedule, reuse=False)
    assert torch.equal(fresh, xs[2][ids])
    release_buffers(tables)
    assert torch.equal(run(xs[0][own].clone()), xs[0][ids])


def worker(rank, world, port, planner, seed, schedule, transport):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))  # a failing rank cannot hang the test
    try:
        check(rank, world, planner, seed, schedule, moved=seed % 2 == 0, transport=transport)
    finally:
        dist.destroy_process_group()
    exit_rank()


@pytest.mark.slow
@pytest.mark.parametrize("world, planner, schedule, transport",
                         [(2, "p2p", "batch", "group"), (3, "spst", "rounds", "group"), (4, "spst", "batch", "group"),
                          (4, "p2p", "rounds", "group"), (2, "p2p", "batch", "shm"), (3, "spst", "batch", "shm"),
                          (4, "spst", "batch", "shm")])
def test_pooled_buffers_and_rounds_are_exact(world, planner, schedule, transport):
    """Through shared memory, more live outputs than its 4 shared buffers send the call through
    the process group on every rank (the pool of 6 below), which must stay exact too."""
    seed = world + (planner == "spst")
    mp.start_processes(worker, args=(world, free_port(), planner, seed, schedule, transport), nprocs=world,
                       start_method="spawn", join=True)


def test_unknown_schedule_is_refused():
    g, comm, plan = make_case(2, "p2p", 0)
    tables = rank_tables(plan, comm, 0)
    with pytest.raises(ValueError, match="schedule"):
        graph_allgather(torch.zeros(tables.num_local, D), tables, schedule="ring")


@pytest.mark.parametrize("schedule", ["batch", "rounds"])
def test_receives_are_posted_before_sends(monkeypatch, schedule):
    """Gloo announces a receive over the peer's one TCP connection: posted after a send to that
    peer, the announcement queues behind the data and the two directions run one after the other."""
    import netweave.runtime.graph_allgather as ga

    g, comm, plan = make_case(4, "spst", 1)
    tables = tables_on(rank_tables(plan, comm, 1), "cpu")
    batches = []
    monkeypatch.setattr(ga.dist, "batch_isend_irecv", lambda ops: batches.append([op.op for op in ops]) or [])
    monkeypatch.setattr(ga.dist, "get_world_size", lambda group=None: 4)
    monkeypatch.setattr(ga.dist, "P2POp", lambda op, tensor, peer, group=None: SimpleNamespace(op=op))
    x = torch.zeros(tables.num_local, D, requires_grad=True)
    graph_allgather(x, tables, schedule=schedule).sum().backward()
    assert len(batches) >= len(tables.forward) + len(tables.backward)
    for ops in batches:
        kinds = [op is ga.dist.irecv for op in ops]
        assert kinds == sorted(kinds, reverse=True), "a send is posted before a receive"
    assert any(ga.dist.irecv in ops and ga.dist.isend in ops for ops in batches)
