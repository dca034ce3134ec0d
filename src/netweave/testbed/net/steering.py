"""Where the kernel processes an emulated switch's packets: one CPU, as a switch's pipeline is one
resource of its own (issue 32; ``pin_switch``, the default).

On this machine a switch port's packets are handled on whichever CPU sent them or whose HTB timer
released them; a data plane whose aggregators two CPUs update at once can spend half its time
moving their cache lines between the cores and waiting on their locks (measured on reddit-like:
85-95 ns a cell in some runs, 158-170 in others, against a steady 83-85 ns on one CPU). :func:`steer_receive` sets Receive
Packet Steering (``rps_cpus``) on the switch's own ports so that one CPU runs all of it; :class:`backlog_at_least` raises the kernel's
per-CPU input queue (``net.core.netdev_max_backlog``, 1,000 packets by default, global) for the
run, since the one CPU now queues what eight ports deliver at once and a full queue drops (an
unpinned switch's runs raise it too: each sender's CPU then queues the switch's work behind its own
sends).
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import NetweaveError

BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")
RUN_BACKLOG = 1 << 16  # packets: a block's units from every worker at once, with room


def switch_cpus(shards: int, allowed: set[int] | None = None) -> list[int]:
    """The CPUs of a pinned switch of ``shards`` shards: the highest ``shards`` of ``allowed`` (this
    process's CPUs, by default), ascending; shard ``s`` runs on the ``s``-th. Only CPUs this process
    may use, so a run confined to some CPUs (``taskset``, a container's cpuset, which need not be
    contiguous) keeps its switch among them."""
    mine = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    if not 1 <= shards <= len(mine):
        raise NetweaveError(f"--switch-cpus {shards}: this process may use {len(mine)} CPUs; give 1 to {len(mine)}")
    return mine[-shards:]


def host_cpus(switch: list[int], workers: int, allowed: set[int] | None = None) -> frozenset[int] | None:
    """The CPUs the hosts' processes (the workers, the switch agent, background traffic) run on so
    that none shares a CPU with the switch's data plane (``switch``, its shards' CPUs): those
    of ``allowed`` (this process's, by default) the switch leaves free, when they are at least one a
    worker, as in a cluster, where each host has its own CPUs and the switch its own pipelines.
    Otherwise None: the hosts share every CPU, as on a small machine the switch's CPUs idle between
    its packets and the workers need them. Beyond the paper; without it a worker scheduled on a
    switch CPU loses its time to the switch's softirq (a straggler every worker waits for), and
    the switch, once its work overflows into ``ksoftirqd``, waits for the worker's time slice."""
    allowed = set(os.sched_getaffinity(0)) if allowed is None else set(allowed)
    free = frozenset(allowed - set(switch))
    return free if switch and len(free) >= max(1, workers) else None


def steer_receive(interfaces: list[str], cpu: int | list[int], sysfs: Path = Path("/sys/class/net")) -> None:
    """Every receive queue of ``interfaces`` (in the caller's network namespace, whose ``/sys`` this
    is: ``ip netns exec`` mounts it) handled on ``cpu`` (a list: on those CPUs, a flow to each by
    its hash). The interfaces are the run's own, created with its namespace and removed with it:
    nothing to restore."""
    cpus = [cpu] if isinstance(cpu, int) else list(cpu)
    if not cpus or not all(0 <= c < 1024 for c in cpus):
        raise NetweaveError(f"CPU {cpu}: not a CPU of this machine")
    mask = sum(1 << c for c in set(cpus))
    words = []
    while True:  # the kernel's bitmap format: 32-bit hex words, most significant first, comma-separated
        words.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
        if not mask:
            break
    text = ",".join(reversed(words))
    for name in interfaces:
        if "/" in name or name in (".", "..") or not name:
            raise NetweaveError(f"interface {name!r}: not an interface name")
        queues = sorted((sysfs / name / "queues").glob("rx-*"))
        if not queues:
            raise NetweaveError(f"interface {name}: no receive queues under {sysfs / name / 'queues'}")
        for q in queues:
            (q / "rps_cpus").write_text(text)


class backlog_at_least:
    """``with backlog_at_least(n):`` — ``net.core.netdev_max_backlog`` is at least ``n`` inside the
    block; afterwards it is put back, unless someone else changed it meanwhile (then it stays as
    they left it). Without the right to write it, nothing changes."""

    def __init__(self, packets: int = RUN_BACKLOG, path: Path = BACKLOG):
        self.packets, self.path = packets, path
        self.previous: str | None = None

    def __enter__(self):
        try:
            before = self.path.read_text().strip()
            if int(before) < self.packets:
                self.path.write_text(str(self.packets))
                self.previous = before
        except (OSError, ValueError):
            self.previous = None
        return self

    def __exit__(self, *exc):
        if self.previous is None:
            return
        try:
            if self.path.read_text().strip() == str(self.packets):
                self.path.write_text(self.previous)
        except OSError:
            pass
