"""Who made a result, when, where and with what: the run metadata every output of netweave carries.

:func:`run_metadata` is one flat mapping (units and meanings in the key names), the same in every
``--json`` object (its ``"run"`` key), every report (``report.md``/``report.html``, ``repro``'s
``NAME.md`` and ``summary.md``), every CSV (``run_*`` columns) and every sweep or repro row
(``OUT/*.jsonl``, key ``"run"``):

* ``netweave``: the package version; ``git_commit`` / ``git_dirty``: the commit of the source tree
  netweave was imported from and whether it had uncommitted changes (``None`` when netweave is not
  run from a git checkout, e.g. installed from a wheel);
* ``date_utc``: when the run started (ISO 8601, UTC); ``host``: the machine's name;
* ``python``, ``numpy``, ``numba``, ``highspy``, ``torch``: versions (``None`` where not installed;
  read from the installed distributions, so nothing heavy is imported);
* ``command``: the command line (``netweave plan cora --topology dgx1``), or the Python program's
  ``sys.argv`` when netweave is used as a library.

Computed once per process (the date is the start of the run, not of each output).
"""

from __future__ import annotations

import datetime
import functools
import platform
import shlex
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from . import __version__

LIBRARIES = ("numpy", "numba", "highspy", "torch")
_command: list[str] | None = None


def set_command(argv: list[str]) -> None:
    """Record the command line of this run (the CLI calls it with ``["netweave", *args]``)."""
    global _command
    _command = list(argv)
    run_metadata.cache_clear()


@functools.cache
def run_metadata() -> dict:
    """The run's metadata (see the module docstring); the same mapping for the whole process."""
    commit, dirty = git_state()
    argv = _command if _command is not None else sys.argv
    return {"netweave": __version__, "git_commit": commit, "git_dirty": dirty,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(), "python": platform.python_version(),
            **{name: _version(name) for name in LIBRARIES}, "command": shlex.join(argv)}


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def git_state(timeout_s: float = 2.0) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the checkout netweave's source lies in, or ``(None, None)`` when it
    lies in none (or git is missing or slow). A checkout counts only when the package is its
    ``src/netweave`` folder, so an installed netweave inside someone else's repository reports none."""
    package = Path(__file__).resolve().parent
    root = package.parent.parent
    if package != root / "src" / "netweave" or not (root / ".git").exists():
        return None, None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=timeout_s)
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    return commit.stdout.strip() or None, (bool(status.stdout.strip()) if status.returncode == 0 else None)


def version_line() -> str:
    """``netweave 0.1.0 (commit 1a2b3c4d5e6f, modified)``: what ``netweave --version`` prints."""
    commit, dirty = git_state()
    where = "" if commit is None else f" (commit {commit[:12]}{', modified' if dirty else ''})"
    return f"netweave {__version__}{where}"


def run_line(run: dict | None = None) -> str:
    """The metadata as one sentence, for reports: ``netweave 0.1.0, commit …, 2026-05-09T10:00:00+00:00
    on HOST; Python 3.11.7, numpy 2.2.6, …; command: netweave compare``."""
    r = run or run_metadata()
    commit = "" if r["git_commit"] is None else f", commit {r['git_commit'][:12]}" + (" (modified)" if r["git_dirty"] else "")
    libs = ", ".join(f"{name} {r[name]}" for name in LIBRARIES if r.get(name))
    return (f"netweave {r['netweave']}{commit}, {r['date_utc']} on {r['host']}; Python {r['python']}"
            + (f", {libs}" if libs else "") + f"; command: {r['command']}")


def csv_columns(run: dict | None = None) -> dict:
    """The metadata as ``run_*`` CSV columns (one value each, the same on every row)."""
    return {f"run_{k}": v for k, v in (run or run_metadata()).items()}
