"""Run the ``netweave`` command on hostile input, bounded in memory and time.

:func:`netweave_cli` runs ``python -m netweave ARGS`` in a subprocess whose address space is
capped with ``RLIMIT_AS`` (so a regression that tries to expand a bomb fails with a
``MemoryError`` instead of swapping the machine) and which is killed after a timeout, in an empty
working directory, and reports what it printed and which files it left there.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

MEMORY_LIMIT = 3 * 2**30  # the CLI maps ~0.5 GB at start-up; every hostile input must stay far below this
TIMEOUT_S = 60  # generous for a loaded machine; a case normally takes about a second


@dataclass
class CliRun:
    """What one CLI run did: exit status, output, and the files it created in its working directory."""

    rc: int
    stdout: str
    stderr: str
    written: list[str]

    @property
    def error_lines(self) -> list[str]:
        """The non-empty lines of stderr."""
        return [line for line in self.stderr.splitlines() if line.strip()]


def _limit_memory(limit: int):
    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


@pytest.fixture
def netweave_cli(tmp_path):
    """``run(*args, memory=MEMORY_LIMIT, timeout=TIMEOUT_S) -> CliRun`` for ``netweave ARGS``."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = dict(os.environ, NETWEAVE_NO_PROGRESS="1", NO_COLOR="1", COLUMNS="200", PYTHONDONTWRITEBYTECODE="1")

    def run(*args: str, memory: int = MEMORY_LIMIT, timeout: float = TIMEOUT_S) -> CliRun:
        before = set(cwd.rglob("*"))
        try:
            proc = subprocess.run([sys.executable, "-m", "netweave", *map(str, args)], cwd=cwd, env=env,
                                  capture_output=True, text=True, errors="backslashreplace",
                                  timeout=timeout, preexec_fn=_limit_memory(memory))
        except subprocess.TimeoutExpired:
            pytest.fail(f"netweave {' '.join(map(str, args))} ran past {timeout} s (killed)")
        written = sorted(str(p.relative_to(cwd)) for p in set(cwd.rglob("*")) - before)
        return CliRun(proc.returncode, proc.stdout, proc.stderr, written)

    return run


@pytest.fixture
def inputs(tmp_path) -> Path:
    """A folder for the hostile input files, outside the CLI's working directory."""
    path = tmp_path / "inputs"
    path.mkdir()
    return path
