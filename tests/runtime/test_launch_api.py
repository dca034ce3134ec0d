"""netweave.distributed.launch: settings checked before anything starts, one rank in this process,
N spawned ranks that exchange and synchronise, and a failing rank reported in one line."""

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import netweave  # noqa: E402
import netweave.distributed as nwd  # noqa: E402
from netweave.errors import NetweaveError  # noqa: E402

DATASET = "rmat:n=200,m=900,feat=6,classes=3,seed=2"


def whole_graph_rank(ctx: nwd.RankContext):
    h = ctx.x * 2
    assert ctx.exchange(h) is h and ctx.num_local == ctx.num_out == ctx.num_nodes  # one rank: no halo
    w = torch.nn.Linear(6, 2)
    w(ctx.x).sum().backward()
    before = w.weight.grad.clone()
    ctx.sync_gradients(w)  # one rank: nothing to add
    assert torch.equal(w.weight.grad, before)
    return ctx.rank, ctx.world, ctx.gather(ctx.x).shape, ctx.counters()


def test_the_package_exports_the_api_and_one_rank_runs_here():
    assert netweave.distributed is nwd and {"launch", "RankContext", "CommCounters"} <= set(nwd.__all__)
    rank, world, shape, counters = nwd.launch(whole_graph_rank, dataset=DATASET)
    assert (rank, world, shape) == (0, 1, (200, 6)) and counters == nwd.CommCounters(0, 0.0, 0, 0.0)


@pytest.mark.parametrize("settings, message", [
    ({"workers": 0}, "--workers 0 must be at least 1"),
    ({"workers": 2, "comm": "ring"}, "--comm ring is not one of p2p, spst, allreduce"),
    ({"device": "tpu"}, "--device tpu must be cpu or cuda"),
    ({"timeout_s": float("inf")}, "must be a finite number of seconds"),
    ({"workers": 12, "dataset": "rmat:n=10,m=30,feat=6,classes=3,seed=2"}, "fewer than --workers 12"),
    ({"workers": 2, "topology": "dgx1"}, "has 8 workers but --workers is 2"),
    ({"workers": 2, "cost_model": "exact"}, "unknown cost model 'exact'"),
])
def test_bad_settings_fail_in_one_line_before_any_rank_starts(settings, message):
    with pytest.raises(NetweaveError, match=message):
        nwd.launch(whole_graph_rank, **{"dataset": DATASET, **settings})


def test_a_function_the_ranks_cannot_import_is_refused_before_spawning():
    with pytest.raises(NetweaveError, match="define it with def at the top level"):
        nwd.launch(lambda ctx: None, dataset=DATASET, workers=2)
    with pytest.raises(NetweaveError, match="needs a function"):
        nwd.launch("train", dataset=DATASET, workers=2)


def exchange_and_sync(ctx: nwd.RankContext):
    """Halo rows arrive as their owners' rows; gradients flow back to the owners; the summed
    gradient of a shared parameter is the whole graph's."""
    ids = ctx.global_ids.to(torch.float64)
    h = torch.stack([ctx.own_ids.to(torch.float64), ctx.own_ids.to(torch.float64) ** 2], dim=1).requires_grad_(True)
    out = ctx.exchange(h)
    assert torch.equal(out.detach(), torch.stack([ids, ids ** 2], dim=1))
    (out[:, 0] * 1.0).sum().backward()  # d/dh of the sum over own + halo rows: 1 + (ranks that need the row)
    w = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
    (w * ctx.own_ids.to(torch.float64).sum()).backward()
    ctx.sync_gradients([w])
    c = ctx.counters()
    return ctx.gather(h.grad[:, :1]).ravel(), float(w.grad), c.exchange_bytes > 0 and c.sync_bytes > 0


@pytest.mark.slow
@pytest.mark.parametrize("comm", ["spst", "allreduce"])
def test_two_spawned_ranks_exchange_and_synchronise(comm):
    from netweave.graph import load_dataset
    from netweave.partition import comm_relation, metis_partition

    grad, w_grad, counted = nwd.launch(exchange_and_sync, dataset=DATASET, workers=2, comm=comm, timeout_s=60)
    g = load_dataset(DATASET)
    assert w_grad == pytest.approx(float(np.arange(g.num_nodes).sum()))
    needers = comm_relation(g, metis_partition(g, 2, seed=0)).needers()
    np.testing.assert_array_equal(grad, 1.0 + needers)  # own use plus one per rank that holds it as halo
    assert counted


def fails_on_rank_1(ctx: nwd.RankContext):
    if ctx.rank == 1:
        raise ValueError("boom in the user's code")
    ctx.exchange(ctx.x)  # rank 0 waits for its peer, which is gone
    return "unreachable"


@pytest.mark.slow
def test_a_failing_rank_ends_the_run_in_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(NetweaveError) as e:
        nwd.launch(fails_on_rank_1, dataset=DATASET, workers=2, timeout_s=30)
    assert str(e.value) == "rank 1: ValueError: boom in the user's code"
    assert os.listdir(tmp_path) == []  # the run's private directory is gone


TORCHRUN_SCRIPT = '''
import json, sys
import torch
import netweave.distributed as nwd

def fn(ctx):
    out = ctx.exchange(ctx.x[:, :2].double())
    assert torch.equal(out[: ctx.num_local], ctx.x[:, :2].double()) and out.shape[0] == ctx.num_out
    return {"rank": ctx.rank, "world": ctx.world, "own": ctx.own_ids.tolist()}

if __name__ == "__main__":
    r = nwd.launch(fn, dataset="%s", workers=2, timeout_s=60)
    json.dump(r, open(sys.argv[1] + "/out-%%d.json" %% r["rank"], "w"))
''' % DATASET


@pytest.mark.slow
def test_under_torchrun_every_rank_returns_its_own_value_and_train_reports_on_rank_0(tmp_path):
    """torchrun starts the processes: launch prepares on rank 0, broadcasts, and each rank returns its
    fn's value; ``netweave train`` prints its one JSON report from rank 0 only."""
    import json
    import shutil
    import subprocess
    import sys

    from netweave.runtime.launcher import free_port

    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "NETWEAVE_NO_PROGRESS": "1",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    base = [torchrun, "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    (tmp_path / "script.py").write_text(TORCHRUN_SCRIPT)
    subprocess.run(base + [str(tmp_path / "script.py"), str(tmp_path)], check=True, env=env, timeout=300,
                   capture_output=True)
    outs = [json.loads((tmp_path / f"out-{r}.json").read_text()) for r in range(2)]
    assert [(o["rank"], o["world"]) for o in outs] == [(0, 2), (1, 2)]
    assert sorted(outs[0]["own"] + outs[1]["own"]) == list(range(200))
    base[-1] = str(free_port())
    proc = subprocess.run(base + ["-m", "netweave", "train", DATASET, "--workers", "2", "--epochs", "2", "--json"],
                          env=env, timeout=300, capture_output=True, text=True, check=True)
    report = json.loads(proc.stdout)  # exactly one JSON object: rank 1 printed nothing
    assert report["workers"] == 2 and len(report["epochs"]) == 2 and report["exchange_bytes_per_epoch"] > 0
