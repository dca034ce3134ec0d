"""A small helper that accumulates nodes and links for the builders."""

from __future__ import annotations

from ..topology import Link, Node, Topology


class Net:
    """Collects :class:`Node` and :class:`Link` values, then builds a validated :class:`Topology`."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: list[Node] = []
        self.links: list[Link] = []

    def node(self, name: str, kind: str, **attrs) -> str:
        self.nodes.append(Node(name, kind, **attrs))
        return name

    def link(self, a: str, b: str, gbps: float, latency_us: float = 1.0, label: str | None = None) -> None:
        self.links.append(Link(a, b, float(gbps), float(latency_us), label=label))

    def build(self) -> Topology:
        return Topology(self.name, self.nodes, self.links)
