"""Bringing a :class:`~.cluster.ClusterPlan` up, and down again on every exit path.

* :func:`up` creates the namespaces, sysctls, veth pairs, addresses, routes and qdiscs; a failure
  half-way removes what was made and raises one line.
* :class:`Testbed` is the context a run uses: it records the cluster in :data:`STATE_DIR`, removes
  it on leaving (also on errors), on SIGTERM/SIGINT/SIGHUP and at interpreter exit.
* A run killed with SIGKILL cannot clean up; :func:`down` (``netweave testbed down``) removes every
  cluster whose owner is gone, and those ``testbed up`` left on purpose.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import time
from pathlib import Path

from ..errors import NetweaveError
from . import netns
from .cluster import ClusterPlan

STATE_DIR = Path(os.environ.get("NETWEAVE_TESTBED_STATE", "/run/netweave-testbed"))


def up(plan: ClusterPlan) -> None:
    """Create everything ``plan`` describes (as root); on failure remove it and raise one line."""
    netns.require(*(("clang",) if plan.impairment else ()))
    impair_object = None
    if plan.impairment:
        from .xdp import compile_program

        impair_object = str(compile_program("impair.bpf.c", plan.impairment.defines()))
    made = []
    try:
        for node, ns in plan.namespace.items():
            netns.run(["ip", "netns", "add", ns])
            made.append(ns)
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


def record(plan: ClusterPlan, keep: bool = False) -> None:
    """Note the cluster (its owner, namespaces, scale) so that :func:`down` can find it later."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    _state_file(plan.prefix).write_text(json.dumps({
        "prefix": plan.prefix, "owner_pid": os.getpid(), "keep": keep, "topology": plan.topology.name,
        "scale": plan.scale, "namespaces": list(plan.namespace.values()), "created": time.time()}))


def create(plan: ClusterPlan, keep: bool = False) -> None:
    """Record the cluster (``keep``: for ``testbed down``, not its owner, to remove) and bring it up;
    on failure remove whatever was made, record included."""
    record(plan, keep)
    try:
        up(plan)
    except BaseException:
        remove(plan.prefix)
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove(prefix: str) -> None:
    """Delete the namespaces of the cluster ``prefix`` (and what runs in them) and its record."""
    netns.delete(netns.namespaces(prefix + "-"))
    _state_file(prefix).unlink(missing_ok=True)


def down(all_clusters: bool = False) -> list[str]:
    """Remove the clusters ``testbed up`` left and those whose owner died; with ``all_clusters``
    every netweave cluster. Returns the prefixes removed."""
    netns.require()
    records = {}
    for path in STATE_DIR.glob(f"{netns.PREFIX}*.json") if STATE_DIR.is_dir() else []:
        try:
            records[path.stem] = json.loads(path.read_text())
        except (OSError, ValueError):
            records[path.stem] = {}
    prefixes = {ns.split("-", 1)[0] for ns in netns.namespaces()} | set(records)
    removed = []
    for prefix in sorted(prefixes):
        info = records.get(prefix, {})
        owner = info.get("owner_pid")
        if all_clusters or info.get("keep") or owner is None or not _alive(owner):
            remove(prefix)
            removed.append(prefix)
    return removed


class Testbed:
    """``with Testbed(plan) as plan:`` — the cluster exists inside the block and is removed when
    the block ends, however it ends (exception, SIGTERM, SIGINT, SIGHUP, interpreter exit)."""

    __test__ = False  # not a pytest test class, despite its name

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self, plan: ClusterPlan):
        self.plan = plan
        self._previous = {}
        self._removed = False

    def __enter__(self) -> ClusterPlan:
        netns.require()
        if netns.namespaces(self.plan.prefix + "-"):
            raise NetweaveError(f"namespaces {self.plan.prefix}-* exist already; run `netweave testbed down` first")
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
        self._remove()
        raise SystemExit(128 + signum) if signum != signal.SIGINT else KeyboardInterrupt()

    def _remove(self) -> None:
        if self._removed:
            return
        self._removed = True
        remove(self.plan.prefix)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        atexit.unregister(self._remove)
