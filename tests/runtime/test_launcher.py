"""The launcher: bad combinations fail before training; dead, stuck or absent ranks fail cleanly."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from netweave.errors import NetweaveError  # noqa: E402
from netweave.graph import load_dataset  # noqa: E402
from netweave.partition import comm_relation, metis_partition, random_partition  # noqa: E402
from netweave.plan import p2p_plan, worker_links  # noqa: E402
from netweave.scenarios import TrainScenario  # noqa: E402
from netweave.runtime.launcher import GRACE_S, check_device, free_port, init_group  # noqa: E402
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
    (TrainScenario(workers=1, parts_file="p.npz"), "--parts-file needs --workers 2 or more"),
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


@pytest.fixture
def startup_s() -> float:
    """Wall time (s) of a fresh ``python -c "import torch"`` now: the unit for every bound on a run's
    duration, which is mostly processes starting, so that a loaded machine scales the bound too."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - t0


@pytest.mark.parametrize("scheme", ["tcp", "file"])
def test_a_rendezvous_that_cannot_form_fails_within_the_timeout(tmp_path, scheme):
    timeout = 2.0
    where = f"tcp://127.0.0.1:{free_port()}" if scheme == "tcp" else f"file://{tmp_path}/store"
    t0 = time.perf_counter()
    with pytest.raises(NetweaveError, match="did not meet"):
        init_group(0, 2, where, timeout, "cpu")  # rank 1 never comes
    assert time.perf_counter() - t0 < timeout + 15  # no process starts here: timeout plus a constant


def test_cuda_without_a_gpu_fails_before_anything_starts(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(NetweaveError, match=r"--device cuda: torch sees no CUDA device here .* use --device cpu"):
        check_device(TrainScenario(workers=2, device="cuda"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(NetweaveError, match="--workers 2: NCCL needs one GPU per rank and torch sees 1 here"):
        check_device(TrainScenario(workers=2, device="cuda"))
    check_device(TrainScenario(workers=1, device="cuda"))
    check_device(TrainScenario(workers=8, device="cpu"))


def test_cli_cuda_without_a_gpu_is_one_line_at_once(startup_s):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, out, err, seconds = netweave("train", "cora", "--workers", "2", "--device", "cuda")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0] == ("netweave: error: --device cuda: torch sees no CUDA device here (no GPU or no CUDA build); "
                        "use --device cpu")
    assert seconds < 3 * startup_s + 10  # before anything is prepared or spawned


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
def test_a_dead_or_stuck_rank_ends_the_run_with_one_line(fault, expected, startup_s):
    timeout = 5
    code, out, err, seconds = netweave("train", "cora", "--workers", "3", "--epochs", "30", "--timeout", str(timeout),
                                       env={"NETWEAVE_INJECT_FAULT": fault}, timeout=600)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("netweave: error: ") and expected in lines[0], err
    # the launcher and 3 ranks start (each importing torch and PyG), train 2 epochs, wait out the
    # timeout, stop the others within their grace period
    assert seconds < timeout + GRACE_S + 10 * startup_s + 20, (seconds, startup_s)


def _children(pid: int) -> dict[int, tuple[str, str]]:
    """PID → (start time in ticks, command line) of ``pid``'s children, from /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if entry.name.isdigit() and int(stat[1]) == pid:
                out[int(entry.name)] = (stat[19], (entry / "cmdline").read_bytes().decode(errors="replace"))
        except (OSError, IndexError, ValueError):
            continue
    return out


def _running(pid: int, started: str) -> bool:
    """Whether ``pid`` is still the process that started at ``started`` (ticks), not yet reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19] == started
    except (OSError, IndexError):
        return False


def _kill_if_running(pid: int, started: str) -> None:
    """SIGCONT and SIGKILL that process, if it still runs."""
    if _running(pid, started):
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the ranks through /proc")
def test_a_rank_stopped_by_sigstop_ends_the_run_within_the_timeout(tmp_path, startup_s):
    """SIGSTOP one rank in mid-training: its heartbeat stops, and the launcher ends the run about
    ``--timeout`` seconds later with one line saying the rank stopped answering."""
    timeout = 20
    scratch = tmp_path / "tmp"  # the run's TMPDIR: its private folder (and the heartbeats) appear here
    scratch.mkdir()
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        run = subprocess.Popen([sys.executable, "-m", "netweave", "train", "rmat:n=300,m=1500,feat=8,classes=3",
                                "--workers", "2", "--comm", "allreduce", "--epochs", "1000000",
                                "--timeout", str(timeout)], stdout=out, stderr=err,
                               env={**os.environ, "NETWEAVE_NO_PROGRESS": "1", "TMPDIR": str(scratch)})
    stopped = None
    try:
        deadline = time.monotonic() + 30 * startup_s + 60
        while time.monotonic() < deadline and run.poll() is None:
            ranks = {p: v for p, v in _children(run.pid).items() if "multiprocessing.spawn" in v[1]}
            if len(ranks) == 2 and len(list(scratch.glob("netweave-train-*/beat-*"))) == 2 \
                    and list(scratch.glob("netweave-train-*/store")):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the ranks did not start: {(tmp_path / 'err').read_text()}")
        time.sleep(3)  # the ranks met at the store and are training
        assert run.poll() is None, (tmp_path / "err").read_text()
        pid = max(ranks)  # the rank spawned last
        stopped = (pid, ranks[pid][0])
        os.kill(pid, signal.SIGSTOP)
        t_stop = time.perf_counter()
        code = run.wait(timeout=timeout + 30 * startup_s + 60)
        seconds = time.perf_counter() - t_stop
        left_behind = _running(*stopped)
    finally:
        if stopped:
            _kill_if_running(*stopped)
        run.kill()
        run.wait()
    err = (tmp_path / "err").read_text()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("netweave: error: rank "), err
    assert "stopped answering" in lines[0] and "SIGKILL" not in lines[0], err
    assert timeout - 1 < seconds < timeout + 2 * startup_s + 10, (seconds, startup_s)
    assert not left_behind  # the launcher killed the stopped rank and reaped it
