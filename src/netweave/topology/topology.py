"""The ``Topology`` value: nodes, full-duplex links, switch pipelines, and its validation.

Nodes have a *kind*: ``gpu`` and ``host`` are workers (compute endpoints, ranked in listing order:
GPUs when the topology has any, else hosts); ``switch`` (network switch, possibly INA-capable
with ingress pipelines), ``cpu``, ``pcie`` and ``nic`` are transit hops. A link carries ``gbps``
gigabits per second *in each direction* and a one-way latency in microseconds.
"""

from __future__ import annotations

import difflib
import re
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import NetweaveError

NODE_KINDS = ("gpu", "host", "switch", "cpu", "pcie", "nic")
WORKER_KINDS = ("gpu", "host")
PRECISIONS = ("fp8", "fp16", "fp32")
NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # node names: letters, digits, _ . -; 1-64 characters
NAME_RULE_TEXT = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"


@dataclass(frozen=True)
class Node:
    """A topology node.

    Attributes:
        name: unique name.
        kind: one of :data:`NODE_KINDS`.
        server: machine the node belongs to (GPUs, CPUs, PCIe switches, NICs of one box).
        ina: the switch can aggregate in the network.
        pipelines: number of ingress pipelines of a switch (≥ 1).
        aggregator_memory: INA memory of a switch in bytes (0 = unspecified).
        ina_capacity_gbps: per-precision aggregated-output capacity, e.g. ``{"fp16": 24.0}``.
        tier: level in a Clos network (0 hosts, 1 leaf/edge, 2 spine/aggregation, 3 core), or None.
        pod: fat-tree pod, or None.
    """

    name: str
    kind: str
    server: str | None = None
    ina: bool = False
    pipelines: int = 1
    aggregator_memory: int = 0
    ina_capacity_gbps: dict[str, float] = field(default_factory=dict)
    tier: int | None = None
    pod: int | None = None

    @property
    def is_worker(self) -> bool:
        return self.kind in WORKER_KINDS


@dataclass(frozen=True)
class Link:
    """A full-duplex link of ``gbps`` Gb/s per direction.

    ``a_pipeline`` / ``b_pipeline``: ingress pipeline of the port at a switch end (None = by the
    default contiguous grouping). ``label``: a free-form type such as ``NV2`` or ``QPI``.
    """

    a: str
    b: str
    gbps: float
    latency_us: float = 0.0
    a_pipeline: int | None = None
    b_pipeline: int | None = None
    label: str | None = None

    @property
    def bytes_per_s(self) -> float:
        return self.gbps * 1e9 / 8


class Topology:
    """A validated network of :class:`Node` and :class:`Link`.

    Construction validates: unique names, known kinds, links between declared distinct nodes,
    positive bandwidth, non-negative latency, no parallel links, pipelines within range on switch
    ends only, and that all workers can reach each other.
    """

    def __init__(self, name: str, nodes: list[Node], links: list[Link]):
        self.name = name
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self.links: tuple[Link, ...] = tuple(links)
        self.index: dict[str, int] = {}
        self._validate_nodes()
        self._validate_links()
        # adjacency: node index -> list of (neighbour index, link index)
        self.adjacency: list[list[tuple[int, int]]] = [[] for _ in self.nodes]
        for e, link in enumerate(self.links):
            a, b = self.index[link.a], self.index[link.b]
            self.adjacency[a].append((b, e))
            self.adjacency[b].append((a, e))
        self._validate_pipelines()
        self._validate_reachability()

    # -- queries ------------------------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node called ``name`` (clear error with a suggestion when unknown)."""
        if name not in self.index:
            raise NetweaveError(f"unknown node {name!r} in topology {self.name!r}{_suggest(name, self.index)}")
        return self.nodes[self.index[name]]

    @property
    def workers(self) -> list[str]:
        """Worker names in rank order: the GPUs if the topology has any, else the hosts."""
        gpus = [n.name for n in self.nodes if n.kind == "gpu"]
        return gpus or [n.name for n in self.nodes if n.kind == "host"]

    def machines(self) -> list[list[int]]:
        """Worker ranks grouped by ``server`` (workers without one form their own machine)."""
        groups: dict[str, list[int]] = {}
        for rank, name in enumerate(self.workers):
            groups.setdefault(self.node(name).server or f"__{name}", []).append(rank)
        return list(groups.values())

    def access(self, host: str) -> tuple[str, Link]:
        """``(neighbour, link)`` of ``host``'s first link: its access switch and access link."""
        nb, e = self.adjacency[self.index[self.node(host).name]][0]
        return self.nodes[nb].name, self.links[e]

    def link_between(self, a: str, b: str) -> int | None:
        """Index of the link joining ``a`` and ``b``, or None."""
        ia, ib = self.index[self.node(a).name], self.index[self.node(b).name]
        return next((e for nb, e in self.adjacency[ia] if nb == ib), None)

    def port_pipeline(self, switch: str, link: int) -> int:
        """Ingress pipeline of ``switch``'s port on link ``link``.

        An explicit ``a_pipeline``/``b_pipeline`` wins; otherwise the switch's ports, in the order
        its links are listed, go to pipelines in contiguous groups (port i of P ports → pipeline
        ``i * pipelines // P``).
        """
        l = self.links[link]
        explicit = l.a_pipeline if l.a == switch else l.b_pipeline
        if explicit is not None:
            return explicit
        ports = [e for _, e in self.adjacency[self.index[switch]]]
        return ports.index(link) * self.node(switch).pipelines // len(ports)

    def summary(self) -> dict:
        """Counts and speeds for ``netweave topology show``."""
        kinds = {k: sum(n.kind == k for n in self.nodes) for k in NODE_KINDS}
        speeds: dict[str, int] = {}
        for l in self.links:
            key = f"{l.gbps:g}" + (f" ({l.label})" if l.label else "")
            speeds[key] = speeds.get(key, 0) + 1
        ina = [n for n in self.nodes if n.ina]
        return {
            "name": self.name,
            "num_nodes": len(self.nodes),
            "num_links": len(self.links),
            "nodes_by_kind": {k: v for k, v in kinds.items() if v},
            "num_workers": len(self.workers),
            "workers": self.workers,
            "machines": len(self.machines()),
            "ina_switches": [n.name for n in ina],
            "pipelines_per_ina_switch": sorted({n.pipelines for n in ina}),
            "links_by_gbps": speeds,
        }

    def __repr__(self) -> str:
        return f"Topology({self.name!r}, {len(self.nodes)} nodes, {len(self.links)} links, {len(self.workers)} workers)"

    # -- validation ---------------------------------------------------------------------------
    def _validate_nodes(self) -> None:
        for i, node in enumerate(self.nodes):
            where = f"node {i} ({node.name!r})"
            if not node.name or not isinstance(node.name, str):
                raise NetweaveError(f"node {i} has no name; every node needs a unique name")
            if not NAME_RULE.fullmatch(node.name):
                shown = ascii(node.name[:40]) + ("…" if len(node.name) > 40 else "")
                raise NetweaveError(f"node {i}: the name {shown} is not allowed; a node name is {NAME_RULE_TEXT}")
            if node.name in self.index:
                raise NetweaveError(f"duplicate node name {node.name!r} (nodes {self.index[node.name]} and {i}); names must be unique")
            if node.kind not in NODE_KINDS:
                raise NetweaveError(f"{where}: unknown kind {node.kind!r}; use one of {', '.join(NODE_KINDS)}")
            if node.kind != "switch" and (node.ina or node.pipelines != 1):
                raise NetweaveError(f"{where}: only switches can have ina or pipelines")
            if node.pipelines < 1:
                raise NetweaveError(f"{where}: pipelines must be at least 1, got {node.pipelines}")
            if node.aggregator_memory < 0:
                raise NetweaveError(f"{where}: aggregator_memory must not be negative")
            for prec, cap in node.ina_capacity_gbps.items():
                if prec not in PRECISIONS:
                    raise NetweaveError(f"{where}: unknown precision {prec!r} in ina_capacity_gbps; use {', '.join(PRECISIONS)}")
                if not cap > 0:
                    raise NetweaveError(f"{where}: ina_capacity_gbps[{prec}] must be positive, got {cap}")
            self.index[node.name] = i
        if not self.nodes:
            raise NetweaveError(f"topology {self.name!r} has no nodes")

    def _validate_links(self) -> None:
        seen: dict[frozenset, int] = {}
        for e, link in enumerate(self.links):
            where = f"link {e} ({link.a}–{link.b})"
            for end in (link.a, link.b):
                if end not in self.index:
                    raise NetweaveError(f"{where}: unknown node {end!r}{_suggest(end, self.index)}; declare it under nodes:")
            if link.a == link.b:
                raise NetweaveError(f"{where}: a link must join two different nodes")
            if not (isinstance(link.gbps, (int, float)) and link.gbps > 0 and np.isfinite(link.gbps)):
                raise NetweaveError(f"{where}: gbps must be a positive number, got {link.gbps!r}")
            if not link.latency_us >= 0:
                raise NetweaveError(f"{where}: latency_us must not be negative, got {link.latency_us!r}")
            pair = frozenset((link.a, link.b))
            if pair in seen:
                raise NetweaveError(f"{where}: duplicate of link {seen[pair]}; merge parallel links into one with the summed gbps")
            seen[pair] = e

    def _validate_pipelines(self) -> None:
        for e, link in enumerate(self.links):
            for end, pipe in ((link.a, link.a_pipeline), (link.b, link.b_pipeline)):
                if pipe is None:
                    continue
                node = self.node(end)
                if node.kind != "switch":
                    raise NetweaveError(f"link {e} ({link.a}–{link.b}): pipeline given at {end!r}, which is not a switch")
                if not 0 <= pipe < node.pipelines:
                    raise NetweaveError(f"link {e} ({link.a}–{link.b}): pipeline {pipe} of {end!r} outside 0..{node.pipelines - 1}")

    def _validate_reachability(self) -> None:
        workers = self.workers
        if len(workers) < 2:
            return
        start = self.index[workers[0]]
        seen = {start}
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for v, _ in self.adjacency[u]:
                if v not in seen:
                    seen.add(v)
                    queue.append(v)
        cut_off = [w for w in workers if self.index[w] not in seen]
        if cut_off:
            shown = ", ".join(cut_off[:5]) + (" …" if len(cut_off) > 5 else "")
            raise NetweaveError(f"topology {self.name!r}: workers {shown} cannot reach {workers[0]}; add links that connect them")


def _suggest(name: str, known) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
