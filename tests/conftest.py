"""Shared fixtures: the real datasets in ../shared/data (skipped when absent) and small graphs."""

import os
import socket
from pathlib import Path

import numpy as np
import pytest

from netweave.graph import Graph, from_edges

# no progress lines in the tests' captured stderr (tests/test_progress.py turns them on where it checks them)
os.environ["NETWEAVE_NO_PROGRESS"] = "1"

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NETWEAVE_SHARED_DATA") or REPO.parent / "shared" / "data")


@pytest.fixture(scope="session")
def shared() -> Path:
    """Root of the real datasets; tests that need it are skipped where it does not exist."""
    if not SHARED.is_dir():
        pytest.skip(f"real datasets not found at {SHARED} (set NETWEAVE_SHARED_DATA)")
    return SHARED


def random_graph(n: int, m: int, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    return from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


@pytest.fixture(params=[0, 1, 2])
def small_graph(request) -> Graph:
    """Random multigraph inputs of 60 vertices, simplified by from_edges."""
    return random_graph(60, 150, request.param)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session", autouse=True)
def private_tempdir(tmp_path_factory):
    """Tests that train in this process (the trainer called directly) make PyG write its generated
    modules to the temporary directory: point it at the session's own, so the suite leaves
    nothing in /tmp either (runs through the launcher do this themselves)."""
    import tempfile

    directory = str(tmp_path_factory.mktemp("tmp"))
    old_env, old_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = directory, directory
    yield directory
    tempfile.tempdir = old_dir
    if old_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old_env
