"""Unfolding a Clos network for one aggregation task (aro.txt §III-A, Figures 4 and 5).

The candidate routes of a task are the shortest up-down paths from each worker to its PS; their
directed edges form a DAG on the physical nodes. (In a leaf-spine or fat-tree every switch lies on
these paths in one direction only for a given PS, so the paper's ``L_in``/``L_out`` copies are the
same node here; a switch met both ways is rejected.) Each INA switch is split into one input
pipeline node (INP) per ingress pipeline of its used in-ports plus one output node (OP): flows of
the task entering on the same pipeline merge into one, flows on different pipelines do not.
Common switches (CS) only forward.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import NetweaveError
from ..topology import Topology
from ..topology.paths import updown_paths
from .jobs import Task


@dataclass
class Unfolded:
    """The DAG of one task.

    Attributes:
        task: the task.
        edges: directed physical edges ``(u, v)`` (node names) on some candidate path, in a
            deterministic order; ``link[(u, v)]`` is the topology link index.
        succ: ``u -> [v, ...]`` out-neighbours in the DAG.
        ina: INA switches on the DAG; ``pipeline[(u, v)]`` is the ingress pipeline of ``v``'s port
            on that edge when ``v`` is an INA switch.
        paths: worker -> its candidate node paths.
    """

    task: Task
    edges: list[tuple[str, str]] = field(default_factory=list)
    link: dict[tuple[str, str], int] = field(default_factory=dict)
    succ: dict[str, list[str]] = field(default_factory=dict)
    ina: set[str] = field(default_factory=set)
    pipeline: dict[tuple[str, str], int] = field(default_factory=dict)
    paths: dict[str, list[list[str]]] = field(default_factory=dict)

    def inps(self) -> list[tuple[str, int]]:
        """The ``(switch, pipeline)`` INPs used by some in-edge."""
        return sorted({(v, p) for (u, v), p in self.pipeline.items()})


def unfold_clos(topo: Topology, task: Task, ina: bool = True) -> Unfolded:
    """The candidate DAG of ``task``; with ``ina=False`` no switch aggregates (plain PS)."""
    out = Unfolded(task)
    direction: dict[str, str] = {}
    for w in task.workers:
        try:
            paths = updown_paths(topo, w, task.ps)
        except NetweaveError:
            raise NetweaveError(f"task {task.name}: the PS {task.ps} is unreachable from {w} by an up-down path") from None
        out.paths[w] = paths
        for path in paths:
            top = max(range(len(path)), key=lambda i: (topo.node(path[i]).tier or 0, -i))
            for i, (u, v) in enumerate(zip(path, path[1:])):
                side = "up" if i + 1 < top else "down"
                if direction.setdefault(v, side) != side and topo.node(v).kind == "switch":
                    raise NetweaveError(f"switch {v} lies on up and down paths of task {task.name}; "
                                        "the unfolding supports leaf-spine and fat-tree networks")
                if (u, v) not in out.link:
                    out.link[(u, v)] = topo.link_between(u, v)
                    out.edges.append((u, v))
                    out.succ.setdefault(u, []).append(v)
    for (u, v), e in out.link.items():
        node = topo.node(v)
        if ina and node.kind == "switch" and node.ina:
            out.ina.add(v)
            out.pipeline[(u, v)] = topo.port_pipeline(v, e)
    return out
