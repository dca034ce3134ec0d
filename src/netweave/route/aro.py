"""ARO: aggregator-aware routing optimisation (aro.txt §III-B, §III-D), solved exactly with HiGHS.

Model (eqs. 4–10): integer flows ``y[i]_e`` of task ``i`` on every edge of its unfolded DAG, one
flow out of every worker (5), binaries ``x[i]_p`` per INP that is 1 iff flows enter it (7) and
then send exactly one flow on (8), conservation at OPs and common switches (9), and link
capacities ``Σ_i y[i]_e r[i] <= b_e`` (10).

The product ``y·r`` is bilinear. With the tasks' rate *ratios* fixed, ``r[i] = ρ_i / t``, and (10)
becomes ``Σ_i ρ_i y[i]_e <= b_e t``: minimising ``t`` is an integer min-max flow problem, a MILP
that is exact — for one task (SJST) it is the whole problem, with no rate quantisation and no
search over candidate rates even when link speeds differ. For several tasks (SJMT eq. 2, MJMT
eq. 3) the routes of the MILP are fixed and a small LP finds the best rates; the ratios are then
set to those rates and the MILP solved again, a few times, keeping the best objective. The
simple upper bound (every worker link carries one flow of each of its tasks, every PS link at
least one flow of each of its tasks) is reported beside it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np

from ..errors import NetweaveError
from ..topology import Topology
from .evaluate import Routes
from .solver import new_highs
from .jobs import Job, Task
from .unfold import Unfolded, unfold_clos
from .walk import walk_routes

MU = 1e-3  # μ of eq. 3: a small weight on the total that makes MJMT work-conserving


@dataclass
class Solution:
    routes: Routes
    rates_gbps: dict[str, float]
    objective: float
    upper_bound: float
    optimal: bool
    solve_time_s: float
    iterations: int


def _min_max_flows(topo: Topology, dags: list[Unfolded], ratio: np.ndarray, time_limit: float,
                   fixed_t: float | None = None) -> tuple[list[dict], bool]:
    """The MILP: minimise t subject to (5)–(9) and Σ_i ρ_i y[i]_e <= b_e t. Returns y per task.
    With ``fixed_t`` it only looks for flows under that t (QSR's feasibility test); ``None`` flows
    when there are none."""
    h = new_highs()
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", 0.0)
    inf = highspy.kHighsInf
    col = 0
    yvar: list[dict[tuple[str, str], int]] = []
    integer = []
    lower, upper, cost = [], [], []

    def new(lo, hi, c=0.0, is_int=True):
        nonlocal col
        lower.append(lo), upper.append(hi), cost.append(c)
        if is_int:
            integer.append(col)
        col += 1
        return col - 1

    t = new(0.0, inf, 1.0, is_int=False) if fixed_t is None else new(fixed_t, fixed_t, 0.0, is_int=False)
    rows: list[tuple[float, float, list[int], list[float]]] = []
    bmax = max(topo.links[e].gbps for d in dags for e in d.link.values())
    for d in dags:
        m = len(d.task.workers)
        y = {edge: new(0.0, float(m)) for edge in d.edges}
        yvar.append(y)
        ins: dict[str, list[tuple[str, str]]] = {}
        for (u, v) in d.edges:
            ins.setdefault(v, []).append((u, v))
        for w in d.task.workers:  # eq. 5
            rows.append((1.0, 1.0, [y[(w, v)] for v in d.succ[w]], [1.0] * len(d.succ[w])))
        for z, into in ins.items():
            if z == d.task.ps:
                continue
            outs = [y[(z, v)] for v in d.succ.get(z, [])]
            if z in d.ina:  # eqs. 6–8 for every INP of z, then the OP sends what the INPs send
                x = []
                for p in sorted({d.pipeline[e] for e in into}):
                    xp = new(0.0, 1.0)
                    x.append(xp)
                    members = [y[e] for e in into if d.pipeline[e] == p]
                    rows.append((-inf, 0.0, members + [xp], [1.0] * len(members) + [-float(m)]))
                    rows.append((-inf, 0.0, [xp] + members, [1.0] + [-1.0] * len(members)))
                rows.append((0.0, 0.0, outs + x, [1.0] * len(outs) + [-1.0] * len(x)))
            else:  # eq. 9
                rows.append((0.0, 0.0, [y[e] for e in into] + outs, [1.0] * len(into) + [-1.0] * len(outs)))
    links: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for d, y, rho in zip(dags, yvar, ratio):
        for edge in d.edges:
            links.setdefault(edge, []).append((y[edge], float(rho)))
    for (u, v), terms in links.items():  # eq. 10 with r[i] = ρ_i / t, capacities scaled by the fastest link
        b = topo.links[topo.link_between(u, v)].gbps / bmax
        rows.append((-inf, 0.0, [c for c, _ in terms] + [t], [r for _, r in terms] + [-b]))
    h.addVars(col, np.array(lower), np.array(upper))
    h.changeColsCost(col, np.arange(col), np.array(cost))
    for lo, hi, idx, val in rows:
        h.addRow(lo, hi, len(idx), np.array(idx, dtype=np.int32), np.array(val))
    h.changeColsIntegrality(len(integer), np.array(integer, dtype=np.int32),
                            np.array([highspy.HighsVarType.kInteger] * len(integer)))
    h.run()
    status = h.getModelStatus()
    if fixed_t is not None and status == highspy.HighsModelStatus.kInfeasible:
        return None, True
    if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
        raise NetweaveError(f"the ARO model could not be solved ({h.modelStatusToString(status)})")
    values = np.asarray(h.getSolution().col_value)
    if not np.isfinite(values).all() or (status != highspy.HighsModelStatus.kOptimal and values.size == 0):
        raise NetweaveError("the ARO solver found no feasible routing within the time limit; raise --time-limit")
    flows = [{edge: int(round(values[c])) for edge, c in y.items()} for y in yvar]
    return flows, status == highspy.HighsModelStatus.kOptimal


def generate_routes(dag: Unfolded, flows: dict[tuple[str, str], int]) -> dict[str, list[str]]:
    """Algorithm 1: a path per worker along edges with flow left (see :mod:`netweave.route.walk`)."""
    left = dict(flows)

    def next_hop(u: str) -> str:
        v = next((v for v in dag.succ.get(u, []) if left.get((u, v), 0) > 0), None)
        if v is None:
            raise NetweaveError(f"task {dag.task.name}: the flows leave {u} nowhere (inconsistent solution)")
        left[(u, v)] -= 1
        return v

    return walk_routes(dag, next_hop)


def rate_lp(topo: Topology, jobs: list[Job], flows: dict[str, dict[tuple[str, str], int]],
            caps: dict | None = None) -> tuple[dict[str, float], float]:
    """Best rates for fixed flows under the objective of the job mix (eq. 1, 2 or 3)."""
    tasks = [t for j in jobs for t in j.tasks]
    names = [t.name for t in tasks]
    n = len(tasks)
    h = new_highs()
    inf = highspy.kHighsInf
    h.addVars(n + 1, np.zeros(n + 1), np.full(n + 1, inf))  # rates, then z = min_s β_s Σ r
    index = {name: k for k, name in enumerate(names)}
    multi_job = len(jobs) > 1
    cost = np.zeros(n + 1)
    for job in jobs:
        for t in job.tasks:
            cost[index[t.name]] = -(MU * job.weight if multi_job else 1.0)
    cost[n] = -1.0 if multi_job else 0.0
    h.changeColsCost(n + 1, np.arange(n + 1), cost)
    if multi_job:
        for job in jobs:  # z <= β_s Σ_{i in s} r_i
            idx = [index[t.name] for t in job.tasks]
            h.addRow(-inf, 0.0, len(idx) + 1, np.array(idx + [n], dtype=np.int32),
                     np.array([-job.weight] * len(idx) + [1.0]))
    rows = caps if caps is not None else _link_rows(topo, flows, index)
    for (idx, val), b in rows:
        h.addRow(-inf, b, len(idx), np.array(idx, dtype=np.int32), np.array(val, dtype=float))
    h.run()
    r = np.asarray(h.getSolution().col_value)
    return {name: float(r[index[name]]) for name in names}, -float(h.getInfo().objective_function_value)


def _link_rows(topo, flows, index):
    links: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
    for name, f in flows.items():
        for edge, count in f.items():
            if count:
                idx, val = links.setdefault(edge, ([], []))
                idx.append(index[name])
                val.append(float(count))
    return [((idx, val), topo.links[topo.link_between(*edge)].gbps) for edge, (idx, val) in links.items()]


def upper_bound(topo: Topology, jobs: list[Job]) -> float:
    """The objective with only the unavoidable loads: one flow of each task on each of its workers'
    access links and at least one on its PS's access link."""
    tasks = [t for j in jobs for t in j.tasks]
    index = {t.name: k for k, t in enumerate(tasks)}
    access: dict[str, list[int]] = {}
    for t in tasks:
        for host in (*t.workers, t.ps):
            access.setdefault(host, []).append(index[t.name])
    rows = []
    for host, idx in access.items():
        nb, e = topo.adjacency[topo.index[host]][0]
        rows.append(((idx, [1.0] * len(idx)), topo.links[e].gbps))
    return rate_lp(topo, jobs, {}, caps=rows)[1]


ACCELERATIONS = ("app", "sro", "qsr")


def aro(topo: Topology, jobs: list[Job], time_limit: float = 60.0, iterations: int = 3,
        accelerations: tuple[str, ...] = (), alpha: float = 0.6, levels: int = 100) -> Solution:
    """Routes and rates of every task by ARO (exact for one task).

    ``accelerations`` (§III-C, off by default: the exact model is fast here) — ``app``: keep only
    ``floor(alpha n)`` of the n INA spines per task, those whose INPs' possible loads vary least,
    handed out round robin over the tasks; ``sro``: first solve without INA-agnostic spines and
    drop the INA spines that solution leaves unused; ``qsr``: rates on a grid of ``levels`` steps of
    the fastest link (one task: the largest feasible step, by bisection).
    """
    unknown = set(accelerations) - set(ACCELERATIONS)
    if unknown:
        raise NetweaveError(f"unknown acceleration {', '.join(sorted(unknown))}; use {', '.join(ACCELERATIONS)}")
    tasks: list[Task] = [t for j in jobs for t in j.tasks]
    dags = [unfold_clos(topo, t) for t in tasks]
    if not any(d.ina for d in dags):
        raise NetweaveError("no INA switch lies on any worker-to-PS path; ARO needs INA switches (use --algorithm ps)")
    t0 = time.perf_counter()
    if "app" in accelerations:
        dags = pre_prune(topo, dags, alpha)
    if "sro" in accelerations:
        dags = staged_prune(topo, dags, time_limit)
    if "qsr" in accelerations and len(tasks) == 1:
        return _quantized(topo, jobs, dags[0], levels, time_limit, t0)
    ratio = np.ones(len(tasks))
    best, optimal = None, True
    for it in range(iterations if len(tasks) > 1 else 1):
        flows, opt = _min_max_flows(topo, dags, ratio, time_limit)
        optimal &= opt
        named = {t.name: f for t, f in zip(tasks, flows)}
        rates, objective = rate_lp(topo, jobs, named)
        if best is None or objective > best[2] + 1e-9:
            best = (flows, rates, objective)
        r = np.array([rates[t.name] for t in tasks])
        if r.max() <= 0 or np.allclose(r / r.max(), ratio / ratio.max()):
            break
        ratio = np.maximum(r / r.max(), 1e-3)
    flows, rates, objective = best
    if "qsr" in accelerations:  # several tasks: rates rounded down to the grid
        step = max(topo.links[e].gbps for d in dags for e in d.link.values()) / levels
        rates = {k: np.floor(v / step + 1e-9) * step for k, v in rates.items()}
    routes = {t.name: generate_routes(d, f) for t, d, f in zip(tasks, dags, flows)}
    return Solution(routes, rates, objective, upper_bound(topo, jobs),
                    optimal and len(tasks) == 1 and not accelerations, time.perf_counter() - t0, it + 1)


def _spines(topo: Topology, dag: Unfolded) -> list[str]:
    """The alternative aggregators of a task: INA switches above the leaves (tier ≥ 2)."""
    return sorted(v for v in dag.ina if (topo.node(v).tier or 0) >= 2)


def _without(dag: Unfolded, drop: set[str]) -> Unfolded:
    """``dag`` without the candidate paths through ``drop`` (every worker keeps at least one path)."""
    if not drop:
        return dag
    out = Unfolded(dag.task)
    for w, paths in dag.paths.items():
        kept = [p for p in paths if not drop & set(p)] or paths
        out.paths[w] = kept
        for p in kept:
            for u, v in zip(p, p[1:]):
                if (u, v) not in out.link:
                    out.link[(u, v)] = dag.link[(u, v)]
                    out.edges.append((u, v))
                    out.succ.setdefault(u, []).append(v)
                    if (u, v) in dag.pipeline:
                        out.pipeline[(u, v)] = dag.pipeline[(u, v)]
    out.ina = {v for (_, v) in out.pipeline}
    return out


def pre_prune(topo: Topology, dags: list[Unfolded], alpha: float) -> list[Unfolded]:
    """APP: per task keep floor(alpha n) INA spines with the least variance of their INPs' scores
    (the most flows each INP could receive), popped round robin from a shared list (Figure 6).

    Spines of equal variance (the rule in symmetric Clos networks) are taken in topology order: the
    shared list is built from a set, whose order changes with ``PYTHONHASHSEED``, so every ordering
    here names its tie-break."""
    if not 0 < alpha <= 1:
        raise NetweaveError(f"APP alpha {alpha} must be in (0, 1]")
    scored = []
    for d in dags:
        into: dict[str, int] = {}
        for (u, v) in d.edges:
            into[v] = into.get(v, 0) + 1
        def emits(u):  # flows a node can send on: one per used INP of an INA switch, else what enters
            if u in d.ina:
                return len({d.pipeline[e] for e in d.edges if e[1] == u})
            return into.get(u, 1)
        variance = {}
        for s_ in _spines(topo, d):
            score: dict[int, int] = {}
            for (u, v), p in d.pipeline.items():
                if v == s_:
                    score[p] = score.get(p, 0) + emits(u)
            variance[s_] = float(np.var(list(score.values()))) * len(score)
        scored.append(variance)
    pool: list[str] = []
    out = []
    for d, variance in zip(dags, scored):
        keep_n = max(1, int(alpha * len(variance))) if variance else 0
        kept: list[str] = []
        while len(kept) < keep_n:
            if not [a for a in pool if a in variance and a not in kept]:
                pool = sorted({a for v in scored for a in v},
                              key=lambda a: (min(v.get(a, np.inf) for v in scored), topo.index[a]))
            nxt = min((a for a in pool if a in variance and a not in kept), key=lambda a: (variance[a], topo.index[a]))
            pool.remove(nxt)
            kept.append(nxt)
        out.append(_without(d, set(variance) - set(kept)))
    return out


def staged_prune(topo: Topology, dags: list[Unfolded], time_limit: float) -> list[Unfolded]:
    """SRO: solve without the INA-agnostic spines; INA spines left without flow are dropped."""
    cs_spines = [{v for (u, v) in d.edges if v not in d.ina and (topo.node(v).tier or 0) >= 2} for d in dags]
    first = [_without(d, c) for d, c in zip(dags, cs_spines)]
    flows, _ = _min_max_flows(topo, first, np.ones(len(dags)), time_limit)
    out = []
    for d, f in zip(dags, flows):
        used = {v for (u, v), y in f.items() if y > 0}
        out.append(_without(d, set(_spines(topo, d)) - used))
    return out


def _quantized(topo: Topology, jobs: list[Job], dag: Unfolded, levels: int, time_limit: float, t0: float) -> Solution:
    """QSR for one task: the largest rate ``q · b̄ / levels`` with a feasible routing, by bisection."""
    bmax = max(topo.links[e].gbps for e in dag.link.values())
    lo, hi, best = 0, levels, None
    while lo < hi:
        q = (lo + hi + 1) // 2
        flows, _ = _min_max_flows(topo, [dag], np.ones(1), time_limit, fixed_t=levels / q)
        if flows is None:
            hi = q - 1
        else:
            lo, best = q, flows[0]
    if best is None:
        raise NetweaveError(f"QSR found no rate on a grid of {levels} steps; raise the number of levels")
    rate = lo * bmax / levels
    task = dag.task
    return Solution({task.name: generate_routes(dag, best)}, {task.name: rate}, rate, upper_bound(topo, jobs),
                    False, time.perf_counter() - t0, 1)
