"""Run a routing algorithm on jobs, evaluate it, and read/write the routes JSON of docs/formats.md.

Results are typed: :class:`RouteResult` (ARO's model: rates of max-min fair aggregation flows)
and :class:`PrecisionResult` (PAHInA's model: per-worker rates and the §VI-A training metrics);
``summary()`` of either is the routes JSON.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._files import read_json
from ..errors import NetweaveError
from ..topology import Topology
from .aro import aro, rate_lp, upper_bound
from .baselines import aggtree_routes, ecmp_routes, grid_routes, ps_routes
from .evaluate import Routes, evaluate_routes
from .jobs import PRECISIONS, Job, Task, check_jobs
from .pahina import TrainingMetrics

ALLREDUCE_FIELDS = ("iteration_time_s", "training_time_s", "throughput_samples_per_s")  # shown as ring_…, tree_…
ALGORITHMS = {"aro": None, "ecmp": ecmp_routes, "grid": grid_routes, "aggtree": aggtree_routes, "ps": ps_routes}


@dataclass(frozen=True)
class TaskRoute:
    """One task's routes: ``paths`` maps each worker to its node path ending at the PS.

    ``worker_rates_gbps``, ``aggregators`` (worker → aggregating switch or the PS) and
    ``precisions`` are set by the precision-aware schemes only."""

    ps: str
    rate_gbps: float
    paths: dict[str, list[str]]
    worker_rates_gbps: dict[str, float] | None = None
    aggregators: dict[str, str] | None = None
    precisions: dict[str, str] | None = None

    def summary(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class RouteResult:
    """Routes of one algorithm on ARO's model, with their evaluated rates.

    Attributes:
        objective_gbps: the job mix's objective (eq. 1–3: the min, weighted sum or max-min of the
            tasks' aggregation rates, Gb/s) of the routes; upper_bound_gbps: its bound with only the
            unavoidable loads. evaluated_rates_gbps: each task's rate by the independent evaluator.
        optimal: ARO's MILP proved optimal (None for the baselines).
    """

    algorithm: str
    topology: str
    seed: int
    tasks: dict[str, TaskRoute]
    objective_gbps: float
    solve_time_s: float
    optimal: bool | None
    upper_bound_gbps: float
    evaluated_rates_gbps: dict[str, float] = field(default_factory=dict)
    allreduce_rates_gbps: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def min_rate_gbps(self) -> float:
        return min(self.evaluated_rates_gbps.values())

    @property
    def total_rate_gbps(self) -> float:
        return sum(self.evaluated_rates_gbps.values())

    def summary(self) -> dict:
        """The routes JSON (docs/formats.md), with the rates and the solve time."""
        return {"algorithm": self.algorithm, "topology": self.topology, "seed": self.seed,
                "tasks": {name: t.summary() for name, t in self.tasks.items()},
                "objective_gbps": self.objective_gbps, "solve_time_s": self.solve_time_s, "optimal": self.optimal,
                "upper_bound_gbps": self.upper_bound_gbps, "evaluated_rates_gbps": self.evaluated_rates_gbps,
                "min_rate_gbps": self.min_rate_gbps, "total_rate_gbps": self.total_rate_gbps,
                "allreduce_rates_gbps": self.allreduce_rates_gbps}

    def save(self, path: str | Path) -> None:
        save_routes(self, path)


@dataclass(frozen=True, kw_only=True)
class PrecisionResult:
    """A precision-aware routing (PAHInA or a baseline) of one task and its training metrics.

    Attributes:
        output_streams_gbps: rate of every aggregated stream ``"switch:precision"`` toward the PS.
        base_rate_gbps: eq. 2's base rate ``m``.
        allreduce: the same task's metrics under a host ring and tree all-reduce of fp32 gradients
            (no PS, no INA: the baseline users run without it; :func:`~.pahina.allreduce_metrics`).
    """

    algorithm: str
    topology: str
    seed: int
    tasks: dict[str, TaskRoute]
    output_streams_gbps: dict[str, float]
    base_rate_gbps: float
    solve_time_s: float
    metrics: "TrainingMetrics"
    allreduce: dict[str, "TrainingMetrics"] = field(default_factory=dict)

    def summary(self) -> dict:
        return {"algorithm": self.algorithm, "topology": self.topology, "seed": self.seed,
                "tasks": {name: t.summary() for name, t in self.tasks.items()},
                "output_streams_gbps": self.output_streams_gbps, "base_rate_gbps": self.base_rate_gbps,
                "solve_time_s": self.solve_time_s, **self.metrics.summary(),
                **{f"{kind}_{k}": v for kind, m in self.allreduce.items()
                   for k, v in m.summary().items() if k in ALLREDUCE_FIELDS},
                "speedup_vs_ring": (self.allreduce["ring"].iteration_time_s / self.metrics.iteration_time_s
                                    if "ring" in self.allreduce and self.metrics.iteration_time_s > 0 else None)}

    def save(self, path: str | Path) -> None:
        save_routes(self, path)


def route_jobs(topo: Topology, jobs: list[Job], algorithm: str, seed: int = 0, time_limit: float = 60.0,
               accelerations: tuple[str, ...] = ()) -> RouteResult:
    """Routes of ``algorithm`` for ``jobs`` with their evaluated rates."""
    if algorithm not in ALGORITHMS:
        raise NetweaveError(f"unknown algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
    check_jobs(jobs, topo)
    if algorithm != "ps":
        check_one_precision(jobs, algorithm)
    t0 = time.perf_counter()
    optimal = None
    if algorithm == "aro":
        sol = aro(topo, jobs, time_limit=time_limit, accelerations=accelerations)
        routes, planned, optimal = sol.routes, sol.rates_gbps, sol.optimal
    else:
        routes, planned = ALGORITHMS[algorithm](topo, jobs, seed), None
    solve = time.perf_counter() - t0
    ev = evaluate_routes(topo, jobs, routes, ina=algorithm != "ps")
    rates = planned if planned is not None else ev.rates_gbps
    _, objective = rate_lp(topo, jobs, ev.flows) if planned is None else (None, sol.objective)
    return RouteResult(algorithm=algorithm, topology=topo.name, seed=seed,
                       tasks={t.name: TaskRoute(t.ps, rates[t.name], routes[t.name]) for j in jobs for t in j.tasks},
                       objective_gbps=objective, solve_time_s=solve, optimal=optimal,
                       upper_bound_gbps=upper_bound(topo, jobs), evaluated_rates_gbps=ev.rates_gbps,
                       allreduce_rates_gbps=allreduce_rates(topo, jobs))


def allreduce_rates(topo: Topology, jobs: list[Job]) -> dict[str, dict[str, float]]:
    """Per task, the rate a host ring and tree all-reduce among its workers achieves, in ARO's unit:
    the gradient bytes each worker contributes per second (Gb/s), ``S × 8 / allreduce time``, with
    every task alone on the network (the baseline without INA; :mod:`.allreduce`)."""
    from .allreduce import KINDS, allreduce_time_s

    out = {}
    for task in (t for j in jobs for t in j.tasks):
        out[task.name] = {kind: 8 / allreduce_time_s(topo, list(task.workers), 1.0, kind) / 1e9
                          if len(task.workers) > 1 else float("inf") for kind in KINDS}
    return out


def check_one_precision(jobs: list[Job], algorithm: str) -> None:
    """ARO and the INA baselines merge every flow of a task that meets on one pipeline, so a task must
    send one precision. One precision per task (``precision: fp16`` in the jobs file) changes nothing
    for them and is accepted; a task whose workers send different precisions is PAHInA's problem."""
    for job in jobs:
        for task in job.tasks:
            kinds = sorted(set(task.precisions), key=PRECISIONS.index)
            if len(kinds) > 1:
                raise NetweaveError(f"task {task.name} mixes precisions ({', '.join(kinds)}); --algorithm {algorithm} "
                                    "does not model mixed precisions: use --algorithm pahina (or atp, grid, ps), "
                                    "or give every worker of the task one precision")


def save_routes(result: "RouteResult | PrecisionResult", path: str | Path) -> None:
    """Write ``result`` as the routes JSON (docs/formats.md), with the run's metadata under ``run``."""
    from ..run_info import run_metadata

    Path(path).write_text(json.dumps(result.summary() | {"run": run_metadata()}, indent=1))


ROUTES_SHAPE = "{'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"


def read_routes_tasks(path: str | Path) -> dict[str, dict]:
    """The ``tasks`` of a routes JSON, checked for shape: ``{task: {"ps": node, "paths": {worker:
    [node, …]}}}`` with names as strings and every path a non-empty list of names. One error line
    (naming the file and the task) for anything else; whether the nodes and links exist is the
    topology's check."""
    data = read_json(path)
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict) or not tasks:
        raise NetweaveError(f"{path}: expected a routes JSON (`netweave route --out`): {ROUTES_SHAPE}")
    out = {}
    for name, task in tasks.items():
        where = f"{path}: task {name[:40]!r}"
        if not isinstance(task, dict) or not isinstance(task.get("ps"), str) or not isinstance(task.get("paths"), dict):
            raise NetweaveError(f"{where} must be a mapping with 'ps' (a node name) and 'paths' (worker → list of "
                                f"nodes): {ROUTES_SHAPE}")
        paths = {}
        for worker, nodes in task["paths"].items():
            if not (isinstance(nodes, list) and nodes and all(isinstance(v, str) for v in nodes)):
                raise NetweaveError(f"{where}: the path of {worker[:40]!r} must be a non-empty list of node names, "
                                    f"e.g. [{worker[:40]!r}, …, {task['ps'][:40]!r}]")
            paths[worker] = list(nodes)
        out[name] = {"ps": task["ps"], "paths": paths}
    return out


def load_routes(path: str | Path) -> tuple[Routes, list[Job]]:
    """The paths of a routes JSON and the jobs they imply (one job holding every task)."""
    tasks = read_routes_tasks(path)
    routes = {name: t["paths"] for name, t in tasks.items()}
    job = Job("J0", tuple(Task(name, t["ps"], tuple(t["paths"])) for name, t in tasks.items()))
    return routes, [job]


def route_precision(topo: Topology, jobs: list[Job], scheme: str, seed: int = 0, switch_gbps: float = 100.0,
                    model=None) -> PrecisionResult:
    """The precision-aware control plane (PAHInA or a baseline) on the one task of ``jobs``."""
    from .allreduce import KINDS
    from .pahina import TrainingModel, aggregation_paths, allreduce_metrics, plan_precision

    check_jobs(jobs, topo)
    tasks = [t for j in jobs for t in j.tasks]
    if len(tasks) != 1:
        raise NetweaveError(f"precision-aware routing plans one task (one PS); the jobs have {len(tasks)}")
    task = tasks[0]
    t0 = time.perf_counter()
    assign, rates, net, metrics = plan_precision(topo, task, scheme, seed, switch_gbps, model or TrainingModel())
    solve = time.perf_counter() - t0
    baselines = {kind: allreduce_metrics(topo, task, model or TrainingModel(), kind) for kind in KINDS}
    route = TaskRoute(task.ps, min(rates.worker_gbps.values()), aggregation_paths(net, assign), worker_rates_gbps=rates.worker_gbps,
                      aggregators=assign.target, precisions=task.precision_of())
    return PrecisionResult(algorithm=scheme, topology=topo.name, seed=seed, tasks={task.name: route},
                           output_streams_gbps={f"{s}:{p}": y for (s, p), y in rates.output_gbps.items()},
                           base_rate_gbps=rates.m, solve_time_s=solve, metrics=metrics, allreduce=baselines)
