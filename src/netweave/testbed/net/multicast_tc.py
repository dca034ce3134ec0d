"""The switch's multicast forwarding in tc-BPF, where the kernel routes no IPv4 multicast (built
without ``CONFIG_IP_MROUTE``): the same static (source, group) entries as
:class:`~.multicast.MulticastRouter`, held by ``net/bpf/mcast_fwd.bpf.c`` at the tc ingress of the
namespace's interfaces. A datagram of an entry arriving on its upstream interface is cloned to
every downstream one, its TTL one lower and its source MAC that interface's (what the kernel's
``ip_mr_forward`` does); on another interface it is counted as ``wrong_if`` and dropped.

Its counters have the kernel router's shape (``/proc/net/ip_mr_vif``, ``/proc/net/ip_mr_cache``):
``vifs`` per interface (the VIF numbers the kernel router would give: the interfaces' order) and
``cache`` per entry. There are no upcalls: a datagram without an entry goes on to the kernel,
which drops it. :meth:`close` detaches the program; nothing else was made.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from pathlib import Path

from ...errors import NetweaveError
from .bpf import TcObject, compile_program
from .netns import interfaces as netns_interfaces

SOURCE = "net/bpf/mcast_fwd.bpf.c"
MAX_OIFS = 32  # the program's (the kernel's MAXVIFS)
KEY = struct.Struct("=4s4s")  # source, group (network order)
ENTRY = struct.Struct(f"=II{MAX_OIFS}IQQQ")  # iif, n, oif[], pkts, bytes, wrong_if
PORT = struct.Struct("=6s2xQQQQ")  # mac, pkts_in, bytes_in, pkts_out, bytes_out


def _mac(interface: str) -> bytes:
    return bytes.fromhex(Path(f"/sys/class/net/{interface}/address").read_text().strip().replace(":", ""))


class TcMulticastRouter:
    """:class:`~.multicast.MulticastRouter`'s interface (``vif``, ``add``, ``drain``,
    ``counters``, ``close``; context manager) over the tc-BPF forwarder, in the current namespace."""

    sock = None  # no upcall socket

    def __init__(self, routes: Sequence, interfaces: Sequence[str] | None = None):
        names = list(interfaces) if interfaces is not None else netns_interfaces()
        if len(names) > MAX_OIFS:
            raise NetweaveError(f"{len(names)} interfaces exceed the multicast forwarder's {MAX_OIFS}")
        self.vif = {name: i for i, name in enumerate(names)}
        self.ifindex = {name: socket.if_nametoindex(name) for name in names}
        self.upcalls = {"nocache": 0, "wrongvif": 0, "other": 0, "igmp": 0}
        self.routes: dict[bytes, object] = {}
        self.obj = TcObject(compile_program(SOURCE), "mcast_fwd", [], None, "the multicast forwarder")
        try:
            for name in names:
                self.obj.update("ports", struct.pack("=I", self.ifindex[name]), PORT.pack(_mac(name), 0, 0, 0, 0))
            for r in routes:
                self.add(r)
            self.obj.attach_tc(names, egress=False)
        except BaseException:
            self.close()
            raise

    def add(self, route) -> None:
        """Add (or replace) the forwarding entry of ``route`` (a :class:`~.multicast.Route`)."""
        for name in (route.iif, *route.oifs):
            if name not in self.vif:
                raise NetweaveError(f"multicast route {route.source}→{route.group}: no interface {name} to forward on")
        oifs = [self.ifindex[name] for name in route.oifs]
        key = KEY.pack(socket.inet_aton(route.source), socket.inet_aton(route.group))
        self.obj.update("entries", key, ENTRY.pack(self.ifindex[route.iif], len(oifs),
                                                   *oifs, *[0] * (MAX_OIFS - len(oifs)), 0, 0, 0))
        self.routes[key] = route

    def drain(self) -> int:
        return 0

    def counters(self) -> dict:
        vifs = {}
        for name, i in self.vif.items():
            raw = self.obj.lookup("ports", struct.pack("=I", self.ifindex[name]), PORT.size)
            _, pkts_in, bytes_in, pkts_out, bytes_out = PORT.unpack(raw) if raw else (b"", 0, 0, 0, 0)
            vifs[name] = {"vif": i, "bytes_in": bytes_in, "pkts_in": pkts_in, "bytes_out": bytes_out,
                          "pkts_out": pkts_out}
        cache = []
        for key, route in self.routes.items():
            raw = self.obj.lookup("entries", key, ENTRY.size)
            pkts, nbytes, wrong_if = ENTRY.unpack(raw)[-3:] if raw else (0, 0, 0)
            cache.append({"group": route.group, "origin": route.source, "iif": self.vif[route.iif], "pkts": pkts,
                          "bytes": nbytes, "wrong_if": wrong_if, "oifs": {self.vif[o]: 1 for o in route.oifs}})
        return {"vifs": vifs, "cache": cache, "upcalls": dict(self.upcalls), "forwarder": "tc"}

    def close(self) -> None:
        if getattr(self, "obj", None) is not None:
            self.obj.close()
            self.obj = None

    def __enter__(self) -> "TcMulticastRouter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
