"""Run a routing algorithm on jobs, evaluate it, and read/write the routes JSON of DESIGN.md."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .._files import read_json
from ..errors import NetweaveError
from ..topology import Topology
from .aro import aro, rate_lp, upper_bound
from .baselines import aggtree_routes, ecmp_routes, grid_routes, ps_routes
from .evaluate import Routes, evaluate_routes
from .jobs import PRECISIONS, Job, Task, check_jobs

ALGORITHMS = {"aro": None, "ecmp": ecmp_routes, "grid": grid_routes, "aggtree": aggtree_routes, "ps": ps_routes}


def route_jobs(topo: Topology, jobs: list[Job], algorithm: str, seed: int = 0, time_limit: float = 60.0,
               accelerations: tuple[str, ...] = ()) -> dict:
    """Routes of ``algorithm`` for ``jobs`` with their evaluated rates: the routes JSON as a dict."""
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
    report = {"algorithm": algorithm, "topology": topo.name, "seed": seed,
              "tasks": {t.name: {"ps": t.ps, "rate_gbps": rates[t.name], "paths": routes[t.name]}
                        for j in jobs for t in j.tasks},
              "objective_gbps": objective, "solve_time_s": solve, "optimal": optimal,
              "upper_bound_gbps": upper_bound(topo, jobs),
              "evaluated_rates_gbps": ev.rates_gbps}
    report["min_rate_gbps"] = min(ev.rates_gbps.values())
    report["total_rate_gbps"] = sum(ev.rates_gbps.values())
    return report


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


def save_routes(report: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, indent=1))


def load_routes(path: str | Path) -> tuple[Routes, list[Job]]:
    """The paths of a routes JSON and the jobs they imply (one job holding every task)."""
    data = read_json(path)
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict) or not all(isinstance(t, dict) and "ps" in t and isinstance(t.get("paths"), dict)
                                              for t in tasks.values()):
        raise NetweaveError(f"{path}: expected {{'tasks': {{NAME: {{'ps': …, 'paths': {{worker: [nodes]}}}}}}}}")
    routes = {name: {w: list(p) for w, p in t["paths"].items()} for name, t in tasks.items()}
    job = Job("J0", tuple(Task(name, t["ps"], tuple(t["paths"])) for name, t in tasks.items()))
    return routes, [job]


def route_precision(topo: Topology, jobs: list[Job], scheme: str, seed: int = 0, switch_gbps: float = 100.0,
                    model=None) -> dict:
    """The precision-aware control plane (PAHInA or a baseline) on the one task of ``jobs``:
    the routes JSON with ``worker_rates_gbps``, aggregators and the training-time metrics."""
    from .pahina import TrainingModel, plan_precision

    check_jobs(jobs, topo)
    tasks = [t for j in jobs for t in j.tasks]
    if len(tasks) != 1:
        raise NetweaveError(f"precision-aware routing plans one task (one PS); the jobs have {len(tasks)}")
    task = tasks[0]
    t0 = time.perf_counter()
    assign, rates, net, metrics = plan_precision(topo, task, scheme, seed, switch_gbps, model or TrainingModel())
    solve = time.perf_counter() - t0
    paths = {}
    for w, v in assign.target.items():
        head = net.path(w, v)
        paths[w] = head if v == task.ps else head + net.path(v, task.ps)[1:]
    return {"algorithm": scheme, "topology": topo.name, "seed": seed,
            "tasks": {task.name: {"ps": task.ps, "rate_gbps": min(rates.worker_gbps.values()),
                                  "worker_rates_gbps": rates.worker_gbps, "aggregators": assign.target,
                                  "precisions": task.precision_of(), "paths": paths}},
            "output_streams_gbps": {f"{s}:{p}": y for (s, p), y in rates.output_gbps.items()},
            "base_rate_gbps": rates.m, "solve_time_s": solve, **metrics}
