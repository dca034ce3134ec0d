"""Independent cases run in-process, in a local process pool or on a Ray cluster, resumably.

Shared by ``netweave sweep`` and ``netweave repro``. Each finished case is appended to a JSON-lines
file as ``{"id", "params", "result", "seconds", "run"}`` the moment it finishes (``run``: the metadata
of the run that computed it, :func:`netweave.run_info.run_metadata`, with ``case_host`` the machine
the case ran on), so an interrupted run (Ctrl-C, a
killed node, a case that failed) resumes by skipping the cases already there. A line cut by the
interruption is ignored and its case runs again.

Ray addresses (``--ray``):

- ``auto``: the cluster this machine already belongs to (``ray start`` or ``RAY_ADDRESS``);
- ``local``: a fresh single-machine cluster for this run, shut down afterwards; its services (GCS,
  raylet, workers, runtime-env agent) listen on 127.0.0.1 only and it starts no dashboard;
- ``HOST:PORT`` (the head's GCS port, 6379 by default) or ``ray://HOST:PORT`` (Ray Client, 10001).

An explicit address is probed with a TCP connect first, so an unreachable one fails in one line
within :data:`PROBE_TIMEOUT_S` instead of after Ray's own retries.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from .errors import NetweaveError
from .progress import epoch_bar
from .run_info import run_metadata

PROBE_TIMEOUT_S = 5.0
_ADDRESS = re.compile(r"^(?:ray://)?(?P<host>\[[0-9a-fA-F:]+\]|[^:/\s]+):(?P<port>\d{1,5})$")


def case_id(params: dict) -> str:
    """The identity of a case: its parameters as canonical JSON."""
    return json.dumps(params, sort_keys=True, default=str)


def done_cases(path: Path) -> dict[str, dict]:
    """Rows already in ``path`` by case id (a missing file is an empty run)."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
            out[row["id"]] = row
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # a line cut by an interruption: that case runs again
    return out


def _timed_call(fn: Callable, args: tuple, params: dict, quiet: bool = True) -> tuple[dict, float, str]:
    """One case, its wall time (s) and the machine it ran on; in a worker process or Ray task
    (``quiet``) without progress."""
    if quiet:
        os.environ["NETWEAVE_NO_PROGRESS"] = "1"
    t0 = time.perf_counter()
    return fn(*args, params), time.perf_counter() - t0, socket.gethostname()


def run_cases(fn: Callable, args: tuple, cases: list[dict], path: str | Path, workers: int | None = None,
              ray: str | None = None, on_result: Callable[[dict], None] | None = None,
              description: str = "cases") -> list[dict]:
    """Run ``fn(*args, params)`` for every case not yet in ``path``; return every row in case order.

    ``fn`` must be a module-level function (it is pickled to worker processes and Ray tasks) and
    return a JSON-serialisable dict. ``workers=1`` runs in this process; ``None`` uses all cores.
    """
    if ray is not None:
        check_ray_address(ray)  # before anything is written, and even with nothing left to run
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = done_cases(path)
    todo = list({case_id(c): c for c in cases if case_id(c) not in done}.values())  # duplicates run once
    try:
        with path.open("a") as sink, epoch_bar(len(todo), description, enabled=bool(todo)) as advance:
            if sink.tell() and not path.read_bytes().endswith(b"\n"):
                sink.write("\n")  # end the line an interruption cut, so the next row starts on its own line

            def record(params: dict, timed: tuple[dict, float, str]) -> None:
                row = {"id": case_id(params), "params": params, "result": timed[0], "seconds": timed[1],
                       "run": run_metadata() | {"case_host": timed[2]}}
                sink.write(json.dumps(row, default=str) + "\n")
                sink.flush()
                done[row["id"]] = row
                advance()
                if on_result:
                    on_result(row)

            if ray is not None:
                if todo:
                    _run_ray(fn, args, todo, ray, record)
            elif workers == 1 or len(todo) <= 1:
                for c in todo:
                    record(c, _timed_call(fn, args, c, quiet=False))
            else:
                _run_pool(fn, args, todo, workers, record)
    finally:
        _drop_if_empty(path)
    return [done[case_id(c)] for c in cases]


def _drop_if_empty(path: Path) -> None:
    if path.exists() and path.stat().st_size == 0:
        path.unlink()  # a run whose first case failed leaves no empty results file behind


def _end_with_parent() -> None:
    """A pool worker's initializer: the worker ends when its parent does (Linux's
    ``PR_SET_PDEATHSIG``), so no case keeps computing after the run was killed."""
    import ctypes
    import signal

    parent = os.getppid()
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (AttributeError, OSError):  # not Linux: workers end when their queue closes
        return
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def _run_pool(fn, args, todo, workers, record) -> None:
    """The cases in a local process pool, forked from this process (a user's script needs no
    ``if __name__ == "__main__":`` guard, and workers start warm). Forking is safe because nothing
    here leaves a thread pool behind that a child would inherit half-alive: the LP/MILP solver runs
    on one thread (:func:`netweave.route.solver.new_highs`; HiGHS's own pool once made forked workers
    spin forever), and training runs in processes of its own. Workers end with this process."""
    import multiprocessing

    pool = ProcessPoolExecutor(max_workers=min(workers or os.cpu_count() or 1, len(todo)),
                               mp_context=multiprocessing.get_context("fork"), initializer=_end_with_parent)
    try:
        pending = {pool.submit(_timed_call, fn, args, c): c for c in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                record(pending.pop(f), f.result())
    finally:  # on an error or Ctrl-C, drop the queued cases instead of running them to the end
        pool.shutdown(wait=True, cancel_futures=True)


def check_ray_address(address: str) -> None:
    """Fail in one line, within :data:`PROBE_TIMEOUT_S`, when an explicit Ray address is malformed or unreachable."""
    if address in ("auto", "local"):
        return
    m = _ADDRESS.match(address)
    if not m:
        raise NetweaveError(f"bad Ray address {address!r}: use auto, local, HOST:PORT or ray://HOST:PORT")
    host, port = m["host"].strip("[]"), int(m["port"])
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise NetweaveError(f"cannot reach a Ray cluster at {address!r} ({reason.lower()}); start one with "
                            "`ray start --head` or check the address") from None


_RAY_CLUSTERS = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _init_local_ray(ray, **options) -> None:
    """Start a fresh single-machine Ray cluster whose services listen on 127.0.0.1 only.

    Ray binds its gRPC servers (GCS, raylet, every worker) and its runtime-env agent to 127.0.0.1
    only when the node's address is 127.0.0.1, and otherwise to every interface. On Linux it
    replaces a loopback ``_node_ip_address`` by the machine's routable address unless multi-node
    clusters are off, the single-machine mode Ray always uses on macOS and Windows (environment
    variable ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read when ``ray`` is imported, so the flag it
    sets is switched too). Both are set only while the cluster starts, then restored.
    """
    try:
        from ray._private import ray_constants
    except ImportError:  # a Ray without this module: only the processes it starts see the variable
        ray_constants = None
    saved_flag = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    saved_env = os.environ.get(_RAY_CLUSTERS)
    os.environ[_RAY_CLUSTERS] = "0"  # for the processes ray.init starts
    if saved_flag is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, **options)
    finally:
        if saved_flag is not None:
            ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(_RAY_CLUSTERS, None)
        else:
            os.environ[_RAY_CLUSTERS] = saved_env


def _run_ray(fn, args, todo, address, record) -> None:
    try:
        import ray
    except ImportError:
        raise NetweaveError("--ray needs Ray: pip install -e '.[ray]'") from None
    options = {"ignore_reinit_error": True, "log_to_driver": False, "logging_level": logging.ERROR}
    try:
        if address == "local":
            _init_local_ray(ray, **options)
        else:
            ray.init(address=address, **options)
    except Exception as exc:  # Ray raises several types (often without a message) for an unreachable cluster
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise NetweaveError(f"cannot reach a Ray cluster at {address!r} ({reason}); start one or check the address") from None
    try:
        remote = ray.remote(_timed_call)
        refs = {remote.remote(fn, args, c): c for c in todo}
        while refs:
            ready, _ = ray.wait(list(refs))
            for ref in ready:
                params = refs.pop(ref)
                try:
                    timed = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # re-raise the case's own error, without Ray's wrapping
                    raise (exc.cause if isinstance(exc.cause, Exception) else exc) from None
                except ray.exceptions.RayError as exc:  # a dead worker, a node lost, netweave missing on a node
                    lines = [line for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
                    raise NetweaveError(f"Ray could not run case {case_id(params)}: {lines[-1].strip()}") from None
                record(params, timed)
    finally:
        ray.shutdown()  # disconnects; stops the cluster only when it was started here (``local``)
