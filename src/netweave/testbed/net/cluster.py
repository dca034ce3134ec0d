"""A :class:`~netweave.topology.Topology` as an emulated cluster of Linux network namespaces.

One namespace per host and per switch, one veth pair per link, and per direction of every link an
HTB class at the link's rate (scaled by ``scale``). Link latency is not emulated: the kernels this
runs on (Firecracker's among them) often lack ``sch_netem`` and ``sch_fq``, and the topologies'
1–5 µs are below what a veth hop costs anyway; loss, duplication and reordering are injected by a
tc-BPF program instead (:mod:`.impair`). Every node has one identity address (hosts
``10.78.x.y``, switches ``10.79.x.y``) on its loopback; switches forward (``ip_forward``), and
routes use the neighbour's identity as an on-link next hop, so links need no subnets of their own.

Routes: every node reaches every other node (hosts, and switches: their agents take requests)
along a shortest path (hop count, ties to the lower node
index: deterministic). A routing plan's per-flow paths (``netweave route --out``: each worker's
path to its PS) override them with policy routing — at every node of the path a rule
``from WORKER to PS`` selects a table whose one route is the path's next hop — in both directions,
so a worker's gradients and the PS's answer follow the path the control plane chose.

:class:`ClusterPlan` is pure (names, addresses, shaping, routes and the ``ip``/``tc`` batches that
make them): it is what the tests check without root. :func:`up` executes it; :mod:`.lifecycle`
removes it on every exit path.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from ...errors import NetweaveError
from ...topology import Topology
from .impair import Impairment
from .netns import PREFIX
from .ports import MTU

MAX_NODES = 250  # identity addresses: one /24 per kind is plenty for the ~20-host clusters this emulates
MIN_KBIT = 8  # tc's smallest useful rate
FIRST_TABLE, MAX_PATH = 1000, 64  # policy-routing tables: one per (pinned flow, position on its path)


def namespace_name(prefix: str, index: int) -> str:
    """The namespace of the topology's node ``index``: ``PREFIX-nINDEX``. Names that reach ``ip`` and
    ``tc`` are made from the run's prefix and indices only; the topology's own node names stay in
    the records and the outputs (SECURITY.md)."""
    return f"{prefix}-n{index}"


def new_prefix(pid: int | None = None) -> str:
    """``nwt`` + the owner's PID in base 36: unique among live runs, short enough for names."""
    n, digits = pid if pid is not None else os.getpid(), ""
    while True:
        n, r = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if n == 0:
            return PREFIX + digits


@dataclass(frozen=True)
class Shaping:
    """One direction of one link: ``rate_kbit`` (the link's Gb/s × scale); ``latency_us`` is the
    topology's, recorded but not emulated (see the module docstring)."""

    rate_kbit: int
    latency_us: float = 0.0

    def burst_bytes(self) -> int:
        """HTB burst: one millisecond at the rate, at least 16 KB (a few full packets)."""
        return max(16_000, self.rate_kbit * 1000 // 8 // 1000)


@dataclass
class ClusterPlan:
    """What :func:`up` creates for ``topology`` (see the module docstring).

    Attributes:
        prefix: the namespaces' common prefix; namespace: node → namespace name (``PREFIX-nINDEX``,
            never the node's name: see :func:`namespace_name`).
        address: node → identity IPv4 address; interface: (node, neighbour) → interface name in node's namespace.
        shaping: (node, neighbour) → the shaping of that direction (on node's interface).
        next_hop: (node, destination node) → neighbour on the default (shortest) path.
        flows: (source host, destination host) → the node path that policy routing pins.
        scale: the factor applied to every link rate (recorded in every output).
        impairment: the loss, duplication and reordering of every interface (none by default).
        switch_buffer_bytes: the queue of every switch port (a byte FIFO under its HTB class; a
            packet that finds it full is dropped); None: 10,000 packets, as at the hosts.
    """

    topology: Topology
    scale: float
    prefix: str
    namespace: dict[str, str] = field(default_factory=dict)
    address: dict[str, str] = field(default_factory=dict)
    interface: dict[tuple[str, str], str] = field(default_factory=dict)
    shaping: dict[tuple[str, str], Shaping] = field(default_factory=dict)
    next_hop: dict[tuple[str, str], str] = field(default_factory=dict)
    flows: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    impairment: Impairment = field(default_factory=Impairment)
    switch_buffer_bytes: int | None = None

    @property
    def hosts(self) -> list[str]:
        return [n.name for n in self.topology.nodes if n.kind == "host"]

    @property
    def switches(self) -> list[str]:
        return [n.name for n in self.topology.nodes if n.kind != "host"]

    def neighbours(self, node: str) -> list[str]:
        return [peer for (a, peer) in self.interface if a == node]

    # -- the iproute2 batches ------------------------------------------------------------------
    def link_batch(self) -> list[str]:
        """Host-side ``ip -batch``: the veth pairs, each end created in its namespace."""
        lines = []
        for link in self.topology.links:
            a, b = link.a, link.b
            lines.append(f"link add {self.interface[a, b]} netns {self.namespace[a]} type veth "
                         f"peer name {self.interface[b, a]} netns {self.namespace[b]}")
        return lines

    def node_batch(self, node: str) -> list[str]:
        """``ip -batch`` inside ``node``'s namespace: loopback and identity, links up, routes, rules."""
        me = self.address[node]
        lines = ["link set lo up", f"addr add {me}/32 dev lo"]
        for peer in self.neighbours(node):
            lines.append(f"link set {self.interface[node, peer]} mtu {MTU} up")
            if node in self.hosts:  # also on the uplink, for software that binds an interface's address (gloo)
                lines.append(f"addr add {me}/32 dev {self.interface[node, peer]}")
        for (at, dst), hop in sorted(self.next_hop.items()):
            if at == node:
                lines.append(f"route add {self.address[dst]}/32 via {self.address[hop]} dev {self.interface[node, hop]} "
                             f"onlink src {me}")
        for index, ((src, dst), path) in enumerate(sorted(self.flows.items())):
            for position, at in enumerate(path[:-1]):
                if at != node:
                    continue
                table, hop = FIRST_TABLE + index * MAX_PATH + position, path[position + 1]
                match = (f"to {self.address[dst]}" if position == 0 else  # the source itself, then by where it came in
                         f"from {self.address[src]} to {self.address[dst]} iif {self.interface[node, path[position - 1]]}")
                lines.append(f"rule add {match} lookup {table} priority 100")
                lines.append(f"route add {self.address[dst]}/32 via {self.address[hop]} dev {self.interface[node, hop]} "
                             f"onlink src {me} table {table}")
        return lines

    def tc_batch(self, node: str, impair_object: str | None = None) -> list[str]:
        """``tc -batch`` inside ``node``'s namespace: per interface an HTB class at the rate over a
        FIFO, a slow lane (class 1:2: at most 1 Mb/s and a hundredth of the rate, one packet of
        burst, so a packet in it waits and later ones overtake it) that reordered packets take, and with
        ``impair_object`` the impairment program at the tc egress."""
        lines = []
        for peer in self.neighbours(node):
            dev, s = self.interface[node, peer], self.shaping[node, peer]
            slow = max(MIN_KBIT, min(1000, s.rate_kbit // 100))
            fifo = "pfifo limit 10000" if node in self.hosts or not self.switch_buffer_bytes else \
                f"bfifo limit {int(self.switch_buffer_bytes)}"
            lines += [f"qdisc add dev {dev} root handle 1: htb default 1 r2q {max(10, s.rate_kbit // 8 // 60_000)}",
                      f"class add dev {dev} parent 1: classid 1:1 htb rate {s.rate_kbit}kbit ceil {s.rate_kbit}kbit "
                      f"burst {s.burst_bytes()} cburst {s.burst_bytes()}",
                      f"qdisc add dev {dev} parent 1:1 handle 10: {fifo}",
                      f"class add dev {dev} parent 1: classid 1:2 htb rate {slow}kbit ceil {slow}kbit burst 1600 "
                      "cburst 1600",
                      f"qdisc add dev {dev} parent 1:2 handle 20: pfifo limit 10000"]
            if impair_object:
                lines += [f"qdisc add dev {dev} clsact",
                          f"filter add dev {dev} egress bpf direct-action obj {impair_object} sec tc"]
        return lines

    def sysctls(self, node: str) -> list[str]:
        forward = "0" if node in self.hosts else "1"
        return [f"net.ipv4.ip_forward={forward}", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
                "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0",  # paths may turn back
                "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]


def plan_cluster(topo: Topology, scale: float = 1.0, routes: dict[str, dict] | None = None,
                 prefix: str | None = None, impairment: Impairment | None = None,
                 switch_buffer_bytes: int | None = None) -> ClusterPlan:
    """The cluster of ``topo`` with link rates × ``scale``; ``routes`` is a routes JSON's ``tasks``
    (``{task: {"ps": PS, "paths": {worker: [worker, …, PS]}}}``) whose paths are pinned;
    ``impairment`` applies to every interface; ``switch_buffer_bytes`` bounds every switch port's
    queue."""
    if not 0 < scale <= 1:
        raise NetweaveError(f"--scale {scale:g} must be in (0, 1]: the emulated rates are the topology's times the scale")
    if len(topo.nodes) > MAX_NODES:
        raise NetweaveError(f"topology {topo.name} has {len(topo.nodes)} nodes; the testbed emulates at most {MAX_NODES}")
    if switch_buffer_bytes is not None and not 3_000 <= switch_buffer_bytes <= 1 << 30:
        raise NetweaveError(f"switch buffer {switch_buffer_bytes} B: give 3 KB (a packet) to 1 GB")
    plan = ClusterPlan(topo, scale, prefix or new_prefix(), impairment=impairment or Impairment(),
                       switch_buffer_bytes=switch_buffer_bytes)
    counts = {"host": 0, "switch": 0}
    for index, node in enumerate(topo.nodes):
        kind = "host" if node.kind == "host" else "switch"
        i = counts[kind] = counts[kind] + 1
        plan.namespace[node.name] = namespace_name(plan.prefix, index)
        plan.address[node.name] = f"10.{78 if kind == 'host' else 79}.{i // 250}.{i % 250 + 1}"
    for index, link in enumerate(topo.links):
        if link.a == link.b or (link.a, link.b) in plan.interface:
            raise NetweaveError(f"topology {topo.name}: link {index} ({link.a}–{link.b}) repeats a link; "
                                "the testbed needs at most one link per pair of nodes")
        kbit = max(MIN_KBIT, int(round(link.gbps * scale * 1e6)))
        for a, b in ((link.a, link.b), (link.b, link.a)):
            plan.interface[a, b] = f"e{index}"
            plan.shaping[a, b] = Shaping(kbit, link.latency_us)
    if not plan.hosts:
        raise NetweaveError(f"topology {topo.name} has no hosts to run workers on")
    plan.next_hop = _shortest_next_hops(plan)
    for name, task in (routes or {}).items():
        for worker, path in task["paths"].items():
            _check_path(plan, name, worker, task["ps"], path)
            plan.flows[worker, task["ps"]] = list(path)
            plan.flows[task["ps"], worker] = list(reversed(path))
    return plan


def _shortest_next_hops(plan: ClusterPlan) -> dict[tuple[str, str], str]:
    """Breadth-first from every node: each node's neighbour one hop closer (ties: lower node index)."""
    order = {n.name: i for i, n in enumerate(plan.topology.nodes)}
    adjacent = {n: sorted(plan.neighbours(n), key=order.__getitem__) for n in order}
    hops = {}
    for dst in order:
        seen, queue = {dst}, deque([dst])
        while queue:
            v = queue.popleft()
            for u in adjacent[v]:
                if u not in seen:
                    seen.add(u)
                    hops[u, dst] = v
                    queue.append(u)
        unreachable = [n for n in order if n not in seen]
        if unreachable:
            raise NetweaveError(f"topology {plan.topology.name}: {unreachable[0]} cannot reach {dst}")
    return hops


def _check_path(plan: ClusterPlan, task: str, worker: str, ps: str, path: list[str]) -> None:
    """A path runs from ``worker`` to ``ps`` over links of the topology, visits its ends once and
    takes no directed link twice. It may pass a switch twice (GRID's aggregator off the shortest
    path: up to it and back), each time entering from another neighbour: policy routing tells the
    visits apart by the incoming interface."""
    hops = list(zip(path, path[1:]))
    if (len(path) < 2 or path[0] != worker or path[-1] != ps or path.count(worker) > 1 or path.count(ps) > 1
            or len(set(hops)) != len(hops) or len(path) > MAX_PATH):
        raise NetweaveError(f"routes: task {task}: the path of {worker} must run from {worker} to {ps} without "
                            f"taking a link twice (at most {MAX_PATH} nodes)")
    for u, v in hops:
        if (u, v) not in plan.interface:
            raise NetweaveError(f"routes: task {task}: {u}–{v} on the path of {worker} is not a link of "
                                f"{plan.topology.name}")
