"""Whether a testbed run measured the network: per interval, how busy the links on the critical
path were and how busy the machine's CPUs were (issue 31).

An emulated cluster shares this machine's cores among its workers' compute, its endpoints, its
switches' data planes and the kernel's forwarding; a run whose CPUs are saturated measures them,
not the links, whatever its step time says. :class:`Accountant` snapshots, at every epoch
boundary,

* every link direction's bytes sent (the kernel's interface counters, in each namespace) and turns
  them into busy time at the link's shaped rate: ``bytes × 8 / rate``; the busiest direction is the
  run's network lower bound (no schedule finishes before its busiest link has sent its bytes);
* the CPUs' busy time (``/proc/stat``: everything that ran, compute, endpoints, softirqs; of the
  hosts' CPUs alone where a run keeps them apart from its switch's, :attr:`Accountant.cpus`);
* the kernel's own accounting of the BPF programs (``kernel.bpf_stats_enabled``: run time and
  packets of the aggregation and pass programs: the data plane's CPU);

and :func:`bound` names what limited the interval: ``network`` when its busiest link was busy
at least :data:`NETWORK_BUSY` of the time the steps were not computing (the workers' forward and
backward passes, which a real cluster runs on its accelerators: what is left is the exchange the
links are measured against), ``cpu`` when the CPUs were at least :data:`CPU_BUSY` busy and the
links were not, ``data-plane`` when neither but the data plane's programs ran at least
:data:`CPU_BUSY` of the exchange's time (a switch pinned to one CPU, the GNN testbed's default,
saturated that CPU while the others idled: on 16 cores the machine is 20 % busy and the switch is
what binds), else ``neither`` (waits: latency, timeouts, stragglers, senders below the links'
rates).

:func:`cpu_floor_s` turns the CPU seconds of a step into the shortest step the machine's cores
allow for that work: a bound on the step below it is out of this machine's reach unless the work
shrinks.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .netns import lives_in, pids_by_namespace

NETWORK_BUSY = 0.8  # the busiest link sent during at least this share of the interval
CPU_BUSY = 0.9  # the CPUs were busy at least this share of the interval
BPF_PROGRAMS = ("stream_aggregate", "ina_aggregate", "pass", "gnn_switch")


def cpu_busy_s(cpus: frozenset[int] | None = None, stat: str | None = None) -> float:
    """Seconds all CPUs (or those of ``cpus``) were busy since boot: ``/proc/stat``'s (or
    ``stat``'s) first line (the per-CPU ``cpuN`` lines of ``cpus``) less idle and iowait."""
    lines = (Path("/proc/stat").read_text() if stat is None else stat).splitlines()
    if cpus is None:
        rows = [lines[0].split()[1:]]
    else:
        rows = [line.split()[1:] for line in lines
                if line.startswith("cpu") and line[3:4].isdigit() and int(line.split()[0][3:]) in cpus]
    total = 0
    for fields in ([int(v) for v in row] for row in rows):
        total += sum(fields[:8]) - fields[3] - (fields[4] if len(fields) > 4 else 0)
    return total / os.sysconf("SC_CLK_TCK")


def bpf_run_time() -> dict[str, tuple[int, int]]:
    """Program name → (run time ns, runs) over the loaded programs of :data:`BPF_PROGRAMS` (zeros
    unless ``kernel.bpf_stats_enabled`` is 1)."""
    done = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True)
    try:
        progs = json.loads(done.stdout or "[]")
    except ValueError:
        return {}
    out: dict[str, tuple[int, int]] = {}
    for p in progs:
        if p.get("name") in BPF_PROGRAMS:
            t, n = out.get(p["name"], (0, 0))
            out[p["name"]] = (t + p.get("run_time_ns", 0), n + p.get("run_cnt", 0))
    return out


def tx_bytes(net_dev: str) -> dict[str, int]:
    """Interface → bytes sent, from the text of ``/proc/net/dev`` (two header lines, then per
    interface ``name: `` and 8 receive counters before the bytes sent)."""
    out = {}
    for line in net_dev.splitlines()[2:]:
        name, sep, counters = line.partition(":")
        fields = counters.split()
        if sep and len(fields) > 8:
            out[name.strip()] = int(fields[8])
    return out


def residents(namespaces: list[str]) -> dict[str, int]:
    """Namespace → one process living in it, for those of ``namespaces`` (``ip netns``'s names)
    that have one (:func:`~.netns.pids_by_namespace`: a scan of ``/proc``, no process started)."""
    return {ns: pids[0] for ns, pids in pids_by_namespace(namespaces).items() if pids}


class bpf_stats:
    """``with bpf_stats():`` — the kernel accounts BPF programs' run time inside the block (it
    costs a clock read per run), as it was before after it."""

    PATH = Path("/proc/sys/kernel/bpf_stats_enabled")

    def __enter__(self):
        try:
            self.previous = self.PATH.read_text().strip()
            self.PATH.write_text("1")
        except OSError:
            self.previous = None
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            self.PATH.write_text(self.previous)


@dataclass
class Snapshot:
    """The counters at one instant: per (node, neighbour) bytes sent, CPU busy seconds, BPF time."""

    t: float
    sent: dict[tuple[str, str], int]
    cpu_s: float
    bpf: dict[str, tuple[int, int]]


@dataclass
class Accountant:
    """Snapshots of a cluster (a :class:`~.cluster.ClusterPlan`) and what each interval between two
    of them was bound by."""

    cluster: object
    snapshots: list[Snapshot] = field(default_factory=list)
    resident: dict[str, int] = field(default_factory=dict)  # namespace → a process living in it
    cpus: frozenset[int] | None = None  # the CPUs whose busy share counts (the hosts'); None: all of them

    def sent_in(self, namespace: str) -> dict[str, int]:
        """Interface → bytes it sent, in ``namespace``: the kernel's counters as a process living
        there sees them (``/proc/PID/net/dev``, read here: a snapshot starts no process while the
        run's epochs go on), else from ``ip -s link`` (a namespace without a process of its own)."""
        pid = self.resident.get(namespace)
        if pid is not None:
            try:
                sent = tx_bytes(Path(f"/proc/{pid}/net/dev").read_text())
                if lives_in(pid, namespace):  # still there: the counters were that namespace's
                    return sent
            except OSError:
                pass
            del self.resident[namespace]
        done = subprocess.run(["ip", "-n", namespace, "-j", "-s", "link", "show"], capture_output=True, text=True)
        return {link["ifname"]: link["stats64"]["tx"]["bytes"] for link in json.loads(done.stdout or "[]")
                if "stats64" in link}

    def snapshot(self) -> Snapshot:
        sent = {}
        missing = [ns for ns in self.cluster.namespace.values() if ns not in self.resident]
        if missing:
            self.resident |= residents(missing)
        for node, ns in self.cluster.namespace.items():
            by_name = self.sent_in(ns)
            for peer in self.cluster.neighbours(node):
                sent[node, peer] = int(by_name.get(self.cluster.interface[node, peer], 0))
        snap = Snapshot(time.monotonic(), sent, cpu_busy_s(self.cpus), bpf_run_time())
        self.snapshots.append(snap)
        return snap

    def interval(self, a: Snapshot, b: Snapshot, steps: int, busy_s: float | None = None,
                 compute_s: float = 0.0, exchange_s: float | None = None, data_plane_cpus: int = 1) -> dict:
        """What limited the interval between snapshots ``a`` and ``b`` of ``steps`` steps, of which
        ``busy_s`` (default: all of it) were the steps themselves and ``compute_s`` their compute
        (the links' share is of the steps, and for :func:`bound` of the steps less their compute);
        ``exchange_s`` (default: the steps less their compute) is the time the data plane had
        work on its ``data_plane_cpus`` CPUs, which its CPU seconds are a share of."""
        wall = b.t - a.t
        busy = {}
        for key in b.sent:
            kbit = self.cluster.shaping[key].rate_kbit
            busy[key] = (b.sent[key] - a.sent.get(key, 0)) * 8 / (kbit * 1e3)
        (node, peer), link_s = max(busy.items(), key=lambda kv: kv[1]) if busy else (("", ""), 0.0)
        cpus = len(self.cpus) if self.cpus else os.cpu_count() or 1
        cpu_share = (b.cpu_s - a.cpu_s) / (wall * cpus) if wall > 0 else 0.0
        bpf = {name: (b.bpf.get(name, (0, 0))[0] - a.bpf.get(name, (0, 0))[0],
                      b.bpf.get(name, (0, 0))[1] - a.bpf.get(name, (0, 0))[1]) for name in b.bpf}
        steps_s = busy_s if busy_s else wall
        link_share = link_s / steps_s if steps_s > 0 else 0.0
        stepping_s = steps_s - compute_s
        exchange_share = min(1.0, link_s / stepping_s) if stepping_s > 0 else link_share
        data_plane_s = sum(t for t, _ in bpf.values()) / 1e9
        window = stepping_s if exchange_s is None else exchange_s
        data_plane_share = data_plane_s / (window * data_plane_cpus) if window > 0 else 0.0
        return {"busiest_link": f"{node}->{peer}", "busiest_link_s_per_step": link_s / max(steps, 1),
                "busiest_link_busy": link_share, "busiest_link_busy_exchanging": exchange_share, "cpu_busy": cpu_share,
                "cpu_count": cpus, "cpu_s_per_step": (b.cpu_s - a.cpu_s) / max(steps, 1),
                "data_plane_cpu_s_per_step": data_plane_s / max(steps, 1), "data_plane_busy": data_plane_share,
                "data_plane_ns_per_packet": {name: t / n for name, (t, n) in bpf.items() if n},
                "bound": bound(exchange_share, cpu_share, data_plane_share)}


def bound(link_share: float, cpu_share: float, data_plane_share: float = 0.0) -> str:
    """``network``, ``cpu``, ``data-plane`` or ``neither`` (see the module docstring)."""
    if link_share >= NETWORK_BUSY:
        return "network"
    if cpu_share >= CPU_BUSY:
        return "cpu"
    if data_plane_share >= CPU_BUSY:
        return "data-plane"
    return "neither"


def cpu_floor_s(cpu_s_per_step: float, cpus: int, data_plane_s_per_step: float = 0.0,
                data_plane_cpus: int = 0) -> float:
    """The shortest step these CPUs allow for the work an interval measured (s): its CPU seconds a
    step (``cpu_s_per_step``, everything that ran on the ``cpus`` counted: compute, endpoints,
    softirqs, the data plane where it shares them) spread evenly over ``cpus``; where a run pins
    its data plane to ``data_plane_cpus`` (of its own, or shared with the hosts: it runs on no
    other), that plane's ``data_plane_s_per_step`` over those, whichever is longer. A step no CPU
    idles in takes this long; a bound on the step below it cannot be met on this machine, by any
    schedule, unless the work itself shrinks by ``1 - bound / floor``. Part of it can: a process that wakes for a few packets does more work
    a packet than one that finds many queued (the GNN testbed's INA epoch took 1.02 CPU-s at 0.025
    Gb/s and 0.69 at 0.1 on 2 cores, its workers receiving 7.4 and 9.9 packets a wake-up on
    amazon_cs); the data plane's programs' time a packet changes little."""
    hosts = cpu_s_per_step / max(cpus, 1)
    return max(hosts, data_plane_s_per_step / data_plane_cpus) if data_plane_cpus else hosts


def scale_to_bind(scale: float, link_share: float) -> float:
    """A ``--scale`` at which an interval that was CPU-bound at ``scale`` would be network-bound,
    from its own counters: the CPU's work per step does not depend on the links' rate, the links'
    time goes as ``1 / scale``; at ``scale × link_share`` the busiest link alone takes the whole
    CPU-bound step, and :data:`NETWORK_BUSY` more of margin makes it the longer of the two."""
    return float(f"{scale * max(link_share, 1e-6) * NETWORK_BUSY:.2g}")

