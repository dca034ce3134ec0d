"""Linux network namespaces and their commands: the host-side primitives the emulated cluster uses.

Everything is done through ``ip``/``tc`` (iproute2) in batch mode, one process per namespace and
step, so a 40-namespace cluster comes up in about a second. Nothing here touches the host's own
network: every interface lives in a namespace that netweave created and names with its prefix.

:func:`missing_requirements` says, in one line each, what this machine lacks (root or
CAP_NET_ADMIN, iproute2) before anything is created.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable

from ...errors import NetweaveError

PREFIX = "nwt"  # every testbed namespace starts with it: nwt<owner pid, base 36>-n<node index>
CAP_NET_ADMIN = 12
MARKER = "netweave-testbed"  # the alias of loopback in every namespace the testbed made: "netweave-testbed PREFIX"


def has_net_admin() -> bool:
    """True when this process may create namespaces and links (root or CAP_NET_ADMIN)."""
    if os.geteuid() == 0:
        return True
    try:
        with open("/proc/self/status") as f:
            caps = next(line for line in f if line.startswith("CapEff:"))
        return bool(int(caps.split()[1], 16) >> CAP_NET_ADMIN & 1)
    except (OSError, StopIteration, ValueError):
        return False


def missing_requirements(*tools: str) -> list[str]:
    """What the testbed needs and this machine lacks, one sentence each (empty: all there)."""
    missing = []
    if not has_net_admin():
        missing.append("root or CAP_NET_ADMIN (network namespaces); run it with sudo")
    for tool in ("ip", "tc", *tools):
        if shutil.which(tool) is None:
            package = {"ip": "iproute2", "tc": "iproute2", "clang": "clang llvm", "bpftool": "bpftool"}.get(tool, tool)
            missing.append(f"the `{tool}` command; install it with apt-get install {package}")
    return missing


def require(*tools: str) -> None:
    """Raise one :class:`NetweaveError` line naming everything :func:`missing_requirements` finds."""
    missing = missing_requirements(*tools)
    if missing:
        raise NetweaveError("the testbed needs " + "; and ".join(missing))


def run(args: list[str], stdin: str | None = None, timeout_s: float = 60.0) -> str:
    """Run one command; a failure is a :class:`NetweaveError` with the command and its first error line."""
    try:
        done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise NetweaveError(f"`{' '.join(args[:6])}` did not finish in {timeout_s:g} s") from None
    if done.returncode:
        first = [line for line in (done.stderr.strip() or done.stdout.strip()).splitlines()
                 if not line.startswith("Warning")]
        raise NetweaveError(f"`{' '.join(args[:6])}` failed: {first[0] if first else f'exit {done.returncode}'}")
    return done.stdout


def batch(tool: str, namespace: str | None, lines: Iterable[str]) -> None:
    """``ip -batch -`` or ``tc -batch -`` (``tool``), in ``namespace`` (None: the host's), with ``lines``."""
    text = "\n".join(lines)
    if not text:
        return
    where = ["-n", namespace] if namespace else []
    run([tool, *where, "-batch", "-"], stdin=text + "\n")


def namespaces(prefix: str = PREFIX) -> list[str]:
    """The namespaces whose name starts with ``prefix``."""
    out = run(["ip", "netns", "list"])
    return [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0].startswith(prefix)]


def mark(namespace: str, prefix: str) -> None:
    """Leave netweave's marker in ``namespace`` (just made): loopback's alias ``netweave-testbed PREFIX``.
    ``testbed down --all`` removes only namespaces that carry it."""
    run(["ip", "-n", namespace, "link", "set", "dev", "lo", "alias", f"{MARKER} {prefix}"])


def marker(namespace: str) -> str | None:
    """The prefix in ``namespace``'s marker (see :func:`mark`), or None when it carries none."""
    import json

    done = subprocess.run(["ip", "-n", namespace, "-j", "link", "show", "dev", "lo"], capture_output=True, text=True)
    try:
        alias = json.loads(done.stdout)[0].get("ifalias", "") if done.returncode == 0 else ""
    except (ValueError, IndexError, AttributeError):
        return None
    tag, _, prefix = str(alias).partition(" ")
    return prefix if tag == MARKER and prefix else None


def pids_by_namespace(names: Iterable[str]) -> dict[str, list[int]]:
    """Namespace → the processes living in it, for those of ``names`` (``ip netns``'s names) that
    exist: one scan of ``/proc`` (as ``ip netns pids`` does), no process started."""
    want = {}
    for ns in names:
        try:
            want[os.stat(f"/run/netns/{ns}").st_ino] = ns
        except OSError:
            continue
    out: dict[str, list[int]] = {ns: [] for ns in want.values()}
    if not want:
        return out
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            ns = want.get(os.stat(f"/proc/{entry.name}/ns/net").st_ino)
        except OSError:  # gone meanwhile
            continue
        if ns is not None:
            out[ns].append(int(entry.name))
    return out


def lives_in(pid: int, namespace: str) -> bool:
    """Whether process ``pid`` is in network namespace ``namespace`` (``ip netns``'s name): the
    test :func:`pids_by_namespace` makes of every process, for one."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{namespace}").st_ino
    except OSError:
        return False


def pids_in(namespace: str) -> list[int]:
    """Processes running in ``namespace`` (all started by netweave: it made the namespace)."""
    return pids_by_namespace([namespace]).get(namespace, [])


def python_in(namespace: str, module: str, *args: str, stderr=subprocess.PIPE) -> subprocess.Popen:
    """``python -m module args`` in ``namespace``, its stdin and stdout piped (text), its stderr
    piped or to ``stderr`` (a file): the agents, routers, PS and workers of a run. Closing its stdin
    tells such a process that its parent is done."""
    import sys

    return subprocess.Popen(["ip", "netns", "exec", namespace, sys.executable, "-m", module, *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)


def interfaces() -> list[str]:
    """The current namespace's interfaces except loopback, sorted (run inside a namespace)."""
    import socket

    return sorted(name for _, name in socket.if_nameindex() if name != "lo")


def delete(names: Iterable[str]) -> list[str]:
    """Kill what runs in each namespace and delete it (its veths go with it); never raises. Returns
    the namespaces that existed and are gone. Callers pass only namespaces netweave made (a record's
    or a marked one's): this kills every process inside."""
    import signal

    names = list(names)
    try:
        existing = set(namespaces(""))
    except NetweaveError:
        existing = set(names)
    gone = []
    for name in names:
        if name not in existing:
            continue
        for pid in pids_in(name):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if subprocess.run(["ip", "netns", "del", name], capture_output=True).returncode == 0:
            gone.append(name)
    return gone
