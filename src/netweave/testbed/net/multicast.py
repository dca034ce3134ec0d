"""Parameter multicast through the emulated switches (pahina.txt §VI-B: the PS multicasts the
updated parameters back to its workers), with the kernel's own IPv4 multicast forwarding.

* :func:`multicast_tree` (pure): the distribution tree of ``source`` to ``receivers`` from the
  plan's unicast routes — each receiver's shortest path back to the source, reversed; a switch's
  upstream is its next hop toward the source, its downstream the union of the neighbours below it.
* :class:`MulticastRouter` (inside a switch namespace, as root): the raw IGMP socket that owns the
  namespace's multicast routing table (``MRT_INIT``), one VIF per interface
  (``VIFF_USE_IFINDEX``), and per (source, group) a static forwarding entry (``MRT_ADD_MFC``):
  the upstream interface's VIF in, TTL threshold 1 on each downstream VIF. Closing the socket
  (``MRT_DONE``) removes all of it. ``python -m netweave.testbed.net.multicast CONFIG`` (a :class:`RouterConfig`) runs one as
  a process: one JSON line ``{"ready": true, …}``, then it holds until its standard input closes
  or SIGTERM, and prints its counters (``/proc/net/ip_mr_vif``, ``/proc/net/ip_mr_cache``) as one
  JSON line. :func:`start_routers` starts one per switch of a tree under a
  :class:`~.supervisor.Supervisor`. On a kernel built without multicast routing
  (``CONFIG_IP_MROUTE``) :func:`router` gives the same entries in tc-BPF instead
  (:class:`~.multicast_tc.TcMulticastRouter`, beyond the paper).
* :func:`publish` cuts a float32 vector into datagrams — a 20-byte header (magic ``NWPM``, step,
  chunk, chunks, floats per chunk; u32, network order) and little-endian float32 — built with
  numpy and sent with one :func:`~.batchio.send_batch`; the default datagram (2,972 bytes, 742
  floats) fills the testbed's MTU (:mod:`.ports`). :class:`ParameterReceiver` joins the group on the host's uplink
  and scatters what :func:`~.batchio.recv_batch` takes into the vector with numpy; it returns the
  vector and the indices of the chunks that never came (older steps are ignored, newer ones kept
  for the next call, duplicates are harmless).

Group addresses are ``239.78.0.x`` (:func:`group_address`). The PS's socket
(:func:`publisher_socket`) is bound to its identity address and sends on its uplink
(``IP_MULTICAST_IF``), TTL 16, without looping its own datagrams back.
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import socket
import struct
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import NetweaveError
from . import batchio
from .netns import interfaces as netns_interfaces
from .ports import datagram_payload
from .role import RoleConfig
from .supervisor import Role, Supervisor

# linux/mroute.h
MRT_INIT, MRT_DONE, MRT_ADD_VIF, MRT_DEL_VIF, MRT_ADD_MFC, MRT_DEL_MFC = 200, 201, 202, 203, 204, 205
MAXVIFS = 32
VIFF_USE_IFINDEX = 0x8
VIFCTL = struct.Struct("=HBBIi4s")  # vifi, flags, threshold, rate_limit, lcl_ifindex, rmt_addr: 16 bytes
MFCCTL = struct.Struct(f"=4s4sH{MAXVIFS}s2xIIIi")  # origin, group, parent, ttls, pkt, byte, wrong_if, expire: 60
IGMPMSG_NOCACHE, IGMPMSG_WRONGVIF = 1, 2
IP_MREQN = struct.Struct("=4s4si")  # imr_multiaddr, imr_address, imr_ifindex

MAGIC = 0x4E57504D  # "NWPM"
HEADER = struct.Struct("!IIIII")  # magic, step, chunk, chunks, floats per chunk
DATAGRAM_BYTES = datagram_payload()  # one datagram fills the testbed's MTU: 2,972 bytes, 742 floats
TTL = 16
MODULE = "netweave.testbed.net.multicast"


def group_address(index: int) -> str:
    """The multicast group ``239.78.0.index`` (1..254: one per PS or parameter stream)."""
    if not 1 <= index <= 254:
        raise NetweaveError(f"multicast group index {index} must be in 1..254 (239.78.0.x)")
    return f"239.78.0.{index}"


def floats_per_chunk(datagram_bytes: int = DATAGRAM_BYTES) -> int:
    per = (datagram_bytes - HEADER.size) // 4
    if per < 1:
        raise NetweaveError(f"a datagram of {datagram_bytes} bytes leaves no room after the {HEADER.size}-byte header")
    return per


def chunk_count(size: int, per: int) -> int:
    return max(1, -(-size // per))


def chunk_rows(flat: np.ndarray, per: int) -> np.ndarray:
    """``flat`` (float32) as ``(chunk_count, per)`` little-endian rows, the last padded with zeros:
    row ``i`` is what chunk ``i`` carries (by multicast, or resent over TCP)."""
    flat = np.asarray(flat, dtype="<f4").reshape(-1)
    rows = np.zeros((chunk_count(flat.size, per), per), "<f4")
    rows.reshape(-1)[:flat.size] = flat
    return rows


# -- the tree (pure) -----------------------------------------------------------------------------
def multicast_tree(plan, source: str, receivers: Iterable[str]) -> dict[str, tuple[str, list[str]]]:
    """``{switch: (upstream neighbour, [downstream neighbours])}`` of the tree that carries
    ``source``'s datagrams to ``receivers``: each receiver's shortest path back to the source
    (``plan.next_hop``), reversed, merged. Downstream neighbours are in the topology's node order."""
    order = {n.name: i for i, n in enumerate(plan.topology.nodes)}
    if source not in order:
        raise NetweaveError(f"multicast source {source} is not a node of {plan.topology.name}")
    switches = set(plan.switches)
    down: dict[str, set[str]] = {}
    for r in receivers:
        if r not in order:
            raise NetweaveError(f"multicast receiver {r} is not a node of {plan.topology.name}")
        if r == source:
            continue
        below, node = r, plan.next_hop[r, source]
        while node != source:
            if node not in switches:
                raise NetweaveError(f"the path from {r} to {source} passes through host {node}, which does not forward")
            down.setdefault(node, set()).add(below)
            below, node = node, plan.next_hop[node, source]
    return {s: (plan.next_hop[s, source], sorted(d, key=order.__getitem__))
            for s, d in sorted(down.items(), key=lambda item: order[item[0]])}


def router_configs(plan, source: str, receivers: Iterable[str], groups: Sequence[str],
                   forwarder: str = "auto") -> dict[str, "RouterConfig"]:
    """Per switch of the tree, the configuration of its router role: the (source, group) routes
    with interface names (upstream in, downstream out), and its ``forwarder`` (:func:`router`)."""
    tree = multicast_tree(plan, source, receivers)
    return {s: RouterConfig(routes=tuple(Route(plan.address[source], g, plan.interface[s, up],
                                               tuple(plan.interface[s, d] for d in downs)) for g in groups),
                            forwarder=forwarder)
            for s, (up, downs) in tree.items()}


# -- the router (inside a switch namespace) ------------------------------------------------------
@dataclass(frozen=True)
class Route:
    """Forward (``source``, ``group``) arriving on interface ``iif`` out of ``oifs``."""

    source: str
    group: str
    iif: str
    oifs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class RouterConfig(RoleConfig):
    """A router role (``python -m netweave.testbed.net.multicast CONFIG``): its ``routes`` and the
    ``interfaces`` that get a VIF (None: every interface but loopback)."""

    routes: tuple[Route, ...] = ()
    interfaces: tuple[str, ...] | None = None
    forwarder: str = "auto"  # the kernel's multicast routing, or tc-BPF where it has none (see router)


def read_vifs(path: str = "/proc/net/ip_mr_vif") -> dict[str, dict[str, int]]:
    """This namespace's VIFs: name → index and bytes/packets in and out."""
    out = {}
    with open(path) as f:
        for line in f.read().splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 6:
                out[parts[1]] = {"vif": int(parts[0]), "bytes_in": int(parts[2]), "pkts_in": int(parts[3]),
                                 "bytes_out": int(parts[4]), "pkts_out": int(parts[5])}
    return out


def _hex_ip(text: str) -> str:
    return socket.inet_ntoa(struct.pack("=I", int(text, 16)))


def read_cache(path: str = "/proc/net/ip_mr_cache") -> list[dict]:
    """This namespace's forwarding entries: group, origin, iif VIF, packets, bytes, wrong-interface
    arrivals, and the out VIFs with their TTL thresholds."""
    out = []
    with open(path) as f:
        for line in f.read().splitlines()[1:]:
            parts = line.split()
            if len(parts) < 6:
                continue
            oifs = {int(v): int(t) for v, t in (p.split(":") for p in parts[6:])}
            out.append({"group": _hex_ip(parts[0]), "origin": _hex_ip(parts[1]), "iif": int(parts[2]),
                        "pkts": int(parts[3]), "bytes": int(parts[4]), "wrong_if": int(parts[5]), "oifs": oifs})
    return out


MROUTE_TABLE = "/proc/net/ip_mr_vif"  # there only where the kernel routes IPv4 multicast (CONFIG_IP_MROUTE)
NO_MROUTE = ("this kernel does not route IPv4 multicast (built without CONFIG_IP_MROUTE: no "
             f"{MROUTE_TABLE}); forward it in tc-BPF instead (the router's forwarder \"tc\", which needs clang "
             "and libbpf)")


def multicast_routing_missing(table: str = MROUTE_TABLE) -> str | None:
    """Why the kernel's own multicast routing cannot forward the PS's multicast (:data:`NO_MROUTE`),
    or None where it can: a kernel without ``CONFIG_IP_MROUTE`` has no multicast routing table, and
    ``MRT_INIT`` fails there with ENOPROTOOPT. :func:`router` then forwards in tc-BPF."""
    return None if os.path.exists(table) else NO_MROUTE


class MulticastRouter:
    """The namespace's multicast routing, for as long as this object lives (context manager):
    VIFs on ``interfaces`` (default: all but lo, sorted) and a static entry per route."""

    def __init__(self, routes: Sequence[Route], interfaces: Sequence[str] | None = None):
        names = list(interfaces) if interfaces is not None else netns_interfaces()
        if len(names) > MAXVIFS:
            raise NetweaveError(f"{len(names)} interfaces exceed the kernel's {MAXVIFS} multicast VIFs")
        self.vif = {name: i for i, name in enumerate(names)}
        self.upcalls = {"nocache": 0, "wrongvif": 0, "other": 0, "igmp": 0}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_IGMP)
        try:
            self.sock.setsockopt(socket.IPPROTO_IP, MRT_INIT, 1)
            for name, i in self.vif.items():
                vif = VIFCTL.pack(i, VIFF_USE_IFINDEX, 1, 0, socket.if_nametoindex(name), bytes(4))
                self.sock.setsockopt(socket.IPPROTO_IP, MRT_ADD_VIF, vif)
            for r in routes:
                self.add(r)
            self.sock.setblocking(False)
        except OSError as e:
            self.close()
            if e.errno == errno.ENOPROTOOPT:
                raise NetweaveError(NO_MROUTE) from None
            raise NetweaveError(f"multicast routing could not be set up: {e.strerror or e}") from None
        except BaseException:
            self.close()
            raise

    def add(self, route: Route) -> None:
        """Add (or replace) the forwarding entry of ``route``."""
        for name in (route.iif, *route.oifs):
            if name not in self.vif:
                raise NetweaveError(f"multicast route {route.source}→{route.group}: no VIF on interface {name}")
        ttls = bytearray(MAXVIFS)
        for name in route.oifs:
            ttls[self.vif[name]] = 1
        mfc = MFCCTL.pack(socket.inet_aton(route.source), socket.inet_aton(route.group), self.vif[route.iif],
                          bytes(ttls), 0, 0, 0, 0)
        self.sock.setsockopt(socket.IPPROTO_IP, MRT_ADD_MFC, mfc)

    def drain(self) -> int:
        """Read what the kernel queued on the socket (IGMP packets, and upcalls for traffic without
        an entry or on the wrong interface), counting them; returns how many."""
        n = 0
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return n
            n += 1
            if len(data) >= 20 and data[9] == 0:  # an upcall: igmpmsg, its "protocol" byte is 0
                kind = {IGMPMSG_NOCACHE: "nocache", IGMPMSG_WRONGVIF: "wrongvif"}.get(data[8], "other")
                self.upcalls[kind] += 1
            else:
                self.upcalls["igmp"] += 1

    def counters(self) -> dict:
        return {"vifs": read_vifs(), "cache": read_cache(), "upcalls": dict(self.upcalls)}

    def close(self) -> None:
        if self.sock.fileno() >= 0:
            try:
                self.sock.setsockopt(socket.IPPROTO_IP, MRT_DONE, 1)
            except OSError:
                pass  # not initialised: nothing to undo
            self.sock.close()

    def __enter__(self) -> "MulticastRouter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def router(routes: Sequence[Route], interfaces: Sequence[str] | None = None, forwarder: str = "auto"):
    """The namespace's multicast forwarding for ``routes``: the kernel's own (``"kernel"``,
    :class:`MulticastRouter`), or the tc-BPF forwarder (``"tc"``,
    :class:`~.multicast_tc.TcMulticastRouter`, for a kernel built without ``CONFIG_IP_MROUTE``);
    ``"auto"``: the kernel's where it has multicast routing, else tc-BPF."""
    if forwarder not in ("auto", "kernel", "tc"):
        raise NetweaveError(f"multicast forwarder {forwarder!r}: use auto, kernel or tc")
    if forwarder == "tc" or (forwarder == "auto" and multicast_routing_missing()):
        from .multicast_tc import TcMulticastRouter

        return TcMulticastRouter(routes, interfaces)
    return MulticastRouter(routes, interfaces)


def serve(config: RouterConfig) -> dict:
    """Run a router until stdin closes or SIGTERM; returns its counters (read before closing)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    with router(list(config.routes), config.interfaces, config.forwarder) as fwd:
        print(json.dumps({"ready": True, "vifs": fwd.vif, "routes": len(config.routes),
                          "forwarder": "kernel" if isinstance(fwd, MulticastRouter) else "tc"}), flush=True)
        while not stop:
            ready = select.select([sys.stdin, *([fwd.sock] if fwd.sock else [])], [], [], 0.2)[0]
            if fwd.sock in ready:
                fwd.drain()
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
                break  # the parent closed our stdin: it is gone or done
        fwd.drain()
        return fwd.counters()


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: python -m {MODULE} CONFIG_JSON")
    try:
        result = serve(RouterConfig.from_json(sys.argv[1]))
    except NetweaveError as e:
        raise SystemExit(f"{MODULE}: {e}") from None
    print(json.dumps(result), flush=True)


def start_routers(supervisor: Supervisor, plan, source: str, receivers: Iterable[str],
                  groups: Sequence[str], forwarder: str = "auto") -> dict[str, Role]:
    """A router role in each switch namespace of the tree, ready when this returns; their counters
    come from ``supervisor.finish(role)`` when the run is over."""
    return {switch: supervisor.start(f"the multicast router of {switch}", plan.namespace[switch], MODULE, config,
                                     ready=True)
            for switch, config in router_configs(plan, source, list(receivers), list(groups), forwarder).items()}


# -- the two ends --------------------------------------------------------------------------------
def _mreqn(interface: str | None, address: str = "0.0.0.0", group: str = "0.0.0.0") -> bytes:
    return IP_MREQN.pack(socket.inet_aton(group), socket.inet_aton(address),
                         socket.if_nametoindex(interface) if interface else 0)


def publisher_socket(address: str, interface: str, port: int = 0, ttl: int = TTL) -> socket.socket:
    """The PS's socket: bound to ``address`` (its identity), sending multicast out of ``interface``
    (its uplink), TTL ``ttl``, its own datagrams not looped back."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((address, port))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, _mreqn(interface, address))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    except BaseException:
        sock.close()
        raise
    return sock


def datagrams(step: int, flat: np.ndarray, datagram_bytes: int = DATAGRAM_BYTES,
              only: Iterable[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The rows (``uint8 (k, 20 + 4 × per)``) and lengths of ``flat``'s chunks for ``step``
    (``only``: just those chunk indices, in that order)."""
    flat = np.ascontiguousarray(flat, dtype="<f4").reshape(-1)
    per = floats_per_chunk(datagram_bytes)
    padded = chunk_rows(flat, per)
    n = len(padded)
    index = np.arange(n, dtype=np.int64) if only is None else np.asarray(list(only), dtype=np.int64).reshape(-1)
    if index.size and (index.min() < 0 or index.max() >= n):
        raise NetweaveError(f"publish: chunk indices must lie in [0, {n})")
    rows = np.empty((index.size, HEADER.size + 4 * per), np.uint8)
    header = np.empty((index.size, 5), ">u4")
    header[:, 0], header[:, 1], header[:, 2], header[:, 3], header[:, 4] = MAGIC, step, index, n, per
    rows[:, :HEADER.size] = header.view(np.uint8).reshape(index.size, HEADER.size)
    rows[:, HEADER.size:] = padded.view(np.uint8).reshape(n, 4 * per)[index]
    lengths = HEADER.size + 4 * np.minimum(per, flat.size - index * per)
    return rows, lengths


def publish(sock: socket.socket, step: int, flat: np.ndarray, group: tuple[str, int],
            datagram_bytes: int = DATAGRAM_BYTES, only: Iterable[int] | None = None, rate_bps: float | None = None) -> int:
    """Send ``flat`` (float32) for ``step`` to ``group`` (``(address, port)``) in datagrams of at
    most ``datagram_bytes`` (``only``: just those chunks, e.g. the ones a receiver missed), at most
    ``rate_bps`` (the tree's slowest link: :func:`~.batchio.send_paced`). Returns the number of
    datagrams sent."""
    rows, lengths = datagrams(step, flat, datagram_bytes, only)
    return batchio.send_paced(sock, rows, lengths, group, rate_bps)


def receiver_socket(group: str, port: int, interface: str | None, rcvbuf_bytes: int = 32 << 20) -> socket.socket:
    """A socket bound to ``(group, port)`` and joined to ``group`` on ``interface`` (``ip_mreqn``
    with its index), with a receive buffer of ``rcvbuf_bytes`` (forced beyond rmem_max as root)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        batchio.set_receive_buffer(sock, rcvbuf_bytes)
        sock.bind((group, port))
        join(sock, group, interface)
    except BaseException:
        sock.close()
        raise
    return sock


def join(sock: socket.socket, group: str, interface: str | None) -> None:
    """``IP_ADD_MEMBERSHIP`` of ``group`` on ``interface`` (``ip_mreqn`` with its index)."""
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, _mreqn(interface, group=group))


@dataclass
class ReceiverCounters:
    datagrams: int = 0  # taken from the socket
    accepted: int = 0  # of the step asked for, well formed (duplicates included)
    duplicates: int = 0
    stale: int = 0  # of an older step
    ahead: int = 0  # of a newer step: kept for the next receive
    foreign: int = 0  # not ours, malformed, or of another chunk size


@dataclass
class ParameterReceiver:
    """The worker's end: ``receive(step, size, timeout_s)`` from ``sock`` (already joined: see
    :func:`receiver_socket`; or ``group`` and ``interface`` given here to join). ``datagram_bytes``
    must be the publisher's; ``batch`` datagrams are taken per system call."""

    sock: socket.socket
    group: str | None = None
    interface: str | None = None
    datagram_bytes: int = DATAGRAM_BYTES
    batch: int = 512
    keep_ahead: int = 1 << 16  # datagrams of newer steps kept at most
    counters: ReceiverCounters = field(default_factory=ReceiverCounters)

    def __post_init__(self):
        if self.group:
            join(self.sock, self.group, self.interface)
        self.per = floats_per_chunk(self.datagram_bytes)
        self._rows = np.zeros((self.batch, HEADER.size + 4 * self.per), np.uint8)
        self._lengths = np.zeros(self.batch, np.int64)
        self._ahead: list[tuple[np.ndarray, np.ndarray]] = []  # rows of newer steps, with their lengths

    def receive(self, step: int, size: int, timeout_s: float) -> tuple[np.ndarray, np.ndarray]:
        """The ``size`` floats of ``step``: waits until every chunk came or ``timeout_s`` passed.
        Returns the vector (chunks that never came are zeros) and the missing chunk indices."""
        import time

        per, n = self.per, chunk_count(size, self.per)
        out = np.zeros(n * per, "<f4")
        have = np.zeros(n, bool)
        kept, self._ahead = self._ahead, []
        for rows, lengths in kept:
            self._take(rows, lengths, step, size, out, have)
        deadline = time.monotonic() + timeout_s
        while not have.all():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            got = batchio.recv_batch(self.sock, self._rows, self._lengths, left)
            if not got:
                break
            self.counters.datagrams += got
            self._take(self._rows[:got], self._lengths[:got], step, size, out, have)
        return out[:size], np.flatnonzero(~have)

    def _take(self, rows: np.ndarray, lengths: np.ndarray, step: int, size: int, out: np.ndarray,
              have: np.ndarray) -> None:
        per, n, c = self.per, have.size, self.counters
        short = lengths < HEADER.size
        head = np.ascontiguousarray(rows[:, :HEADER.size]).view(">u4").astype(np.int64)
        ours = ~short & (head[:, 0] == MAGIC) & (head[:, 4] == per)
        stale = ours & (head[:, 1] < step)
        ahead = ours & (head[:, 1] > step)
        index = head[:, 2]
        expected = HEADER.size + 4 * np.minimum(per, size - np.minimum(index, n) * per)
        good = ours & (head[:, 1] == step) & (head[:, 3] == n) & (index < n) & (lengths == expected)
        c.stale += int(stale.sum())
        c.ahead += int(ahead.sum())
        c.foreign += int(len(rows) - stale.sum() - ahead.sum() - good.sum())
        if ahead.any():
            self._ahead.append((rows[ahead].copy(), lengths[ahead].copy()))
            while sum(len(r) for r, _ in self._ahead) > self.keep_ahead:
                self._ahead.pop(0)  # the oldest first
        if not good.any():
            return
        index = index[good]
        c.accepted += int(index.size)
        c.duplicates += int(have[index].sum()) + int(index.size - np.unique(index).size)
        payload = np.ascontiguousarray(rows[good, HEADER.size:]).view("<f4")
        out.reshape(n, per)[index] = payload  # the last chunk's tail past `size` lands in the padding
        have[index] = True


if __name__ == "__main__":
    main()
