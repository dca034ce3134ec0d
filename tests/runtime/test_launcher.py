"""The launcher: bad combinations fail before training; dead, stuck or absent ranks fail cleanly."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from netweave.errors import NetweaveError  # noqa: E402
from netweave.graph import load_dataset  # noqa: E402
from netweave.partition import comm_relation, metis_partition, random_partition  # noqa: E402
from netweave.plan import p2p_plan, worker_links  # noqa: E402
from netweave.scenarios import TrainScenario  # noqa: E402
from netweave.runtime.launcher import free_port, init_group  # noqa: E402
from netweave.topology import star  # noqa: E402


def netweave(*args, env=None, timeout=120):
    """Run the CLI; returns (exit code, stdout, stderr, seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "netweave", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "NETWEAVE_NO_PROGRESS": "1", **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0


@pytest.mark.parametrize("config, message", [
    (TrainScenario(workers=0), "--workers 0"),
    (TrainScenario(workers=4, topology="dgx1"), "has 8 workers"),
    (TrainScenario(workers=2, model="gat"), "--model gat"),
    (TrainScenario(workers=2, dropout=1.0), "--dropout"),
    (TrainScenario(dataset="er:n=100,m=300", workers=2), "no class labels"),
    (TrainScenario(workers=3000), "fewer than --workers"),
])
def test_bad_settings_are_rejected_before_training(config, message):
    with pytest.raises(NetweaveError, match=message):
        config.prepare()


def test_partition_and_plan_must_match(tmp_path):
    g = load_dataset("cora")
    three = metis_partition(g, 3, seed=0)
    three.save(tmp_path / "three.npz")
    with pytest.raises(NetweaveError, match="has 3 parts but there are 4 workers"):
        TrainScenario(workers=4, parts_file=str(tmp_path / "three.npz")).prepare()
    four, other = metis_partition(g, 4, seed=0), random_partition(g, 4, seed=1)
    four.save(tmp_path / "four.npz")
    p2p_plan(comm_relation(g, other), worker_links(star(4)), 64).save(tmp_path / "other.npz")
    with pytest.raises(NetweaveError, match="planned for another partition"):
        TrainScenario(workers=4, comm="p2p", parts_file=str(tmp_path / "four.npz"),
                                plan_file=str(tmp_path / "other.npz")).prepare()
    job, _ = TrainScenario(workers=4, comm="p2p", parts_file=str(tmp_path / "four.npz")).prepare()
    assert np.array_equal(job.parts, four.parts) and job.plan.num_stages == 1


def test_a_rendezvous_that_cannot_form_fails_within_the_timeout():
    t0 = time.perf_counter()
    with pytest.raises(NetweaveError, match="did not meet"):
        init_group(0, 2, f"tcp://127.0.0.1:{free_port()}", 2.0, "cpu")  # rank 1 never comes
    assert time.perf_counter() - t0 < 30


@pytest.mark.slow
def test_cli_trains_with_two_workers_and_reports_bytes(tmp_path):
    code, out, err, _ = netweave("train", "cora", "--workers", "2", "--comm", "allreduce", "--epochs", "3",
                                 "--json", "--dump-logits", str(tmp_path / "logits.npy"))
    assert code == 0, err
    report = json.loads(out)
    assert [e["epoch"] for e in report["epochs"]] == [1, 2, 3]
    # ring all-reduce of (N, D) on 2 ranks: each sends N*D*4 bytes per exchange, D = 1433 + 16 + 16
    assert report["exchange_bytes_per_epoch"] == 2 * 2708 * 4 * (1433 + 16 + 16)
    assert np.load(tmp_path / "logits.npy").shape == (2708, 7)


@pytest.mark.slow
@pytest.mark.parametrize("fault, expected", [("kill@1:2", "rank 1 died (signal SIGKILL)"),
                                             ("hang@1:2", "did not answer in time")])
def test_a_dead_or_stuck_rank_ends_the_run_with_one_line(fault, expected):
    code, out, err, seconds = netweave("train", "cora", "--workers", "3", "--epochs", "30", "--timeout", "5",
                                       env={"NETWEAVE_INJECT_FAULT": fault})
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("netweave: error: ") and expected in lines[0], err
    assert seconds < 90
