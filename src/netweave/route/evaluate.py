"""An independent evaluator of any routing of aggregation tasks (issue 6, item 5).

Given a topology, the jobs, and per task a node path from every worker to its PS, it checks the
paths (they exist link by link, start at the worker, end at the PS, climb then descend), applies
pipeline-aware aggregation — flows of one task that enter an INA switch on the same ingress
pipeline merge into one, which must then leave on one remaining path — counts the flows of every
task on every directed link, and gives the tasks max-min fair rates (progressive filling: all
tasks grow together; a task stops when a link it uses is full). It does not care how the routes
were produced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..topology import Topology
from ..topology.paths import _is_updown, clos_tiers
from .jobs import Job, Task

Routes = dict[str, dict[str, list[str]]]  # task name -> worker -> node path


@dataclass
class Evaluation:
    """``rates_gbps``: task -> rate; ``flows``: task -> {(u, v): flows on that directed link};
    ``bottleneck``: task -> the link that froze it."""

    rates_gbps: dict[str, float]
    flows: dict[str, dict[tuple[str, str], int]]
    bottleneck: dict[str, tuple[str, str] | None]


def task_flows(topo: Topology, task: Task, paths: dict[str, list[str]], ina: bool = True) -> dict[tuple[str, str], int]:
    """Flows of ``task`` on every directed link after pipeline-aware aggregation; rejects bad routes."""
    tiers = clos_tiers(topo)
    merged: dict[tuple[str, int], list[str]] = {}
    flows: dict[tuple[str, str], int] = {}
    for w in task.workers:
        path = paths.get(w)
        if not path:
            raise NetweaveError(f"task {task.name}: no path for worker {w}")
        if path[0] != w or path[-1] != task.ps:
            raise NetweaveError(f"task {task.name}: the path of {w} must run from {w} to the PS {task.ps}, got {path[0]}…{path[-1]}")
        for name in path:
            topo.node(name)
        if len(set(path)) != len(path):
            again = next(v for i, v in enumerate(path) if v in path[:i])
            raise NetweaveError(f"task {task.name}: the path of {w} ({' '.join(path)}) visits {again} twice; "
                                "a path must not loop")
        for u, v in zip(path, path[1:]):
            if topo.link_between(u, v) is None:
                raise NetweaveError(f"task {task.name}: link {u}–{v} on the path of {w} does not exist")
        if not _is_updown([tiers[v] for v in path]):
            raise NetweaveError(f"task {task.name}: the path of {w} ({' '.join(path)}) is not up-down")
        for i, (u, v) in enumerate(zip(path, path[1:])):
            e = topo.link_between(u, v)
            flows[(u, v)] = flows.get((u, v), 0) + 1
            node = topo.node(v)
            if ina and node.kind == "switch" and node.ina:
                key = (v, topo.port_pipeline(v, e))
                rest = path[i + 1:]
                if key in merged:
                    if merged[key] != rest:
                        raise NetweaveError(f"task {task.name}: flows merged at {v} (pipeline {key[1]}) leave on different "
                                            f"paths ({' '.join(merged[key])} vs {' '.join(rest)})")
                    break
                merged[key] = rest
    return flows


def max_min_rates(topo: Topology, flows: dict[str, dict[tuple[str, str], int]]) -> tuple[dict[str, float], dict]:
    """Progressive filling of the tasks' rates (Gb/s) over the links they share."""
    names = list(flows)
    links = sorted({l for f in flows.values() for l in f})
    if not links:
        return {n: 0.0 for n in names}, {n: None for n in names}
    y = np.array([[flows[n].get(l, 0) for n in names] for l in links], dtype=float)
    cap = np.array([topo.links[topo.link_between(u, v)].gbps for u, v in links])
    rate = np.zeros(len(names))
    active = np.ones(len(names), dtype=bool)
    frozen_by: dict[str, tuple[str, str] | None] = {n: None for n in names}
    while active.any():
        demand = y[:, active].sum(axis=1)
        room = cap - y @ rate
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(demand > 0, room / demand, np.inf)
        k = int(np.argmin(step))
        rate[active] += step[k]
        full = np.isclose(y @ rate, cap, rtol=1e-9, atol=1e-12) & (demand > 0)
        for j in np.flatnonzero(active & (y[full] > 0).any(axis=0)):
            active[j] = False
            frozen_by[names[j]] = links[int(np.flatnonzero(full & (y[:, j] > 0))[0])]
    return {n: float(r) for n, r in zip(names, rate)}, frozen_by


def evaluate_routes(topo: Topology, jobs: list[Job], routes: Routes, ina: bool = True) -> Evaluation:
    """Flows and max-min rates of ``routes`` for every task of ``jobs``."""
    flows = {}
    for job in jobs:
        for task in job.tasks:
            if task.name not in routes:
                raise NetweaveError(f"the routes have no entry for task {task.name}")
            flows[task.name] = task_flows(topo, task, routes[task.name], ina)
    rates, bottleneck = max_min_rates(topo, flows)
    return Evaluation(rates, flows, bottleneck)
