"""Start the ranks of a distributed run: N local processes, or the processes torchrun started.

* ``run_task(scenario, fn)`` (what :func:`netweave.distributed.launch` and, with the built-in
  models' function, :meth:`netweave.scenarios.TrainScenario.run` call): prepares the job once
  (``scenario.prepare()``: partition, plan, validation), then spawns ``workers`` processes that
  meet through a file store in the run's private temporary directory and talk over loopback only
  (gloo bound to the loopback interface: nothing listens on another address); each builds its
  :class:`~.context.RankContext` and calls ``fn(ctx)``, and rank 0's return value comes back
  (through a file in the private directory, written by our own rank 0). ``workers=1`` runs ``fn``
  in this process with no process group at all.
* Under ``torchrun`` (``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT`` in the environment)
  every process calls ``run_task`` too: rank 0 prepares the job and broadcasts it, all ranks run
  ``fn``, and each returns its own ``fn``'s value. The rendezvous and the interfaces are then the
  user's (``MASTER_ADDR``, ``GLOO_SOCKET_IFNAME``), for several machines.
* ``train(scenario)`` is ``run_task`` with :class:`~.trainer.BuiltinTraining`, and turns rank 0's
  results into the :class:`~.report.TrainReport` (``None`` on torchrun ranks other than 0).

Every local run keeps its temporary files (the store, the heartbeats, PyG's generated modules,
whatever the ranks write to ``TMPDIR``) in one private directory that is removed at the end: a run
leaves nothing in the system's temporary directory.

Failures end the run in bounded time with one line: a rank that raises or dies makes the launcher
stop the others; a rank that stops answering (stopped by SIGSTOP, or stuck holding its
interpreter) stops touching its heartbeat file, and the launcher ends the run once the heartbeat
is ``--timeout`` seconds old; a peer that is alive but never reaches a collective makes the
collectives fail after ``--timeout`` seconds; a rendezvous that cannot form fails after the same
timeout.
"""

from __future__ import annotations

import datetime
import logging
import os
import pickle
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NetweaveError
from ..graph import load_dataset
from ..graph.memory import check_memory
from ..progress import warn
from .job import RunSettings, TrainJob, TrainSettings

if TYPE_CHECKING:
    from .report import TrainReport

_PEER_LOST = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "Socket closed")


RANK_BYTES = 300e6  # what one local rank needs beyond what it shares (torch and PyG imported: ~670 MB RSS, half shared)


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
    """Join the process group, turning a rendezvous that does not form within ``timeout_s``
    seconds into a NetweaveError.

    ``init_method`` is torch's (``tcp://HOST:PORT``, ``env://``) or ``file://PATH``: a file store
    at PATH, opened here so that PATH is taken as it is, not parsed as a URL.
    """
    import torch.distributed as dist

    backend = "nccl" if device == "cuda" else "gloo"
    timeout = datetime.timedelta(seconds=timeout_s)
    try:
        if init_method.startswith("file://"):
            store = dist.FileStore(init_method[len("file://"):], world)
            store.set_timeout(timeout)
            where = {"store": store}
        else:
            where = {"init_method": init_method}
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timeout, **where)
    except Exception as exc:  # DistStoreError, RuntimeError, ValueError from the rendezvous
        hint = ("every rank started" if init_method.startswith("file://")
                else "every rank started and the address and port are reachable")
        raise NetweaveError(f"rank {rank}: the {world} ranks did not meet at {init_method} within {timeout_s:g} s "
                            f"({str(exc).strip().splitlines()[0]}); check that {hint}") from None


def exit_rank(code: int = 0) -> None:
    """End a spawned rank whose work is done and saved (or whose error is written), skipping
    interpreter teardown, where gloo's threads can abort the process ("terminate called without an
    active exception" on the launching terminal) and turn the exit code into SIGABRT."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def check_device(config: RunSettings) -> None:
    """Refuse ``--device cuda`` where it cannot work, before anything is prepared or spawned:
    no CUDA device visible to torch, or (local runs) more ranks than GPUs, since NCCL needs one
    GPU per rank."""
    if config.device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        raise NetweaveError("--device cuda: torch sees no CUDA device here (no GPU or no CUDA build); use --device cpu")
    gpus = torch.cuda.device_count()
    if not under_torchrun() and config.workers > gpus:
        raise NetweaveError(f"--device cuda --workers {config.workers}: NCCL needs one GPU per rank and torch sees "
                            f"{gpus} here; use --workers {gpus} or fewer, or --device cpu")


def _device(device: str, local_rank: int):
    import torch

    if device == "cuda":
        if not torch.cuda.is_available():
            raise NetweaveError("--device cuda: torch sees no CUDA device here (no GPU or no CUDA build); use --device cpu")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)  # NCCL collectives use the current device
        return device
    return torch.device("cpu")


def _run(job: TrainJob, fn: Callable, rank: int, world: int, local_world: int, local_rank: int) -> Any:
    """Run ``fn`` as one rank on its :class:`~.context.RankContext`; returns what ``fn`` returned."""
    import numba
    import torch

    from .context import rank_context

    threads = max(1, (os.cpu_count() or 1) // local_world)  # the machine's cores shared by its ranks
    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # the parallel dropout's too
    device = _device(job.config.device, local_rank)
    graph = load_dataset(job.config.dataset)
    return fn(rank_context(job, graph, rank, world, device))


# --- the run's private temporary directory -------------------------------------------------------

@contextmanager
def private_tempdir() -> Iterator[str]:
    """A fresh directory for everything a run writes to temporary files, removed on exit; while
    open it is :func:`tempfile.gettempdir` of this process (PyG writes its generated modules there)."""
    saved = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="netweave-train-") as run_dir:
        tempfile.tempdir = os.path.join(run_dir, "tmp")
        os.mkdir(tempfile.tempdir)
        try:
            yield run_dir
        finally:
            tempfile.tempdir = saved


def loopback_interface() -> str | None:
    """The name of the loopback network interface (``lo`` on Linux, ``lo0`` on macOS), or None
    where it cannot be told."""
    for path in sorted(Path("/sys/class/net").glob("*/flags")):
        try:
            if int(path.read_text(), 16) & 0x8:  # IFF_LOOPBACK
                return path.parent.name
        except (OSError, ValueError):
            continue
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((name for name in names if name in ("lo", "lo0")), None)


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the processes started inside the block, then restore them."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# --- spawned ranks and their watchdog ------------------------------------------------------------

BEAT_S = 0.5  # seconds between two touches of a rank's heartbeat file
STARTUP_S = 60.0  # seconds a rank may take to its first heartbeat (importing torch on a loaded machine)
SILENT_S = 5.0  # heartbeat age (s) from which a live rank counts as not answering once another rank failed
GRACE_S = 5.0  # seconds the other ranks get to exit after SIGTERM before SIGKILL


def _heartbeat(path: Path) -> None:
    """Touch ``path`` every :data:`BEAT_S` seconds from a daemon thread for as long as the process
    runs: a process that is stopped (SIGSTOP) or stuck holding its interpreter stops touching it."""
    import threading

    def beat() -> None:
        try:
            while True:
                path.touch()
                time.sleep(BEAT_S)
        except OSError:  # the run's directory is gone: the launcher is done with this rank
            return

    threading.Thread(target=beat, name="netweave-heartbeat", daemon=True).start()


def _spawned(rank: int, world: int, job: TrainJob, fn: Callable, run_dir: str) -> None:
    """Entry point of a spawned rank: errors become one line in ``error-<rank>.txt`` and exit code 3;
    rank 0 pickles ``fn``'s return value into ``result.pickle``."""
    _heartbeat(Path(run_dir, f"beat-{rank}"))
    tempfile.tempdir = os.path.join(run_dir, "tmp")  # as TMPDIR, should anything have cached another
    try:
        init_group(rank, world, f"file://{run_dir}/store", job.config.timeout_s, job.config.device)
        import torch.distributed as dist

        try:
            result = _run(job, fn, rank, world, world, rank)
            dist.barrier()  # nobody tears down while a peer still talks
        finally:
            dist.destroy_process_group()
        if rank == 0:
            with open(Path(run_dir, "result.pickle"), "wb") as f:
                pickle.dump(result, f)
    except Exception as exc:
        Path(run_dir, f"error-{rank}.txt").write_text(describe(exc))
        if os.environ.get("NETWEAVE_DEBUG"):
            raise
        exit_rank(3)  # a collective that timed out leaves gloo threads behind, as a success does
    exit_rank()


def _stopped(pid: int) -> bool:
    """True when the process is stopped (SIGSTOP, or a debugger), from ``/proc/PID/stat`` (Linux)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("T", "t")


class _Watch:
    """The ranks' heartbeats as the launcher sees them; ages in seconds.

    A pause of the launcher itself (Ctrl-Z stops the whole process group) does not count against
    the ranks: their ages restart from the moment the launcher runs again.
    """

    def __init__(self, processes, run_dir: str, timeout_s: float):
        self.processes, self.run_dir, self.timeout_s = processes, run_dir, timeout_s
        self.since = self.last_look = time.time()  # the spawn, or the end of the launcher's last pause

    def age(self, rank: int) -> tuple[float, bool]:
        """Seconds since the rank's last heartbeat (before its first: since the spawn), and whether it has beaten."""
        now = time.time()
        if now - self.last_look > 4 * BEAT_S + 1.0:  # this process was stopped or starved meanwhile
            self.since = now
        self.last_look = now
        try:
            return now - max(Path(self.run_dir, f"beat-{rank}").stat().st_mtime, self.since), True
        except FileNotFoundError:
            return now - self.since, False

    def silent(self, after_failure: bool = False) -> tuple[int, float] | None:
        """``(rank, age)`` of the first live rank that stopped answering, or None.

        While all ranks run: a heartbeat older than the timeout (before the first heartbeat,
        :data:`STARTUP_S` at least). Once a rank failed: a rank that is stopped (``T`` in
        ``/proc``) or whose heartbeat is older than :data:`SILENT_S` (or the timeout, if shorter).
        """
        for rank, process in enumerate(self.processes):
            if process.exitcode is not None:
                continue
            age, beaten = self.age(rank)
            if after_failure:
                quiet = _stopped(process.pid) or (beaten and age > min(SILENT_S, self.timeout_s))
            else:
                quiet = age > (self.timeout_s if beaten else max(self.timeout_s, STARTUP_S))
            if quiet:
                return rank, age
        return None


def _stop(processes, silent_rank: int | None) -> None:
    """End every rank still alive: SIGKILL for the one that stopped answering, SIGTERM (then
    SIGCONT, so that a stopped process can act on it) for the others, SIGKILL after :data:`GRACE_S`."""
    for rank, process in enumerate(processes):
        if process.exitcode is None:
            if rank == silent_rank:
                process.kill()
            else:
                process.terminate()
                try:
                    os.kill(process.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
    deadline = time.monotonic() + GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.exitcode is None:
            process.kill()
        process.join()


def _not_answering(rank: int, age: float) -> NetweaveError:
    return NetweaveError(f"rank {rank} stopped answering for {age:.0f} s (stuck or stopped, e.g. by SIGSTOP); "
                         "the other ranks were stopped; raise --timeout if it was only slow")


def _failure(failed: int, codes: list[int | None], silent: tuple[int, float] | None,
             run_dir: str) -> NetweaveError:
    """The clearest single line for a failed run, from the exit codes before the launcher stopped
    the others: a rank killed by a signal beats one that stopped answering, which beats the
    ranks' own errors (those of a rank that lost its peer are only "lost the connection")."""
    errors = {r: Path(run_dir, f"error-{r}.txt").read_text() for r in range(len(codes))
              if Path(run_dir, f"error-{r}.txt").exists()}
    for r, code in enumerate(codes):
        if r not in errors and code is not None and code < 0:
            return NetweaveError(f"rank {r} died (signal {signal.Signals(-code).name}); the other ranks were stopped")
    if silent is not None:
        return _not_answering(*silent)
    if failed not in errors:
        return NetweaveError(f"rank {failed} died (exit code {codes[failed]}); the other ranks were stopped")
    root = next((r for r in sorted(errors) if "probably failed" not in errors[r]), failed)
    return NetweaveError(f"rank {root}: {errors[root]}")


SETTLE_S = 0.5  # how long a failed run waits for the other ranks' exit codes before it reports


def _join(processes, run_dir: str, timeout_s: float) -> None:
    """Wait for every rank to exit 0; on the first failure or silence, stop the others and raise."""
    from multiprocessing.connection import wait

    watch = _Watch(processes, run_dir, timeout_s)
    pending = {p.sentinel: r for r, p in enumerate(processes)}
    while pending:
        for sentinel in wait(list(pending), timeout=BEAT_S):
            rank = pending.pop(sentinel)
            processes[rank].join()
            if processes[rank].exitcode != 0:
                settle = time.monotonic() + SETTLE_S  # a peer that died first may not be reaped yet: its signal
                for p in processes:                  # is the clearest line (its peers only lost it)
                    p.join(max(0.0, settle - time.monotonic()))
                codes = [p.exitcode for p in processes]
                silent = watch.silent(after_failure=True)
                _stop(processes, silent[0] if silent else None)
                raise _failure(rank, codes, silent, run_dir)
        silent = watch.silent()
        if silent is not None:
            _stop(processes, silent[0])
            raise _not_answering(*silent)


def spawn(job: TrainJob, fn: Callable, run_dir: str) -> Any:
    """Run ``fn`` on ``workers`` local processes (gloo on loopback, or NCCL) and return rank 0's
    return value; ``run_dir`` (from :func:`private_tempdir`) holds the store, the heartbeats, the
    result and the ranks' ``TMPDIR``."""
    import torch.multiprocessing as mp

    world = job.config.workers
    logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)  # we report failures ourselves
    interface = loopback_interface()
    env = {"TMPDIR": tempfile.gettempdir()}
    if interface is not None:  # gloo's and NCCL's sockets on loopback (gloo's default: the host name's address)
        env.update(GLOO_SOCKET_IFNAME=interface, NCCL_SOCKET_IFNAME=interface)
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise NetweaveError(f"the function to run cannot be sent to the spawned ranks ({exc}); define it with def "
                            "at the top level of a module or script (not a lambda or a nested function)") from None
    with _environ(env):
        context = mp.start_processes(_spawned, args=(world, job, fn, run_dir), nprocs=world,
                                     start_method="spawn", join=False)
    try:
        _join(context.processes, run_dir, job.config.timeout_s)
    except BaseException:
        _stop(context.processes, None)  # Ctrl-C or an error here: leave no rank behind
        raise
    with open(Path(run_dir, "result.pickle"), "rb") as f:  # written by our own rank 0 in our private directory
        return pickle.load(f)


def _import_training_stack(run_dir: str) -> None:
    """Import torch and PyG (the train extra) or fail in one line. Importing PyG makes torch create
    its compile cache (``TMPDIR/torchinductor_USER``) unless ``TORCHINDUCTOR_CACHE_DIR`` is set;
    for the import it points into the run's directory, so that nothing is left in ``TMPDIR``."""
    env = {} if "TORCHINDUCTOR_CACHE_DIR" in os.environ else {"TORCHINDUCTOR_CACHE_DIR": os.path.join(run_dir, "torch")}
    try:
        with _environ(env):
            import torch  # noqa: F401
            import torch_geometric  # noqa: F401
    except ImportError as exc:
        raise NetweaveError(f"training needs the train extra ({exc.name} is missing): pip install 'netweave[train]'") from None


@dataclass(frozen=True)
class RunOutcome:
    """A finished run as this process saw it: the prepared ``job``, the ``result`` (rank 0's
    ``fn`` value; under torchrun this rank's), this process's ``rank`` and the seconds spent
    preparing (None on torchrun ranks other than 0)."""

    job: TrainJob
    result: Any
    rank: int
    prepare_s: float | None


def run_task(config: RunSettings, fn: Callable) -> RunOutcome:
    """Prepare ``config`` (a :class:`~netweave.scenarios.DistributedScenario` or
    :class:`~netweave.scenarios.TrainScenario`) and run ``fn(ctx)`` on every rank; see the module
    docstring for the two ways it starts."""
    if not callable(fn):
        raise NetweaveError(f"launch needs a function to run on every rank, got {type(fn).__name__}")
    with private_tempdir() as run_dir:
        _import_training_stack(run_dir)
        check_device(config)
        if under_torchrun():
            return _torchrun(config, fn)
        check_memory(f"--workers {config.workers}: {config.workers:,} local training processes",
                     config.workers * RANK_BYTES, "use fewer workers, or start one process per worker under "
                     "torchrun on several machines (README: Training)", this_process=False)
        t0 = time.perf_counter()
        job, _ = config.prepare()
        prepare_s = time.perf_counter() - t0
        result = _run(job, fn, 0, 1, 1, 0) if config.workers == 1 else spawn(job, fn, run_dir)
        return RunOutcome(job, result, 0, prepare_s)


def train(config: TrainSettings) -> TrainReport | None:
    """Train ``config``'s built-in model (:func:`run_task` with :class:`~.trainer.BuiltinTraining`) and
    return the run's report (None on a torchrun rank other than 0)."""
    from .report import run_report
    from .trainer import BuiltinTraining

    outcome = run_task(config, BuiltinTraining(config))
    if outcome.result is None:
        return None
    out = outcome.result
    report = run_report(outcome.job, out.results, out.train_s, out.num_nodes, out.num_classes, outcome.prepare_s)
    for message in report.warnings:
        warn(message)  # on the launching terminal's stderr
    return report


def _torchrun(config: RunSettings, fn: Callable) -> RunOutcome:
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
        box, prepare_s = [None], None
        if rank == 0:
            t0 = time.perf_counter()
            try:
                box = [config.prepare()[0]]
            except NetweaveError as exc:
                box = [str(exc)]
            prepare_s = time.perf_counter() - t0
        dist.broadcast_object_list(box, src=0)
        if isinstance(box[0], str):
            raise NetweaveError(box[0])
        try:
            result = _run(box[0], fn, rank, world, local_world, local_rank)
            dist.barrier()  # nobody tears down while a peer still talks
            return RunOutcome(box[0], result, rank, prepare_s)
        except Exception as exc:
            raise NetweaveError(f"rank {rank}: {describe(exc)}") from None
    finally:
        dist.destroy_process_group()
