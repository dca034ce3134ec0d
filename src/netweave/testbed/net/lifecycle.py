"""Bringing a :class:`~.cluster.ClusterPlan` up, and down again on every exit path.

* :func:`up` creates the namespaces (each marked at once: :func:`.netns.mark`), sysctls, veth
  pairs, addresses, routes and qdiscs; a failure half-way removes what was made and raises one line.
* :class:`Testbed` is the context a run uses: it records the cluster in :data:`STATE_DIR`, removes
  it on leaving (also on errors), on SIGTERM/SIGINT/SIGHUP and at interpreter exit.
* A run killed with SIGKILL cannot clean up; :func:`down` (``netweave testbed down``) removes the
  clusters whose recorded owner is gone, and those ``testbed up`` left on purpose.

The testbed runs as root, so it removes only what it made: a cluster's record lists its
namespaces by their exact names, and :func:`down` deletes those and nothing else; ``--all`` adds
the namespaces that carry netweave's marker (loopback's alias ``netweave-testbed PREFIX``, set the
moment each was made). A namespace someone else made, whatever its name, is never touched.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NetweaveError
from . import netns
from .cluster import ClusterPlan
from .impair import impair_object as impairment_program

STATE_DIR = Path(os.environ.get("NETWEAVE_TESTBED_STATE", "/run/netweave-testbed"))
PREFIX_RULE = re.compile(netns.PREFIX + r"[0-9a-z]{1,13}")  # nwt + a PID in base 36


def up(plan: ClusterPlan) -> None:
    """Create everything ``plan`` describes (as root); on failure remove it and raise one line."""
    netns.require(*(("clang",) if plan.impairment else ()))
    impair_object = str(impairment_program(plan.impairment)) if plan.impairment else None
    made = []
    try:
        for node, ns in plan.namespace.items():
            netns.run(["ip", "netns", "add", ns])
            made.append(ns)
            netns.mark(ns, plan.prefix)
            netns.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", *plan.sysctls(node)])
        netns.batch("ip", None, plan.link_batch())
        for node, ns in plan.namespace.items():
            netns.batch("ip", ns, plan.node_batch(node))
            netns.batch("tc", ns, plan.tc_batch(node, impair_object))
    except BaseException:
        netns.delete(made)
        raise


def _state_file(prefix: str) -> Path:
    return STATE_DIR / f"{prefix}.json"


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/PID/stat``), None if it is gone:
    with the PID it tells a live owner from a later process that reuses its PID."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _state_dir() -> Path:
    """:data:`STATE_DIR`, made private to this user (0700) when missing; refused when another user
    may write in it (records there decide what root deletes)."""
    STATE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = STATE_DIR.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise NetweaveError(f"{STATE_DIR}: the testbed's records must be in a directory owned by this user and "
                            f"writable by no one else; fix it with chown {os.geteuid()} {STATE_DIR} && "
                            f"chmod 700 {STATE_DIR}")
    return STATE_DIR


def record(plan: ClusterPlan, keep: bool = False) -> None:
    """Note the cluster (its owner and when it started, its namespaces, scale) so that :func:`down`
    can find it later."""
    pid = os.getpid()
    _state_dir()
    _state_file(plan.prefix).write_text(json.dumps({
        "prefix": plan.prefix, "owner_pid": pid, "owner_start": _start_time(pid), "keep": keep,
        "topology": plan.topology.name, "scale": plan.scale, "namespaces": list(plan.namespace.values()),
        "nodes": list(plan.namespace), "created": time.time()}))


def create(plan: ClusterPlan, keep: bool = False) -> None:
    """Record the cluster (``keep``: for ``testbed down``, not its owner, to remove) and bring it up;
    on failure remove whatever was made, record included."""
    record(plan, keep)
    try:
        up(plan)
    except BaseException:
        remove(plan.prefix, plan.namespace.values())
        raise


def remove(prefix: str, namespaces) -> list[str]:
    """Delete ``namespaces`` of the cluster ``prefix`` (what runs in them too) and its record;
    returns the namespaces that existed and are gone."""
    gone = netns.delete(namespaces)
    _state_file(prefix).unlink(missing_ok=True)
    return gone


@dataclass(frozen=True)
class ClusterRecord:
    """A cluster as :func:`record` noted it: ``namespaces`` by exact name (each ``PREFIX-nINDEX``)."""

    prefix: str
    namespaces: tuple[str, ...]
    owner_pid: int
    owner_start: int | None
    keep: bool

    @property
    def owner_alive(self) -> bool:
        """The recording process still runs (same PID and the same start time)."""
        start = _start_time(self.owner_pid)
        return start is not None and (self.owner_start is None or start == self.owner_start)


def _read_record(path: Path) -> ClusterRecord | None:
    """The record in ``path``, or None when it is not one :func:`record` wrote (wrong name, shape,
    or namespaces that are not this prefix's)."""
    try:
        data = json.loads(path.read_text())
        prefix = data["prefix"]
        names = data["namespaces"]
        pid, start, keep = data["owner_pid"], data.get("owner_start"), data.get("keep", False)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    own = re.compile(re.escape(path.stem) + r"-n[0-9]{1,6}")
    if (prefix != path.stem or not isinstance(names, list) or not all(isinstance(n, str) and own.fullmatch(n) for n in names)
            or type(pid) is not int or pid <= 0 or not (start is None or type(start) is int) or type(keep) is not bool):
        return None
    return ClusterRecord(prefix, tuple(names), pid, start, keep)


def records() -> tuple[list[ClusterRecord], list[str]]:
    """The clusters recorded in :data:`STATE_DIR`, and the files there that are not records (left alone)."""
    if not STATE_DIR.exists():
        return [], []
    found, unreadable = [], []
    for path in sorted(_state_dir().glob("*.json")):
        rec = _read_record(path) if PREFIX_RULE.fullmatch(path.stem) and path.is_file() else None
        (found.append(rec) if rec else unreadable.append(path.name))
    return found, unreadable


def marked_namespaces() -> dict[str, str]:
    """Namespace → prefix, for every namespace that carries netweave's marker and whose name is
    that prefix's (``PREFIX-nINDEX``)."""
    out = {}
    for ns in netns.namespaces(netns.PREFIX):
        prefix = netns.marker(ns)
        if prefix and PREFIX_RULE.fullmatch(prefix) and re.fullmatch(re.escape(prefix) + r"-n[0-9]{1,6}", ns):
            out[ns] = prefix
    return out


@dataclass
class DownResult:
    """What :func:`down` did. ``removed``: the prefixes whose namespaces it deleted; ``namespaces``:
    how many; ``cleared``: records of clusters already gone (nothing to delete); ``running``:
    recorded clusters left because their owner runs (``--all`` removes them); ``ignored``: files in
    the state directory that are not records, left alone."""

    removed: list[str] = field(default_factory=list)
    namespaces: int = 0
    cleared: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {"removed": self.removed, "namespaces_removed": self.namespaces, "records_cleared": self.cleared,
                "left_running": self.running, "ignored_files": self.ignored}


def down(all_clusters: bool = False) -> DownResult:
    """Remove the recorded clusters that ``testbed up`` left or whose owner is gone; with
    ``all_clusters`` every recorded cluster and every namespace that carries netweave's marker.
    Nothing else is touched (see the module docstring)."""
    netns.require()
    result = DownResult()
    found, result.ignored = records()
    removed: dict[str, int] = {}
    for rec in found:
        if not (all_clusters or rec.keep or not rec.owner_alive):
            result.running.append(rec.prefix)
            continue
        gone = remove(rec.prefix, rec.namespaces)
        if gone:
            removed[rec.prefix] = removed.get(rec.prefix, 0) + len(gone)
        else:
            result.cleared.append(rec.prefix)
    if all_clusters:
        for ns, prefix in marked_namespaces().items():
            if netns.delete([ns]):
                removed[prefix] = removed.get(prefix, 0) + 1
    result.removed, result.namespaces = sorted(removed), sum(removed.values())
    return result


class Testbed:
    """``with Testbed(plan) as plan:`` — the cluster exists inside the block and is removed when
    the block ends, however it ends (exception, SIGTERM, SIGINT, SIGHUP, interpreter exit)."""

    __test__ = False  # not a pytest test class, despite its name

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self, plan: ClusterPlan):
        self.plan = plan
        self._previous = {}
        self._removed = False
        self._pending: int | None = None  # a signal that came while the cluster was being removed

    def __enter__(self) -> ClusterPlan:
        netns.require()
        clash = sorted(set(netns.namespaces(self.plan.prefix + "-")) & set(self.plan.namespace.values()))
        if clash:
            raise NetweaveError(f"namespace {clash[0]} exists already; run `netweave testbed down` first")
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        atexit.register(self._remove)
        try:
            create(self.plan)
        except BaseException:
            self._remove()  # restores the signal handlers
            raise
        return self.plan

    def __exit__(self, *exc) -> None:
        self._remove()

    def _on_signal(self, signum, frame) -> None:
        self._pending = signum
        self._remove()  # returns at once while a removal is under way: that one ends the process when done

    def _remove(self) -> None:
        """Remove the cluster once. A signal that comes meanwhile waits for the removal to end, then
        ends the process (``timeout`` signals a whole process group: the workers die, their owner
        starts removing the cluster, and the same signal reaches the owner in the middle of it)."""
        if self._removed:
            return
        self._removed = True
        try:
            remove(self.plan.prefix, self.plan.namespace.values())
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            atexit.unregister(self._remove)
        signum, self._pending = self._pending, None
        if signum is not None:
            raise SystemExit(128 + signum) if signum != signal.SIGINT else KeyboardInterrupt()
