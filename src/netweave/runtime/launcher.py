"""Start the ranks of a training run: N local processes, or the processes torchrun started.

* ``train(scenario)`` (what :meth:`netweave.scenarios.TrainScenario.run` calls): prepares the job
  once (``scenario.prepare()``: partition, plan, validation), then spawns ``--workers`` processes
  that meet on a free loopback port, and returns rank 0's :class:`~.report.TrainReport`.
  ``--workers 1`` trains in this process with no process group at all.
* Under ``torchrun`` (``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT`` in the environment)
  every process calls ``train(scenario)`` too: rank 0 prepares the job and broadcasts it, all
  ranks train, rank 0 returns the report and the others return ``None``.

Failures end the run in bounded time with one line: a rank that raises or dies makes the launcher
stop the others (torch.multiprocessing); a peer that stops answering makes collectives fail after
``--timeout`` seconds; a rendezvous that cannot form fails after the same timeout.
"""

from __future__ import annotations

import datetime
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import NetweaveError
from ..graph import load_dataset
from ..progress import warn
from .job import TrainJob

if TYPE_CHECKING:
    from ..scenarios.train import TrainScenario
    from .report import TrainReport

_PEER_LOST = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "Socket closed")


def under_torchrun() -> bool:
    """True when a launcher such as torchrun set this process's rank in the environment."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def free_port() -> int:
    """A TCP port on loopback that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe(exc: BaseException) -> str:
    """One line for an exception raised inside a rank."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, NetweaveError):
        return text
    if any(k in str(exc) for k in _PEER_LOST):
        return f"lost the connection to another rank ({text}); that rank probably failed or was killed"
    if "timed out" in str(exc).lower() or "timeout" in str(exc).lower():
        return f"a peer did not answer in time ({text}); a rank is stuck, dead or unreachable"
    return f"{type(exc).__name__}: {text}"


def init_group(rank: int, world: int, init_method: str, timeout_s: float, device: str) -> None:
    """Join the process group, turning a rendezvous that does not form into a NetweaveError."""
    import torch.distributed as dist

    backend = "nccl" if device == "cuda" else "gloo"
    try:
        dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
    except Exception as exc:  # DistStoreError, RuntimeError, ValueError from the rendezvous
        raise NetweaveError(f"rank {rank}: the {world} ranks did not meet at {init_method} within {timeout_s:g} s "
                            f"({str(exc).strip().splitlines()[0]}); check that every rank started and the "
                            "address and port are reachable") from None


def exit_rank() -> None:
    """End a spawned rank whose work is done and saved, skipping interpreter teardown, where gloo's
    threads can abort the process ("terminate called without an active exception") and turn a
    success into SIGABRT."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _device(device: str, local_rank: int):
    import torch

    if device == "cuda":
        if not torch.cuda.is_available():
            raise NetweaveError("--device cuda but torch sees no CUDA device; use --device cpu")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)  # NCCL collectives use the current device
        return device
    return torch.device("cpu")


def _run(job: TrainJob, rank: int, world: int, local_world: int, local_rank: int) -> TrainReport | None:
    """Train as one rank; rank 0 returns the report, the others None."""
    import torch
    import torch.distributed as dist

    from .report import run_report
    from .trainer import train_rank

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    device = _device(job.config.device, local_rank)
    graph = load_dataset(job.config.dataset)
    t0 = time.perf_counter()
    result = train_rank(job, graph, rank, world, device, show_progress=rank == 0)
    train_s = time.perf_counter() - t0
    results = [result]
    if world > 1:
        results = [None] * world
        dist.all_gather_object(results, result)
    if rank != 0:
        return None
    report = run_report(job, graph, results, train_s)
    for message in report.warnings:
        warn(message)  # on the launching terminal's stderr (spawned ranks inherit it)
    return report


def _spawned(rank: int, world: int, port: int, job: TrainJob, out_dir: str) -> None:
    """Entry point of a spawned rank: errors become one line in ``error-<rank>.txt`` and exit code 3."""
    import json

    try:
        init_group(rank, world, f"tcp://127.0.0.1:{port}", job.config.timeout_s, job.config.device)
        import torch.distributed as dist

        try:
            report = _run(job, rank, world, world, rank)
            dist.barrier()  # nobody tears down while a peer still talks
        finally:
            dist.destroy_process_group()
        if report is not None:
            Path(out_dir, "report.json").write_text(json.dumps(report.summary()))
    except Exception as exc:
        Path(out_dir, f"error-{rank}.txt").write_text(describe(exc))
        if os.environ.get("NETWEAVE_DEBUG"):
            raise
        sys.exit(3)
    exit_rank()


def _failure(exc, context, out_dir: str, world: int) -> NetweaveError:
    """The clearest single line for a failed spawn: a rank killed by a signal (not our SIGTERM)
    beats its peers' errors, which are usually only "lost the connection"."""
    errors = {r: Path(out_dir, f"error-{r}.txt").read_text() for r in range(world)
              if Path(out_dir, f"error-{r}.txt").exists()}
    for r, process in enumerate(context.processes):
        code = process.exitcode
        if r not in errors and code is not None and code < 0 and code != -signal.SIGTERM:
            return NetweaveError(f"rank {r} died (signal {signal.Signals(-code).name}); the other ranks were stopped")
    rank = getattr(exc, "error_index", 0)
    if rank not in errors and getattr(exc, "exit_code", None) is not None:
        return NetweaveError(f"rank {rank} died (exit code {exc.exit_code}); the other ranks were stopped")
    root = next((r for r in sorted(errors) if "probably failed" not in errors[r]), rank)
    return NetweaveError(f"rank {root}: {errors.get(root, str(exc).strip().splitlines()[-1])}")


def spawn(job: TrainJob) -> TrainReport:
    """Run ``job`` on ``workers`` local processes (gloo on loopback, or NCCL) and return rank 0's report."""
    import json

    import torch.multiprocessing as mp

    from .report import TrainReport

    world = job.config.workers
    logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)  # we report failures ourselves
    with tempfile.TemporaryDirectory(prefix="netweave-train-") as out_dir:
        context = mp.start_processes(_spawned, args=(world, free_port(), job, out_dir), nprocs=world,
                                     start_method="spawn", join=False)
        try:
            while not context.join():
                pass
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as exc:
            raise _failure(exc, context, out_dir, world) from None
        return TrainReport.from_summary(json.loads(Path(out_dir, "report.json").read_text()))


def train(config: TrainScenario) -> TrainReport | None:
    """Prepare and run a training job; see the module docstring for the two ways it starts."""
    try:
        import torch  # noqa: F401
        import torch_geometric  # noqa: F401
    except ImportError as exc:
        raise NetweaveError(f"training needs the train extra ({exc.name} is missing): pip install 'netweave[train]'") from None
    if under_torchrun():
        return _torchrun(config)
    t0 = time.perf_counter()
    job, _ = config.prepare()
    setup_s = time.perf_counter() - t0
    report = _run(job, 0, 1, 1, 0) if config.workers == 1 else spawn(job)
    return replace(report, prepare_s=setup_s)


def _torchrun(config: TrainScenario) -> TrainReport | None:
    """One rank of a torchrun job: rank 0 prepares and broadcasts the job (or its error)."""
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if config.workers not in (1, world):
        raise NetweaveError(f"--workers {config.workers} differs from torchrun's world size {world}")
    config = replace(config, workers=world)
    init_group(rank, world, "env://", config.timeout_s, config.device)
    try:
        box = [None]
        if rank == 0:
            try:
                box = [config.prepare()[0]]
            except NetweaveError as exc:
                box = [str(exc)]
        dist.broadcast_object_list(box, src=0)
        if isinstance(box[0], str):
            raise NetweaveError(box[0])
        try:
            report = _run(box[0], rank, world, local_world, local_rank)
            dist.barrier()  # nobody tears down while a peer still talks
            return report
        except Exception as exc:
            raise NetweaveError(f"rank {rank}: {describe(exc)}") from None
    finally:
        dist.destroy_process_group()
