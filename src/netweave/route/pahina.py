"""PAHInA's control plane (pahina.txt §V) and the baselines it is compared with (§VI-A).

Model (§V-A):
- Workers have a precision (fp8, fp16, fp32; payloads 1 : 2 : 4).
- One PS ``α``, and INA switches ``S`` with a per-precision aggregated-output capacity ``C_{s,p}``.
  These come from the topology's ``ina_capacity_gbps``; an INA switch without it gets
  ``switch_gbps`` for every precision. ``P_s`` is the precisions with capacity.
- Link bandwidths ``B_e`` are per direction.
- The path from ``n`` to ``v`` is the *widest* path, the largest bottleneck bandwidth, with ties to
  fewer hops. Its cost is ``d(n, v) = 1 / bottleneck``.
- A worker's gradients go to one aggregator ``A(n)`` (a switch, or the PS itself). An aggregator
  sends one aggregated stream per output precision to the PS on its widest path.

Schemes:
- ``pahina``: Algorithm 1 assigns, then the eq. 2 LP sets the rates. Aggregation is hierarchical
  by precision: a switch keeps one output per precision and never mixes them. Where candidates tie
  on ``d(n, v)`` (every candidate does on uniform links), the paper leaves the order open; netweave
  breaks ties by hops, then by the link load already assigned, then by a seeded random order, never
  by a name (:func:`pahina_assign`). ``r_est`` is the worker's share of the PS's ingress link
  (:func:`default_r_est`), not a constant.
- ``ps``: everything goes to the PS on its widest path; no INA.
- ``atp``: each worker's default path is its widest path to the PS. It aggregates at the first INA
  switch on that path with capacity left. Precisions mix there, so the output is up-cast to the
  highest input precision (the "precision inflation" of §I).
- ``grid``: an LP relaxation assigns workers to aggregators to minimise the heaviest link load
  relative to its bandwidth, precision-unaware (every worker counts as one unit), with randomised
  rounding. Its aggregation is mixed and up-cast like ATP's.

Every scheme's rates come from the same LP (eq. 2): maximise ``m`` with
- ``r_n = w_{p_n} m``, where ``w_p`` is proportional to the payload for PAHInA (weighted proportional
  fairness: every worker needs the same upload time) and 1 for the precision-unaware baselines
  (equal rates, so fp32 workers become stragglers);
- each aggregated stream keeping pace with its inputs, ``y_o >= r_n · size(p_o) / size(p_n)``
  (an up-cast output is larger than its low-precision inputs), and within ``C_{s,p_o}``;
- raw and aggregated streams fitting every directed link.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import highspy
import numpy as np

from ..errors import NetweaveError
from ..topology import Topology
from ..topology.paths import widest_tree_widths
from .jobs import Task
from .solver import new_highs

PAYLOAD = {"fp8": 1, "fp16": 2, "fp32": 4}  # bytes per value
SCHEMES = ("pahina", "ps", "atp", "grid")


@dataclass
class Assignment:
    """``target``: worker -> aggregator (a switch name or the PS); ``mixed``: precisions are
    aggregated together and up-cast (ATP, GRID) instead of per precision (PAHInA)."""

    scheme: str
    task: Task
    target: dict[str, str]
    mixed: bool


@dataclass
class Network:
    """The control plane's view: INA capacities and widest paths from every aggregator."""

    topo: Topology
    capacity: dict[str, dict[str, float]]  # switch -> precision -> Gb/s of aggregated output
    paths: dict[str, dict[str, list[str]]]  # aggregator -> node -> widest path from the aggregator
    width: dict[str, dict[str, float]]  # aggregator -> node -> that path's bottleneck (Gb/s)

    def path(self, a: str, b: str) -> list[str]:
        """Widest path from ``a`` to aggregator ``b`` (paths are symmetric: links are full duplex)."""
        return self.paths[b][a][::-1]

    def cost(self, a: str, b: str) -> float:
        """``d(a, b) = 1 / bottleneck`` of the widest path, in s/Gb."""
        return 1.0 / self.width[b][a]

    def hops(self, a: str, b: str) -> int:
        """Links on the widest path from ``a`` to aggregator ``b``."""
        return len(self.paths[b][a]) - 1


def control_view(topo: Topology, task: Task, switch_gbps: float = 100.0) -> Network:
    capacity = {}
    for node in topo.nodes:
        if node.kind == "switch" and node.ina:
            caps = {p: float(v) for p, v in node.ina_capacity_gbps.items() if v > 0}
            capacity[node.name] = caps or {p: float(switch_gbps) for p in PAYLOAD}
    if task.ps not in {n.name for n in topo.nodes}:
        topo.node(task.ps)
    trees = {v: widest_tree_widths(topo, v) for v in [*capacity, task.ps]}
    for w in task.workers:
        if w not in trees[task.ps][0]:
            raise NetweaveError(f"task {task.name}: the PS {task.ps} is unreachable from {w}")
    return Network(topo, capacity, {v: t[0] for v, t in trees.items()}, {v: t[1] for v, t in trees.items()})


def priority(net: Network, task: Task, w_size: float = 0.5, w_cost: float = 0.5) -> dict[str, float]:
    """Eq. 1: ``Π(n) = w_size NormSize(p_n) + w_cost NormCost(n)``. Both terms are normalised by
    their maximum over the workers; the cost is the cheapest path to any aggregator."""
    prec = task.precision_of()
    size = {w: PAYLOAD[prec[w]] for w in task.workers}
    cost = {w: min(net.cost(w, v) for v in net.paths) for w in task.workers}
    smax, cmax = max(size.values()), max(cost.values())
    return {w: w_size * size[w] / smax + w_cost * cost[w] / cmax for w in task.workers}


def default_r_est(net: Network, task: Task) -> float:
    """``r_est`` (Gb/s), derived from the topology: a worker's fair share of the PS's ingress
    bandwidth, ``B_α / |N|``, capped by the workers' mean access bandwidth.

    §V-B makes ``r_est`` "a conservative estimated rate ... typically set to a fraction of the average
    worker's access link bandwidth"; §V-A treats "the ingress bandwidth of the PS ... as the bandwidth
    of its directly connected physical link", the one link every worker's gradients end at. Their
    share of it is the rate every worker is sure of (the plain-PS plan's), so the fraction here is
    ``B_α / (|N| · B_access)`` rather than a constant. A constant (¼ of the access link, 2.5 Gb/s on
    10 Gb/s hosts) overstates a worker's rate ``|N| B_access / 4 B_α``-fold and, at per-precision
    capacities of 5–10 Gb/s, fills every switch after 2–4 workers and sends the rest to the PS."""
    topo = net.topo
    access = float(np.mean([topo.access(w)[1].gbps for w in task.workers]))
    ingress = float(sum(topo.links[e].gbps for _, e in topo.adjacency[topo.index[topo.node(task.ps).name]]))
    return min(access, ingress / len(task.workers))


def pahina_assign(net: Network, task: Task, r_est: float | None = None, w_size: float = 0.5,
                  w_cost: float = 0.5, seed: int = 0, ties: str = "load") -> Assignment:
    """Algorithm 1: workers by descending priority take the cheapest aggregator that supports
    their precision and still has ``r_est`` (Gb/s) of capacity; the PS is always a candidate and the
    fallback.

    Line 7 sorts the candidates by ``d(n, v)`` only; on uniform links every candidate ties. Departure
    (the paper leaves ties open; §V-A: ``d`` "can incorporate factors such as hop count"): among the
    feasible candidates of least ``d``, a switch goes before the PS (the PS is the fallback), then
    fewer hops, then the least load already assigned — the heaviest utilisation, in eq. 2's units
    (payload-weighted, ``w_p`` per worker over ``B_e``), that the choice would leave on a directed
    link of ``Path(n, v)`` and, if it opens a new (switch, precision) stream, of ``Path(v, α)`` —
    then a random order of the candidates drawn with ``seed``. Nothing depends on node names.
    ``ties="name"`` is the earlier rule (least ``d``, switch before PS, then the alphabetically first
    name), kept only so the benchmark can measure the departure."""
    if ties not in ("load", "name"):
        raise NetweaveError(f"unknown PAHInA tie rule {ties!r}; use load or name")
    topo = net.topo
    prec = task.precision_of()
    r_est = default_r_est(net, task) if r_est is None else float(r_est)
    pri = priority(net, task, w_size, w_cost)
    order = sorted(task.workers, key=lambda n: -pri[n])  # stable: ties keep the task's order
    cands = [*net.capacity, task.ps]
    ps = len(cands) - 1
    cost = np.array([[net.cost(w, v) for v in cands] for w in order])
    hops = np.array([[net.hops(w, v) for v in cands] for w in order])
    cap = {p: np.array([net.capacity[v].get(p, -np.inf) for v in cands[:-1]] + [np.inf]) for p in PAYLOAD}
    used = {p: np.zeros(len(cands)) for p in PAYLOAD}
    rank = np.random.default_rng(seed).permutation(len(cands))  # over the topology's order, not names
    names = np.argsort(np.argsort(np.array(cands, dtype=object)))  # only for ties="name"
    load: dict[tuple[str, str], float] = {}  # directed link -> assigned streams, in units of the base rate m
    gbps: dict[tuple[str, str], float] = {}
    opened: set[tuple[str, str]] = set()

    def links(w: str, v: str, p: str) -> list[tuple[str, str]]:
        path = net.path(w, v)
        es = list(zip(path, path[1:]))
        if v != task.ps and (v, p) not in opened:
            up = net.path(v, task.ps)
            es += zip(up, up[1:])
        return es

    def bandwidth(e: tuple[str, str]) -> float:
        if e not in gbps:
            gbps[e] = topo.links[topo.link_between(*e)].gbps
        return gbps[e]

    target = {}
    for i, w in enumerate(order):
        p, wp = prec[w], float(PAYLOAD[prec[w]])
        ok = used[p] + r_est <= cap[p]  # line 10 (the PS, line 13, always passes)
        c = np.where(ok, cost[i], np.inf)
        tied = ok & (c == c.min())
        if tied[:ps].any():
            tied[ps] = False
        if ties == "name":
            k = int(np.flatnonzero(tied)[np.argmin(names[tied])])
        else:
            h = np.where(tied, hops[i], np.iinfo(np.int64).max)
            idx = np.flatnonzero(tied & (h == h.min()))
            if len(idx) == 1:
                k = int(idx[0])
            else:
                util = [max(((load.get(e, 0.0) + wp) / bandwidth(e) for e in links(w, cands[j], p)), default=0.0)
                        for j in idx]
                k = int(min(zip(util, rank[idx], idx))[2])
        v = cands[k]
        for e in links(w, v, p):
            load[e] = load.get(e, 0.0) + wp
        if k != ps:
            used[p][k] += r_est
            opened.add((v, p))
        target[w] = v
    return Assignment("pahina", task, target, mixed=False)


def ps_assign(net: Network, task: Task) -> Assignment:
    return Assignment("ps", task, {w: task.ps for w in task.workers}, mixed=False)


def atp_assign(net: Network, task: Task, r_est: float | None = None) -> Assignment:
    """The first INA switch on the worker's default (widest) path to the PS with capacity left."""
    r_est = default_r_est(net, task) if r_est is None else r_est
    used: dict[str, float] = {}
    target = {}
    for w in task.workers:
        target[w] = task.ps
        for v in net.path(w, task.ps)[1:-1]:
            if v in net.capacity and used.get(v, 0.0) + r_est <= max(net.capacity[v].values()):
                used[v] = used.get(v, 0.0) + r_est
                target[w] = v
                break
    return Assignment("atp", task, target, mixed=True)


def grid_assign(net: Network, task: Task, seed: int = 0) -> Assignment:
    """LP relaxation of the assignment (min the heaviest link load / bandwidth), randomised rounding."""
    topo, ps = net.topo, task.ps
    aggs = [*net.capacity, ps]
    h = new_highs()
    inf = highspy.kHighsInf
    z = {(w, a): k for k, (w, a) in enumerate((w, a) for w in task.workers for a in aggs)}
    u = {a: len(z) + k for k, a in enumerate(net.capacity)}
    t = len(z) + len(u)
    n = t + 1
    h.addVars(n, np.zeros(n), np.concatenate([np.ones(n - 1), [inf]]))
    h.changeColsCost(1, np.array([t], dtype=np.int32), np.array([1.0]))
    for w in task.workers:
        idx = [z[(w, a)] for a in aggs]
        h.addRow(1.0, 1.0, len(idx), np.array(idx, dtype=np.int32), np.ones(len(idx)))
        for a in net.capacity:
            h.addRow(-inf, 0.0, 2, np.array([z[(w, a)], u[a]], dtype=np.int32), np.array([1.0, -1.0]))
    loads: dict[tuple[str, str], dict[int, float]] = {}
    for (w, a), k in z.items():
        for e in zip(*(lambda p: (p, p[1:]))(net.path(w, a))):
            loads.setdefault(e, {})[k] = 1.0
    for a, k in u.items():
        for e in zip(*(lambda p: (p, p[1:]))(net.path(a, ps))):
            loads.setdefault(e, {})[k] = loads.get(e, {}).get(k, 0.0) + 1.0
    for e, terms in loads.items():
        b = topo.links[topo.link_between(*e)].gbps
        idx = list(terms) + [t]
        h.addRow(-inf, 0.0, len(idx), np.array(idx, dtype=np.int32), np.array(list(terms.values()) + [-b]))
    h.run()
    x = np.asarray(h.getSolution().col_value)
    rng = np.random.default_rng(seed)
    target = {}
    for w in task.workers:
        p = np.clip([x[z[(w, a)]] for a in aggs], 0, None)
        p = p / p.sum() if p.sum() > 0 else None
        target[w] = aggs[int(rng.choice(len(aggs), p=p))]
    return Assignment("grid", task, target, mixed=True)


@dataclass
class Rates:
    """``m`` (the base rate, Gb/s), worker rates, and the output streams ``(switch, precision) -> Gb/s``."""

    m: float
    worker_gbps: dict[str, float]
    output_gbps: dict[tuple[str, str], float]
    outputs: dict[tuple[str, str], list[str]]  # stream -> its workers


def outputs_of(a: Assignment) -> dict[tuple[str, str], list[str]]:
    """Aggregated streams: per (switch, precision) for PAHInA; one per switch at the highest input
    precision for mixed schemes (precision inflation)."""
    prec = a.task.precision_of()
    by_switch: dict[str, list[str]] = {}
    for w, v in a.target.items():
        if v != a.task.ps:
            by_switch.setdefault(v, []).append(w)
    out = {}
    for s, members in by_switch.items():
        if a.mixed:
            top = max((prec[w] for w in members), key=PAYLOAD.__getitem__)
            out[(s, top)] = members
        else:
            for p in sorted({prec[w] for w in members}, key=PAYLOAD.__getitem__):
                out[(s, p)] = [w for w in members if prec[w] == p]
    return out


def weighted_rates(net: Network, a: Assignment) -> Rates:
    """The eq. 2 LP for a fixed assignment: maximise m with r_n = w_{p_n} m, y_o >= w_{p_o} m,
    y_o <= C_o, and every directed link carrying its raw and aggregated streams within B_e."""
    prec = a.task.precision_of()
    outs = outputs_of(a)
    keys = list(outs)
    h = new_highs()
    inf = highspy.kHighsInf
    n = 1 + len(keys)
    upper = [inf] + [net.capacity[s].get(p, max(net.capacity[s].values())) if a.mixed else net.capacity[s][p]
                     for s, p in keys]
    h.addVars(n, np.zeros(n), np.array(upper))
    h.changeColsCost(1, np.array([0], dtype=np.int32), np.array([-1.0]))
    weight = {w: float(PAYLOAD[prec[w]]) if not a.mixed and a.scheme == "pahina" else 1.0 for w in a.task.workers}
    for k, (s, p) in enumerate(keys):  # synchronisation: the stream keeps pace with its workers (eq. 2)
        coef = max(weight[w] * PAYLOAD[p] / PAYLOAD[prec[w]] for w in outs[(s, p)])
        h.addRow(-inf, 0.0, 2, np.array([0, k + 1], dtype=np.int32), np.array([coef, -1.0]))
    links: dict[tuple[str, str], dict[int, float]] = {}
    for w, v in a.target.items():
        path = net.path(w, v)
        for e in zip(path, path[1:]):
            links.setdefault(e, {}).setdefault(0, 0.0)
            links[e][0] += weight[w]
    for k, (s, _) in enumerate(keys):
        path = net.path(s, a.task.ps)
        for e in zip(path, path[1:]):
            links.setdefault(e, {})[k + 1] = 1.0
    for e, terms in links.items():
        b = net.topo.links[net.topo.link_between(*e)].gbps
        h.addRow(-inf, b, len(terms), np.array(list(terms), dtype=np.int32), np.array(list(terms.values())))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise NetweaveError(f"the {a.scheme} rate LP could not be solved ({h.modelStatusToString(h.getModelStatus())})")
    x = np.asarray(h.getSolution().col_value)
    m = float(x[0])
    return Rates(m, {w: weight[w] * m for w in a.task.workers}, {key: float(x[k + 1]) for k, key in enumerate(keys)}, outs)


@dataclass(frozen=True)
class TrainingModel:
    """Iteration time = compute + upload (the slowest worker: its payload / its rate) + PS aggregation
    (bytes reaching the PS / ``ps_gbps``). The model is ``model_mb`` MB of fp32 gradients; lower
    precisions send 1/2 or 1/4 of it."""

    model_mb: float = 100.0
    compute_s: float = 0.05
    ps_gbps: float = 100.0
    global_batch: int = 512
    iterations: int = 1000


@dataclass(frozen=True)
class TrainingMetrics:
    """The §VI-A metrics of one routing under a :class:`TrainingModel` (seconds, Gb/s, shares in [0, 1]).

    ``ina_efficiency`` is the share of gradient bytes aggregated in the network (not reaching the
    PS as sent); ``min_worker_rate_gbps`` the slowest worker's rate of eq. 2."""

    training_time_s: float
    iteration_time_s: float
    upload_time_s: float
    ps_aggregation_time_s: float
    throughput_samples_per_s: float
    gradient_sending_rate_gbps: float
    ina_efficiency: float
    min_worker_rate_gbps: float

    def summary(self) -> dict:
        return asdict(self)


def training_metrics(a: Assignment, rates: Rates, model: TrainingModel = TrainingModel()) -> TrainingMetrics:
    """The §VI-A metrics for one routing."""
    prec = a.task.precision_of()
    payload = {w: model.model_mb * 1e6 * PAYLOAD[prec[w]] / 4 for w in a.task.workers}
    upload_s = max(payload[w] * 8 / (rates.worker_gbps[w] * 1e9) for w in a.task.workers) if rates.m > 0 else float("inf")
    sent = sum(payload.values())
    at_ps = sum(payload[w] for w, v in a.target.items() if v == a.task.ps)
    at_ps += sum(model.model_mb * 1e6 * PAYLOAD[p] / 4 for (_, p) in rates.outputs)
    ps_s = at_ps * 8 / (model.ps_gbps * 1e9)
    iteration_s = model.compute_s + upload_s + ps_s
    return TrainingMetrics(
        training_time_s=model.iterations * iteration_s, iteration_time_s=iteration_s, upload_time_s=upload_s,
        ps_aggregation_time_s=ps_s, throughput_samples_per_s=model.global_batch / iteration_s,
        gradient_sending_rate_gbps=sent * 8 / upload_s / 1e9 if upload_s > 0 else 0.0,
        ina_efficiency=1.0 - at_ps / sent, min_worker_rate_gbps=min(rates.worker_gbps.values()))


def allreduce_metrics(topo: Topology, task: Task, model: TrainingModel = TrainingModel(),
                      kind: str = "ring") -> TrainingMetrics:
    """The same metrics for a host all-reduce among the task's workers (fp32 gradients, no PS, no
    INA: what users run without this paper): the iteration is the compute and the all-reduce's
    network bound (:func:`netweave.route.allreduce.allreduce_time_s`)."""
    from .allreduce import allreduce_time_s, ring_edge_bytes

    size = model.model_mb * 1e6
    allreduce_s = allreduce_time_s(topo, list(task.workers), size, kind)
    iteration_s = model.compute_s + allreduce_s
    sent = len(task.workers) * ring_edge_bytes(len(task.workers), size) if kind == "ring" else 2 * size * (len(task.workers) - 1)
    rate = sent / len(task.workers) * 8 / allreduce_s / 1e9 if allreduce_s > 0 else 0.0
    return TrainingMetrics(
        training_time_s=model.iterations * iteration_s, iteration_time_s=iteration_s, upload_time_s=allreduce_s,
        ps_aggregation_time_s=0.0, throughput_samples_per_s=model.global_batch / iteration_s,
        gradient_sending_rate_gbps=sent * 8 / allreduce_s / 1e9 if allreduce_s > 0 else 0.0, ina_efficiency=0.0,
        min_worker_rate_gbps=rate)


def aggregation_paths(net: Network, a: Assignment) -> dict[str, list[str]]:
    """Each worker's node path: its widest path to its aggregator, then the aggregator's to the PS."""
    ps = a.task.ps
    return {w: net.path(w, v) if v == ps else net.path(w, v) + net.path(v, ps)[1:] for w, v in a.target.items()}


def plan_precision(topo: Topology, task: Task, scheme: str, seed: int = 0, switch_gbps: float = 100.0,
                   model: TrainingModel = TrainingModel()) -> tuple[Assignment, Rates, Network, TrainingMetrics]:
    """Assign, rate and measure one task under ``scheme`` (one of :data:`SCHEMES`)."""
    if scheme not in SCHEMES:
        raise NetweaveError(f"unknown precision-aware scheme {scheme!r}; use one of {', '.join(SCHEMES)}")
    net = control_view(topo, task, switch_gbps)
    if scheme != "ps" and not net.capacity:
        raise NetweaveError(f"{scheme} needs INA switches; the topology has none (use --algorithm ps)")
    assign = {"pahina": lambda: pahina_assign(net, task, seed=seed), "ps": lambda: ps_assign(net, task),
              "atp": lambda: atp_assign(net, task), "grid": lambda: grid_assign(net, task, seed)}[scheme]()
    rates = weighted_rates(net, assign)
    return assign, rates, net, training_metrics(assign, rates, model)
