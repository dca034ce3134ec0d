"""What netweave opens while it runs: local training and a local Ray cluster listen on loopback
only, and a training run leaves nothing in the temporary directory.

Listening sockets are read from ``/proc/net/tcp`` and ``/proc/net/tcp6`` (state ``0A``) and
attributed to processes through the socket inodes in ``/proc/PID/fd``, so that services of other
programs on a shared machine are not counted.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net")

TINY = "rmat:n=300,m=1500,feat=8,classes=3"  # trains in well under a second per epoch


def listening_sockets() -> dict[int, tuple[str, int]]:
    """Every TCP socket in LISTEN state on this machine: inode → (address, port)."""
    out = {}
    for name, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        try:
            rows = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] != "0A":
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            # the kernel prints each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, width, 4))
            ip = ipaddress.IPv4Address(raw) if width == 4 else ipaddress.IPv6Address(raw)
            out[int(fields[9])] = (str(ip), int(port, 16))
    return out


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, or an IPv4-mapped loopback address (``::ffff:127.0.0.1``)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def descendants(root: int) -> set[int]:
    """The PIDs of ``root``'s children, grandchildren, … (from ``/proc/*/stat``)."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def socket_inodes(pids: set[int]) -> dict[int, int]:
    """Socket inode → PID, for the open file descriptors of ``pids``."""
    out = {}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                out[int(target[8:-1])] = pid
    return out


def listeners_of(pids: set[int]) -> dict[tuple[str, int], int]:
    """(address, port) → PID of every listening TCP socket that one of ``pids`` holds."""
    owners = socket_inodes(pids)
    return {where: owners[inode] for inode, where in listening_sockets().items() if inode in owners}


def cli(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """Start ``netweave ARGS`` (output to files: a long JSON report cannot fill a pipe), without the
    ``TORCHINDUCTOR_CACHE_DIR`` that importing PyG in this test process set, as from a shell."""
    base = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    return subprocess.Popen([sys.executable, "-m", "netweave", *args], text=True,
                            env={**base, "NETWEAVE_NO_PROGRESS": "1", **(env or {})}, **kwargs)


@dataclass
class Run:
    """A finished ``netweave train`` run: exit status, stderr, the listening sockets its processes
    held while it ran ((address, port) → PID), and what it left in its (empty at start) TMPDIR."""

    code: int
    stderr: str
    listeners: dict[tuple[str, int], int]
    left_in_tmpdir: list[str]


def train_watched(tmp_path: Path, workers: int, epochs: int) -> Run:
    """Train ``TINY`` on ``workers`` ranks with a fresh TMPDIR, polling the run's listening sockets."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    seen: dict[tuple[str, int], int] = {}
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        run = cli("train", TINY, "--workers", str(workers), "--comm", "allreduce", "--epochs", str(epochs), "--json",
                  env={"TMPDIR": str(scratch)}, stdout=out, stderr=err)
        try:
            deadline = time.monotonic() + 300
            while run.poll() is None and time.monotonic() < deadline:
                seen.update(listeners_of(descendants(run.pid) | {run.pid}))
                time.sleep(0.2)
        finally:
            run.kill()
            run.wait()
    return Run(run.returncode, (tmp_path / "err").read_text(), seen, sorted(p.name for p in scratch.iterdir()))


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Run:
    """One 2-rank run (60 epochs: a few seconds of training) shared by the tests below."""
    pytest.importorskip("torch_geometric")
    return train_watched(tmp_path_factory.mktemp("two-ranks"), 2, 60)


@pytest.mark.slow
def test_local_training_listens_on_loopback_only(two_ranks):
    """Two ranks rendezvous through a file store and bind gloo to loopback: while they train, every
    listening socket of the run's processes is on 127.0.0.1 / ::1, none on 0.0.0.0, :: or another address."""
    assert two_ranks.code == 0, two_ranks.stderr
    assert two_ranks.listeners, "no listening socket seen while the ranks trained: the check saw nothing"
    exposed = {where: pid for where, pid in two_ranks.listeners.items() if not is_loopback(where[0])}
    assert not exposed, f"listening beyond loopback: {exposed}"


@pytest.mark.slow
def test_a_training_run_leaves_nothing_in_the_temporary_directory(two_ranks, tmp_path):
    """PyG's generated modules, the rendezvous store, the heartbeats, torch's compile cache: all in
    the run's own directory, removed at the end (the run's TMPDIR is an empty test folder), with
    two ranks and with one (which trains in the launching process)."""
    assert two_ranks.code == 0, two_ranks.stderr
    assert two_ranks.left_in_tmpdir == []
    pytest.importorskip("torch_geometric")
    one = train_watched(tmp_path, 1, 3)
    assert one.code == 0, one.stderr
    assert one.left_in_tmpdir == []
    assert one.listeners == {}  # one rank opens no socket at all


@pytest.mark.slow
def test_a_local_ray_cluster_listens_on_loopback_only(tmp_path):
    """``sweep --ray local``: while the cases run, every listening socket of the Ray processes this
    test started (GCS, raylet, workers, agents, the driver's own core worker) is on loopback."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from netweave.sweep import sweep

    config = {"kind": "route", "grid": {"algorithm": ["ps", "ecmp"], "seed": [0, 1]},
              "fixed": {"topology": "leafspine:leaves=4,spines=2,hosts=4,ina=0.5,pipelines=2,seed=1", "workers": 6}}
    seen: dict[tuple[str, int], int] = {}
    flag = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")

    def look(_row: dict) -> None:
        seen.update(listeners_of(descendants(os.getpid()) | {os.getpid()}))

    rows = sweep(config, tmp_path / "ray", ray="local", on_result=look)
    assert len(rows) == 4
    assert seen, "no listening socket of a Ray process seen: the check saw nothing"
    exposed = {where: pid for where, pid in seen.items() if not is_loopback(where[0])}
    assert not exposed, f"Ray services listening beyond loopback: {exposed}"
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == flag  # restored after the start
