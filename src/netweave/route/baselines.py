"""The routings ARO is compared against (aro.txt §II-C, §IV-A), on the same unfolded DAGs.

* ``ps`` — no INA: every worker takes a random shortest up-down path; nothing is aggregated.
* ``ecmp`` — RANDOM/ATP: a random up-down path per flow; an INA switch aggregates whatever of the
  task enters one ingress pipeline, and the aggregated flow continues on one random path.
* ``aggtree`` — AggTree: workers one by one take the path with the most estimated bandwidth,
  ``min b / (w + 1)`` over its links where ``w`` counts the workers already using a link; a flow
  reaching an INA switch that already carries the task follows its tree (pipeline-oblivious).
  Ties are broken at random, so on homogeneous links it behaves much like ECMP (§II-C).
* ``grid`` — GRID adapted to up-down routing (§IV-A): an LP over the choice of one aggregator per
  worker (its own INA leaf, any INA spine, or the PS's INA leaf; or none) balances the aggregators'
  loads under a processing capacity, randomised rounding picks each worker's aggregator, and the
  spine of each cross-leaf path is chosen to balance link loads, all pipeline-oblivious. A flow that
  meets the task's tree at an INA switch follows it, as the data plane would merge it there.
All produce per-worker node paths; the evaluator then applies the pipelines.
"""

from __future__ import annotations

import highspy
import numpy as np

from ..errors import NetweaveError
from ..topology import Topology
from .evaluate import Routes
from .solver import new_highs
from .jobs import Job
from .unfold import Unfolded, unfold_clos
from .walk import walk_routes

GRID_CAPACITY = 3200  # aggregator processing capacity used for GRID in §IV-A


def _walk(dag: Unfolded, rng: np.random.Generator, merge: bool) -> dict[str, list[str]]:
    """Random next hops; with ``merge``, a flow entering an INP that has a path follows it."""
    return walk_routes(dag, lambda u: dag.succ[u][int(rng.integers(len(dag.succ[u])))], merge)


def ecmp_routes(topo: Topology, jobs: list[Job], seed: int = 0) -> Routes:
    rng = np.random.default_rng(seed)
    return {t.name: _walk(unfold_clos(topo, t), rng, merge=True) for j in jobs for t in j.tasks}


def ps_routes(topo: Topology, jobs: list[Job], seed: int = 0) -> Routes:
    rng = np.random.default_rng(seed)
    return {t.name: _walk(unfold_clos(topo, t, ina=False), rng, merge=False) for j in jobs for t in j.tasks}


def _require_ina(dags: list[Unfolded], algorithm: str) -> None:
    if not any(d.ina for d in dags):
        raise NetweaveError(f"no INA switch lies on any worker-to-PS path; {algorithm} needs INA switches "
                            "(use --algorithm ps or ecmp)")


def aggtree_routes(topo: Topology, jobs: list[Job], seed: int = 0) -> Routes:
    rng = np.random.default_rng(seed)
    routes: Routes = {}
    dags = [unfold_clos(topo, t) for j in jobs for t in j.tasks]
    _require_ina(dags, "aggtree")
    for dag in dags:  # each task on its own, then overlaid (§IV-B)
        used: dict[tuple[str, str], int] = {}  # workers per directed link
        tree: dict[str, list[str]] = {}  # INA switch -> the task's path from it (pipeline-oblivious)
        routes[dag.task.name] = {}
        for w in dag.task.workers:
            best, best_share = [], -1.0
            for cand in rng.permutation(len(dag.paths[w])):
                path = _follow_tree(dag.paths[w][cand], tree)
                share = min(topo.links[topo.link_between(u, v)].gbps / (used.get((u, v), 0) + 1)
                            for u, v in zip(path, path[1:]))
                if share > best_share + 1e-12:
                    best, best_share = path, share
            for u, v in zip(best, best[1:]):
                used[(u, v)] = used.get((u, v), 0) + 1
            _extend_tree(tree, dag, best)
            routes[dag.task.name][w] = best
    return routes


def _extend_tree(tree: dict[str, list[str]], dag: Unfolded, path: list[str]) -> None:
    """Record the task's path onward from every INA switch on ``path`` (flows meeting there merge)."""
    for i, v in enumerate(path):
        if v in dag.ina:
            tree.setdefault(v, path[i:])


def _follow_tree(path: list[str], tree: dict[str, list[str]]) -> list[str]:
    for i, v in enumerate(path):
        if v in tree:
            return path[:i] + tree[v]
    return path


def grid_routes(topo: Topology, jobs: list[Job], seed: int = 0) -> Routes:
    rng = np.random.default_rng(seed)
    routes: Routes = {}
    for job in jobs:
        for task in job.tasks:  # each task on its own, then overlaid (§IV-B)
            load: dict[tuple[str, str], int] = {}
            dag = unfold_clos(topo, task)
            _require_ina([dag], "grid")
            choice = _grid_aggregators(dag, rng)
            routes[task.name] = {}
            tree: dict[str, list[str]] = {}
            for w in task.workers:  # balance the spine choice, following an aggregator's tree once there
                agg = choice[w]
                cands = [p for p in dag.paths[w] if agg is None or agg in p] or dag.paths[w]
                cands = [_follow_tree(p, tree) for p in cands]
                path = min(cands, key=lambda p: (max(load.get(e, 0) for e in zip(p, p[1:])), rng.random()))
                for e in zip(path, path[1:]):
                    load[e] = load.get(e, 0) + 1
                _extend_tree(tree, dag, path)
                routes[task.name][w] = path
    return routes


def _grid_aggregators(dag: Unfolded, rng: np.random.Generator) -> dict[str, str | None]:
    """GRID's relaxed assignment LP and randomised rounding: worker -> aggregator (None: the PS).

    Variables ``z[w, a]`` (share of worker ``w`` aggregated at candidate ``a``) and ``u[a]`` (the
    one flow ``a`` sends on); minimise the PS's load ``Σ_w z[w, PS] + Σ_a u[a]`` with
    ``z[w, a] <= u[a]``, ``Σ_a z[w, a] = 1`` and ``Σ_w z[w, a] <= capacity``.
    """
    ps_leaf = next(u for (u, v) in dag.edges if v == dag.task.ps)
    cands: dict[str, list[str | None]] = {}
    for w in dag.task.workers:
        own = dag.succ[w][0]
        options = {v for p in dag.paths[w] for v in p[1:-1] if v in dag.ina and (v in (own, ps_leaf) or len(p) > 3 and v == p[2])}
        cands[w] = sorted(options) + [None]
    aggs = sorted({a for c in cands.values() for a in c if a is not None})
    h = new_highs()
    inf = highspy.kHighsInf
    zcol = {(w, a): k for k, (w, a) in enumerate((w, a) for w in cands for a in cands[w])}
    ucol = {a: len(zcol) + k for k, a in enumerate(aggs)}
    n = len(zcol) + len(ucol)
    h.addVars(n, np.zeros(n), np.ones(n))
    cost = np.zeros(n)
    for (w, a), k in zcol.items():
        cost[k] = 1.0 if a is None else 0.0
    for k in ucol.values():
        cost[k] = 1.0
    h.changeColsCost(n, np.arange(n), cost)
    for w in cands:
        idx = [zcol[(w, a)] for a in cands[w]]
        h.addRow(1.0, 1.0, len(idx), np.array(idx, dtype=np.int32), np.ones(len(idx)))
    for (w, a), k in zcol.items():
        if a is not None:
            h.addRow(-inf, 0.0, 2, np.array([k, ucol[a]], dtype=np.int32), np.array([1.0, -1.0]))
    for a in aggs:
        idx = [k for (w, b), k in zcol.items() if b == a]
        h.addRow(-inf, GRID_CAPACITY, len(idx), np.array(idx, dtype=np.int32), np.ones(len(idx)))
    h.run()
    z = np.asarray(h.getSolution().col_value)
    choice = {}
    for w, options in cands.items():
        p = np.clip([z[zcol[(w, a)]] for a in options], 0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(len(options), 1 / len(options))
        choice[w] = options[int(rng.choice(len(options), p=p))]
    return choice
