"""Which switch aggregates whose gradients on the emulated cluster: the control plane's choice
(pahina.txt §V, §VI-A) turned into aggregator groups for the data plane.

The routing ``scheme`` runs the same control plane as ``netweave route --algorithm`` on the
topology *at the testbed's scale* (link rates × ``scale``), so its §VI-A metrics are the model's
prediction for this very cluster:

* ``pahina`` — Algorithm 1 + eq. 2: each worker to one aggregator; a switch keeps one aggregate per
  precision (never mixed);
* ``atp`` — the first INA switch with capacity on the worker's widest path; precisions mix there;
* ``grid`` — the LP relaxation + randomised rounding over aggregators; precisions mix;
* ``ps`` — no INA: the PS sums every worker's gradient itself;
* ``aro``, ``ecmp`` — ARO's routes (aro.txt Algorithm 1, its MILP) or random up-down paths
  (``netweave route --algorithm aro|ecmp``): flows that meet at an INA switch merge there, so
  aggregation is multi-level — a switch's sum is one more worker's DATA at the next aggregating
  switch up (:func:`aggregation_tree`). One precision per task, as in ARO's model;
* ``ring`` — no PS: gloo's ring all-reduce among the workers (no plan here).

A group is one aggregator: ``agg_id`` ≥ 1 at a switch (its XDP program's id), or 0 for the workers
the PS aggregates itself. Workers address the PS; policy routing pins each worker's path through
its aggregator (:func:`~.cluster.plan_cluster`'s ``routes``), where the XDP program takes the
packets whose ``agg_id`` is its own.

Mixed aggregation (ATP, GRID) sums one precision per switch, the highest of its workers (the
"precision inflation" of §I). netweave's switches rewrite the last packet in place (§IV-B), which
cannot grow it, so a worker whose group is wider sends its gradient, cast to its own precision,
already in the group's container (:func:`~.gradients.upcast`): the up-cast happens one hop
earlier than in the model, which charges it on the worker's access link too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import NetweaveError
from ...topology import Topology

SCHEMES = ("pahina", "atp", "grid", "ps", "aro", "ecmp", "ring")
TREE_SCHEMES = ("aro", "ecmp")  # ARO's model: routes whose flows merge at every INA switch they share
DEFAULT_MEMORY = 8 << 20  # an aggregating switch's memory when the topology gives none
PSEUDO = 1000  # a child aggregator's worker id at its parent: PSEUDO + its agg_id


@dataclass(frozen=True)
class Group:
    """One aggregator: ``switch`` (None: the PS itself) summing ``workers`` (wor_id → the precision
    they send in; in a multi-level tree also child aggregators, as ``PSEUDO + agg_id``), and its
    ``parent`` aggregator's agg_id (None: its sums go to the PS)."""

    agg_id: int
    switch: str | None
    workers: dict[int, str]
    parent: int | None = None


@dataclass
class TrainingPlan:
    """A run's placement: ``ps`` and ``hosts`` (wor_id → host; wor_ids 1…N), each worker's own
    ``precisions``, the aggregator ``groups`` (agg_id → :class:`Group`), the routes JSON ``tasks``
    whose paths :func:`~.cluster.plan_cluster` pins, the control plane's ``assignment`` and eq. 2
    ``rates`` on the scaled topology (None for ``ring``, ``aro`` and ``ecmp``), and ``rate_gbps``,
    each worker's sending rate from its control plane (eq. 2's ``r_n``; ARO's task rate)."""

    scheme: str
    topology: Topology
    ps: str
    hosts: dict[int, str]
    precisions: dict[int, str]
    groups: dict[int, Group] = field(default_factory=dict)
    routes: dict = field(default_factory=dict)
    assignment: object = None
    rates: object = None
    rate_gbps: dict[int, float] = field(default_factory=dict)

    def predict(self, model):
        """The model's §VI-A metrics (:func:`~netweave.route.pahina.training_metrics`) of this placement
        under ``model`` (a :class:`~netweave.route.pahina.TrainingModel`); None for ``ring``."""
        from ...route.pahina import training_metrics

        return None if self.assignment is None else training_metrics(self.assignment, self.rates, model)

    def group_of(self, wor_id: int) -> Group:
        return next(g for g in self.groups.values() if wor_id in g.workers)

    def wire(self, wor_id: int) -> str:
        """The precision worker ``wor_id`` sends in (its own, or its mixed group's)."""
        return self.group_of(wor_id).workers[wor_id]

    def summary(self) -> dict:
        return {"scheme": self.scheme, "ps": self.ps, "workers": {w: f"{h} {self.precisions[w]}" for w, h in self.hosts.items()},
                "aggregators": {g.switch or self.ps: {self.member(w): p for w, p in g.workers.items()}
                                for g in self.groups.values()}}

    def member(self, wor_id: int) -> str:
        """A group member's node: a worker's host, or a child aggregator's switch."""
        return self.groups[wor_id - PSEUDO].switch if wor_id >= PSEUDO else self.hosts[wor_id]


def place_workers(topo: Topology, n: int) -> tuple[str, list[str]]:
    """The PS (the first host) and ``n`` worker hosts spread round-robin over the access switches
    (so that a tree's leaves share the workers, as in a bridge tree of VMs)."""
    hosts = [node.name for node in topo.nodes if node.kind == "host"]
    if len(hosts) < n + 1:
        raise NetweaveError(f"topology {topo.name} has {len(hosts)} hosts; {n} workers and a PS need {n + 1}")
    ps, rest = hosts[0], hosts[1:]
    by_switch: dict[str, list[str]] = {}
    for h in rest:
        by_switch.setdefault(topo.access(h)[0], []).append(h)
    spread = [h for i in range(max(map(len, by_switch.values()))) for hs in by_switch.values() if i < len(hs)
              for h in hs[i:i + 1]]
    return ps, spread[:n]


def scaled(topo: Topology, scale: float) -> Topology:
    """``topo`` with every link rate and INA capacity × ``scale``: what the emulated cluster offers."""
    import dataclasses

    links = [dataclasses.replace(l, gbps=l.gbps * scale) for l in topo.links]
    nodes = [dataclasses.replace(n, ina_capacity_gbps={p: c * scale for p, c in n.ina_capacity_gbps.items()})
             for n in topo.nodes]
    return Topology(topo.name, nodes, links)


def plan_training(topo: Topology, precisions: list[str], scheme: str, scale: float = 1.0, seed: int = 0,
                  switch_gbps: float = 100.0) -> TrainingPlan:
    """Place one worker per entry of ``precisions`` and let ``scheme``'s control plane assign their
    aggregators on ``topo`` at ``scale`` (``switch_gbps``: the INA capacity of switches that give
    none, before scaling)."""
    from ...route.jobs import Task
    from ...route.pahina import PAYLOAD, aggregation_paths, plan_precision

    if scheme not in SCHEMES:
        raise NetweaveError(f"--routing {scheme!r}: use one of {', '.join(SCHEMES)}")
    ps, hosts = place_workers(topo, len(precisions))
    plan = TrainingPlan(scheme, topo, ps, dict(enumerate(hosts, start=1)), dict(enumerate(precisions, start=1)))
    if scheme == "ring":
        return plan
    task = Task("T0", ps, tuple(hosts), tuple(precisions))
    if scheme in TREE_SCHEMES:
        return _plan_tree(plan, task, scheme, scale, seed)
    assign, rates, net, _ = plan_precision(scaled(topo, scale), task, scheme, seed, switch_gbps * scale)
    wor_id = {h: w for w, h in plan.hosts.items()}
    members: dict[str, list[int]] = {}
    for h, agg in assign.target.items():
        members.setdefault(agg, []).append(wor_id[h])
    for i, (agg, ws) in enumerate(sorted(members.items(), key=lambda kv: (kv[0] == ps, kv[0]))):
        top = max((plan.precisions[w] for w in ws), key=PAYLOAD.__getitem__)
        wire = {w: top if assign.mixed and agg != ps else plan.precisions[w] for w in sorted(ws)}
        agg_id = 0 if agg == ps else i + 1
        plan.groups[agg_id] = Group(agg_id, None if agg == ps else agg, wire)
    plan.routes = {"T0": {"ps": ps, "paths": aggregation_paths(net, assign)}}
    plan.assignment, plan.rates = assign, rates
    plan.rate_gbps = {w: rates.worker_gbps[h] for w, h in plan.hosts.items()}
    return plan


def aggregation_tree(paths: dict[str, list[str]], ps: str, ina: set[str]) -> dict[str, tuple[set[str], str]]:
    """Where flows merge: every INA switch that two or more flows of ``paths`` (worker → its node
    path to ``ps``) pass and then leave along one same route aggregates them, with as members the
    workers and aggregating switches just below it: ``{switch: (members, parent)}``, the parent
    being the next aggregating switch up or ``ps``. One XDP program serves a switch, so flows
    that leave a switch on different routes (ARO's separate pipelines) are not merged there;
    a switch left with one member is dropped (it would only pass that member's sums on)."""
    candidates = set()
    for s in ina:
        suffixes = {tuple(p[p.index(s):]) for p in paths.values() if s in p[1:-1]}
        if len(suffixes) == 1 and sum(s in p[1:-1] for p in paths.values()) >= 2:
            candidates.add(s)
    while True:
        members: dict[str, set[str]] = {}
        parent: dict[str, str] = {}
        for w, path in paths.items():
            chain = [v for v in path[1:-1] if v in candidates]
            for below, a in zip([w, *chain], chain):
                members.setdefault(a, set()).add(below)
            for a, b in zip(chain, [*chain[1:], ps]):
                parent[a] = b
        lonely = {a for a, m in members.items() if len(m) < 2}
        if not lonely:
            return {a: (members[a], parent[a]) for a in members}
        candidates -= lonely


def _plan_tree(plan: TrainingPlan, task, scheme: str, scale: float, seed: int) -> TrainingPlan:
    """ARO's or ECMP's routes and the multi-level aggregation they imply (see :func:`aggregation_tree`)."""
    from ...route.jobs import Job
    from ...route.plan import route_jobs

    kinds = sorted(set(plan.precisions.values()))
    if len(kinds) > 1:
        raise NetweaveError(f"--routing {scheme} merges every flow that meets at a switch and does not model mixed "
                            f"precisions ({', '.join(kinds)}): give every worker one precision, or use pahina, atp "
                            "or grid")
    topo = plan.topology
    result = route_jobs(scaled(topo, scale), [Job("J0", (task,))], scheme, seed=seed, time_limit=30.0)
    paths = result.tasks["T0"].paths
    tree = aggregation_tree(paths, plan.ps, {n.name for n in topo.nodes if n.kind != "host" and n.ina})
    ids = {a: i for i, a in enumerate(sorted(tree), start=1)}
    wor_id = {h: w for w, h in plan.hosts.items()}
    precision = kinds[0]
    for a, (members, up) in tree.items():
        workers = {wor_id[m] if m in wor_id else PSEUDO + ids[m]: precision for m in members}
        plan.groups[ids[a]] = Group(ids[a], a, dict(sorted(workers.items())), ids.get(up))
    direct = {w: precision for w, h in plan.hosts.items() if not any(w in g.workers for g in plan.groups.values())}
    if direct:
        plan.groups[0] = Group(0, None, direct)
    plan.routes = {"T0": {"ps": plan.ps, "paths": paths}}
    plan.rate_gbps = dict.fromkeys(plan.hosts, result.tasks["T0"].rate_gbps)
    return plan


def multicast_gbps(topo: Topology, ps: str, hosts, scale: float) -> float:
    """The slowest link from ``ps`` to any of ``hosts`` (shortest paths) at ``scale``: the rate a
    multicast to all of them can keep without a queue overflowing."""
    from ...topology.paths import bottleneck_gbps, shortest_path

    return min(bottleneck_gbps(topo, shortest_path(topo, ps, h)) for h in hosts) * scale
