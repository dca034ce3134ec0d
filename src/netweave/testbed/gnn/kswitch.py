"""Loading the kernel data plane (``gnn/bpf/gnn_switch.bpf.c``) into the switch's namespace:
libbpf through ctypes, the maps sized to the plan and to the switch's memory, the tables written
(:mod:`.tables`), the program attached at the tc ingress of every port (clsact, direct action;
detached and its hook removed at :meth:`KernelSwitch.close`). With several shards (beyond the
paper) the switch also makes a device per shard, each handled on its own CPU, whose ingress
the program hands a UNIT packet to for that shard's touches; they go at :meth:`KernelSwitch.close`.

The switch agent (:mod:`.switch`) does this when its ``dataplane`` is ``xdp`` and keeps it loaded
while it serves; :meth:`KernelSwitch.counters` and :meth:`KernelSwitch.run_stats` (the kernel's
BPF run-time statistics: ``kernel.bpf_stats_enabled``) report what it did and what it cost.
"""

from __future__ import annotations

import ctypes
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import NetweaveError
from ..net import netns
from ..net.bpf import TcObject, compile_program, possible_cpus
from ..net.steering import steer_receive
from ..programs import program
from .tables import MAX_SHARDS, MAX_WORKERS, SwitchTables

SOURCE = "gnn/bpf/gnn_switch.bpf.c"
COUNTERS = ("units", "duplicates", "aggregated", "sums", "copies", "dones", "nexts", "pulls", "resends", "bad",
            "saturated", "clone_dropped", "stale", "cnps", "ends", "cell_ns", "clone_ns", "cleared", "convert_ns",
            "sharded", "off_cpu", "packed", "sum_packets", "converted", "touched", "subsets", "subset_ns")  # the counters enum of the bpf source
PORT = struct.Struct("<I4s6s6s")  # the program's struct port
CONFIG = struct.Struct(f"<III4sQIIII{MAX_SHARDS}I")  # ... and struct config
TIMED = ("cell_ns", "convert_ns", "clone_ns")  # the counters of the program's timed parts
SHARD_DEVICE = "nwshard{}"  # a shard's device in the switch's namespace (made and removed here)


@dataclass(frozen=True)
class Port:
    """A switch port toward worker ``rank``: its interface (in the switch's namespace), the
    worker's address and its uplink's MAC, the port's own MAC."""

    interface: str
    address: str
    mac: str
    own_mac: str


def _mac(text: str) -> bytes:
    parts = text.split(":")
    if len(parts) != 6:
        raise NetweaveError(f"{text!r} is not a MAC address")
    return bytes(int(p, 16) for p in parts)


class KernelSwitch(TcObject):
    """The data plane loaded with ``tables``, attached to ``ports`` (rank → :class:`Port`); with
    ``cpus`` (one a shard of the tables, :func:`~..net.steering.switch_cpus`), shard ``s``'s packets
    are handled on ``cpus[s]`` alone (:func:`~..net.steering.steer_receive`), which adds into its
    aggregators without their locks, and the ports' packets are spread over the same CPUs. Tables
    of more than one shard need them."""

    def __init__(self, tables: SwitchTables, ports: dict[int, Port], address: str, switch_port: int, worker_port: int,
                 obj: Path | None = None, *, cpus: list[int] | tuple[int, ...] = ()):
        if not ports or len(ports) > MAX_WORKERS or sorted(ports) != list(range(len(ports))):
            raise NetweaveError(f"the kernel data plane needs ports for workers 0..n-1 (n <= {MAX_WORKERS})")
        shards = tables.shards
        if (cpus or shards > 1) and len(set(cpus)) != shards:
            raise NetweaveError(f"tables of {shards} shards, switch CPUs {list(cpus)}: give one CPU a shard")
        tables.check(len(ports))
        self.tables, self.ports, self.shards = tables, ports, shards
        self.cpus = list(cpus)  # shard i's CPU
        self.shard_devices: list[str] = []
        sizes = {"units": max(1, tables.units.size), "packets": max(1, tables.packets.size),
                 "touches": max(1, tables.touches.size), "aggs": tables.entries,
                 "seen": tables.seen, "owed": max(1, tables.owed.size), "addends": possible_cpus()}
        build = program("gnn switch, pinned" if self.cpus else "gnn switch, locks")  # pinned: no locks (see the source)
        obj = obj or compile_program(SOURCE, build.define_values())
        super().__init__(obj, "gnn_switch", [], sizes, "the GNN switch's data plane")
        f = self.lib.bpf_map_update_batch
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        try:
            if shards > 1:
                self._make_shard_devices()
            self._configure(address, switch_port, worker_port)
            self.attach_tc([p.interface for p in self.ports.values()] + self.shard_devices, egress=False)
            if self.cpus:  # one CPU runs the data plane (no aggregator shared by two cores), or one a shard
                steer_receive([p.interface for p in self.ports.values()], self.cpus)
                for device, c in zip(self.shard_devices, self.cpus):
                    steer_receive([device], c)
        except BaseException:
            self.close()
            raise

    def _make_shard_devices(self) -> None:
        """A device a shard (a veth pair whose other end is unused: kernels without the dummy
        device have veth), up, in this namespace (the switch's); recorded as made here."""
        for i in range(self.shards):
            name = SHARD_DEVICE.format(i)
            netns.run(["ip", "link", "add", name, "type", "veth", "peer", "name", name + "p"])
            self.shard_devices.append(name)
            for end in (name, name + "p"):
                netns.run(["ip", "link", "set", "dev", end, "up"])

    def close(self) -> None:
        try:
            super().close()
        finally:
            for name in self.shard_devices:  # only the devices this switch made (its namespace's end takes them too)
                try:
                    netns.run(["ip", "link", "del", "dev", name])
                except NetweaveError:
                    pass
            self.shard_devices = []

    def _write(self, name: str, values: np.ndarray) -> None:
        """Entries ``0..len-1`` of array map ``name``, in batches."""
        fd, step = self.fd(name), 1 << 16
        values = np.ascontiguousarray(values)
        for at in range(0, values.size, step):
            part = values[at:at + step]
            keys = np.arange(at, at + part.size, dtype=np.uint32)
            count = ctypes.c_uint32(part.size)
            if self.lib.bpf_map_update_batch(fd, keys.ctypes.data, part.ctypes.data, ctypes.byref(count), None):
                for i in range(part.size):  # a kernel without batch updates of arrays
                    self.update(name, struct.pack("<I", at + i), part[i:i + 1].tobytes())

    def _configure(self, address: str, switch_port: int, worker_port: int) -> None:
        t, n = self.tables, len(self.ports)
        cpus = (self.cpus + [0] * MAX_SHARDS)[:MAX_SHARDS]
        self.update("cfg", struct.pack("<I", 0),
                    CONFIG.pack(switch_port, worker_port, n, socket.inet_aton(address), (1 << n) - 1, t.region,
                                int(t.overlap), self.shards, 0, *cpus))
        for i, name in enumerate(self.shard_devices):
            self.update("shard_dev", struct.pack("<I", i), struct.pack("<I", socket.if_nametoindex(name)))
        for rank, p in self.ports.items():
            self.update("ports", struct.pack("<I", rank),
                        PORT.pack(socket.if_nametoindex(p.interface), socket.inet_aton(p.address), _mac(p.mac),
                                  _mac(p.own_mac)))
        self._write("layers", t.layers)
        if t.units.size:
            self._write("units", t.units)
        if t.packets.size:
            self._write("packets", t.packets)
        if t.touches.size:
            self._write("touches", t.touches)
        if t.owed.size:
            self._write("owed", t.owed)

    def counters(self) -> dict[str, int]:
        """The program's counters, summed over CPUs, and ``busiest_cpu_ns``: the most time one CPU
        spent in the timed parts of the program (its walks, conversions and hand-overs: ``cell_ns``
        + ``convert_ns`` + ``clone_ns`` on that CPU). Pinned, the switch's work is on its CPUs alone,
        so beside the sum it says how evenly the shards shared it (equal: the sum / the shards)."""
        per_cpu = {name: self.percpu_values("counters", i) for i, name in enumerate(COUNTERS)}
        out = {name: sum(values) for name, values in per_cpu.items()}
        out["busiest_cpu_ns"] = max((sum(cpu) for cpu in zip(*(per_cpu[k] for k in TIMED))), default=0)
        return out

    def run_stats(self) -> dict[str, int]:
        """The kernel's run-time statistics of the program (``run_cnt`` packets, ``run_time_ns``:
        counted only while ``kernel.bpf_stats_enabled`` is 1) and the instructions its verifier
        walked (``verified_insns``)."""
        info = self.info()
        if info is None:
            return {}
        return {"run_cnt": int(info.run_cnt), "run_time_ns": int(info.run_time_ns),
                "verified_insns": int(info.verified_insns)}
