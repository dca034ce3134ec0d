"""PAHInA's control plane: Algorithm 1's properties (Theorems 1–2), its tie rule and ``r_est``, the
eq. 2 LP (Theorems 3–4), precision inflation of the mixed baselines, and the training-time metrics."""

import dataclasses

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.route.jobs import Task, random_job
from netweave.route.pahina import (PAYLOAD, TrainingModel, control_view, default_r_est, outputs_of, pahina_assign,
                                   plan_precision, priority, training_metrics, weighted_rates)
from netweave.topology import Topology, load_topology_spec, vary_switch_links
from netweave.topology.yaml_io import topology_from_dict


def heterogeneous(seed=0, k=4, ina=0.3):
    """A fat-tree with 10 Gb/s host links and 5–20 Gb/s core links (the §VI-C mix)."""
    topo = load_topology_spec(f"fattree:k={k},ina={ina},seed={seed},gbps=10")
    return vary_switch_links(topo, 5, 20, np.random.default_rng(seed))


def task_on(topo, n, seed=0):
    return random_job(topo, n, seed=seed, mix={"fp8": 5, "fp16": 3, "fp32": 2})[0].tasks[0]


UNIFORM = "fattree:k=8,ina=0.05,seed=1,gbps=10"  # `netweave compare`'s precision case: every link 10 Gb/s


def training_time(net, assignment):
    return training_metrics(assignment, weighted_rates(net, assignment)).training_time_s


@pytest.mark.parametrize("seed", range(4))
def test_algorithm_1_single_aggregation_and_precision_matching(seed):
    topo = heterogeneous(seed)
    task = task_on(topo, 12, seed)
    net = control_view(topo, task)
    a = pahina_assign(net, task, r_est=3.0)
    prec = task.precision_of()
    assert set(a.target) == set(task.workers)  # Theorem 1: exactly one destination per worker
    for w, v in a.target.items():
        assert v == task.ps or prec[w] in net.capacity[v]
    used = {}
    for w, v in a.target.items():
        if v != task.ps:
            used[(v, prec[w])] = used.get((v, prec[w]), 0) + 3.0
    assert all(u <= net.capacity[s][p] + 1e-9 for (s, p), u in used.items())  # Theorem 3 for the estimate


def test_each_worker_takes_the_cheapest_aggregator_left_by_higher_priorities():
    """Theorem 2: workers are served by descending priority, and each takes the cheapest aggregator
    for its precision that the higher-priority workers have not filled (else the PS)."""
    topo = heterogeneous(1)
    task = task_on(topo, 14, 1)
    net = control_view(topo, task)
    r_est = 30.0  # scarce capacity: later workers are pushed to costlier aggregators
    a = pahina_assign(net, task, r_est=r_est)
    pri = priority(net, task)
    prec = task.precision_of()
    order = sorted(task.workers, key=lambda w: -pri[w])
    used = {}
    for w in order:
        p, mine = prec[w], net.cost(w, a.target[w])
        for v, caps in net.capacity.items():
            if p in caps and net.cost(w, v) < mine:
                assert used.get((v, p), 0.0) + r_est > caps[p]  # a cheaper one was already full
        if a.target[w] != task.ps:
            used[(a.target[w], p)] = used.get((a.target[w], p), 0.0) + r_est
    assert len({a.target[w] for w in task.workers}) > 1


@pytest.mark.parametrize("workers", [50, 100])
def test_uniform_links_ties_go_to_the_nearest_least_loaded_switch_and_beat_grid(workers):
    """On uniform links every d(n, v) ties. The earlier rule (names; r_est = 2.5 Gb/s) sent every
    worker to A1 and lost to GRID; hops, then assigned link load, keep the paper's ranking."""
    topo = load_topology_spec(UNIFORM)
    task = task_on(topo, workers)
    net = control_view(topo, task)
    a = pahina_assign(net, task)
    prec = task.precision_of()
    for w, v in a.target.items():  # ties on d: a nearest switch for the precision, never the PS
        nearest = min(net.hops(w, s) for s in net.capacity if prec[w] in net.capacity[s])
        assert v != task.ps and net.hops(w, v) == nearest
    equidistant = [w for w in task.workers if sum(net.hops(w, s) == net.hops(w, a.target[w]) for s in net.capacity) > 1]
    assert len({a.target[w] for w in equidistant}) > 1  # the load term spreads them
    grid = plan_precision(topo, task, "grid")[3].training_time_s
    by_name = pahina_assign(net, task, r_est=2.5, ties="name")
    assert set(by_name.target.values()) <= {"A1", "A18"}  # the old pile-up, for contrast
    assert training_time(net, a) < grid < training_time(net, by_name)
    assert plan_precision(topo, task, "pahina")[3].training_time_s == training_time(net, a)


def test_tie_break_is_deterministic_for_a_seed():
    topo = load_topology_spec(UNIFORM)
    task = task_on(topo, 60, 3)
    net = control_view(topo, task)
    runs = [pahina_assign(net, task, seed=s).target for s in (0, 0, 1, 1)]
    assert runs[0] == runs[1] and runs[2] == runs[3]
    assert plan_precision(topo, task, "pahina", seed=1)[0].target == runs[2]


def test_tie_break_never_depends_on_switch_names():
    """Renaming every switch, in the reverse of the alphabetical order, gives the same assignment
    under the renaming."""
    topo = load_topology_spec(UNIFORM)
    task = task_on(topo, 50)
    switches = [n.name for n in topo.nodes if n.kind == "switch"]
    new = {s: f"X{len(switches) - i:03d}" for i, s in enumerate(switches)}
    rn = lambda x: new.get(x, x)  # noqa: E731
    renamed = Topology(topo.name, [dataclasses.replace(n, name=rn(n.name)) for n in topo.nodes],
                       [dataclasses.replace(l, a=rn(l.a), b=rn(l.b)) for l in topo.links])
    a = pahina_assign(control_view(topo, task), task, seed=2)
    b = pahina_assign(control_view(renamed, task), task, seed=2)
    assert {w: rn(v) for w, v in a.target.items()} == b.target
    assert len(set(a.target.values())) > 1


def test_r_est_is_the_workers_share_of_the_ps_ingress():
    """r_est follows the topology: B_PS / |N|, capped by the access link; at 5 Gb/s per precision
    no switch fills up, so no worker goes straight to the PS, and PAHInA still beats GRID."""
    topo = load_topology_spec(UNIFORM)
    task = task_on(topo, 50)
    assert default_r_est(control_view(topo, task), task) == pytest.approx(10 / 50)
    ps_link = topo.adjacency[topo.index[task.ps]][0][1]
    wide = Topology(topo.name, list(topo.nodes), [dataclasses.replace(l, gbps=40.0) if e == ps_link else l
                                                  for e, l in enumerate(topo.links)])
    assert default_r_est(control_view(wide, task), task) == pytest.approx(40 / 50)
    one = Task("T", task.ps, task.workers[:1])
    assert default_r_est(control_view(wide, one), one) == 10.0  # capped by the 10 Gb/s access link
    assign, _, _, m = plan_precision(topo, task, "pahina", switch_gbps=5.0)
    assert task.ps not in assign.target.values()
    assert m.training_time_s < plan_precision(topo, task, "grid", switch_gbps=5.0)[3].training_time_s


def test_lp_respects_every_constraint_and_is_pareto_optimal():
    topo = heterogeneous(2)
    task = task_on(topo, 14, 2)
    net = control_view(topo, task)
    a = pahina_assign(net, task, r_est=2.0)
    r = weighted_rates(net, a)
    prec = task.precision_of()
    assert all(r.worker_gbps[w] == pytest.approx(PAYLOAD[prec[w]] * r.m) for w in task.workers)
    load = {}
    for w, v in a.target.items():
        p = net.path(w, v)
        for e in zip(p, p[1:]):
            load[e] = load.get(e, 0) + r.worker_gbps[w]
    for (s, p), y in r.output_gbps.items():
        assert y <= net.capacity[s][p] + 1e-9 and all(y >= r.worker_gbps[w] - 1e-9 for w in r.outputs[(s, p)])
        path = net.path(s, task.ps)
        for e in zip(path, path[1:]):
            load[e] = load.get(e, 0) + y
    caps = {e: topo.links[topo.link_between(*e)].gbps for e in load}
    assert all(load[e] <= caps[e] + 1e-6 for e in load)
    assert any(abs(load[e] - caps[e]) < 1e-6 for e in load) or any(
        abs(y - net.capacity[s][p]) < 1e-6 for (s, p), y in r.output_gbps.items())  # Theorem 4: something binds


def test_motivation_example_pahina_beats_grid_and_atp():
    """Figure 1 rebuilt from §III-A: 8 workers (FP8 and FP16), two INA switches with per-precision
    capacities, 3/6/9 Gb/s links; PAHInA's slowest upload finishes first."""
    nodes = [{"name": "PS", "kind": "host"}, {"name": "C", "kind": "switch"},
             {"name": "S1", "kind": "switch", "ina": True, "ina_capacity_gbps": {"fp8": 24, "fp16": 24}},
             {"name": "S2", "kind": "switch", "ina": True, "ina_capacity_gbps": {"fp8": 6, "fp16": 6}}]
    links = [{"a": "PS", "b": "C", "gbps": 9}, {"a": "S1", "b": "C", "gbps": 6}, {"a": "S2", "b": "C", "gbps": 3}]
    workers, precisions = [], []
    for i, (sw, p) in enumerate([("S1", "fp16"), ("S1", "fp8"), ("S1", "fp16"), ("S1", "fp8"),
                                 ("S2", "fp8"), ("S2", "fp16"), ("S2", "fp8"), ("S2", "fp16")]):
        nodes.append({"name": f"W{i + 1}", "kind": "host"})
        links.append({"a": f"W{i + 1}", "b": sw, "gbps": 9})
        workers.append(f"W{i + 1}")
        precisions.append(p)
    topo = topology_from_dict({"name": "motivation", "nodes": nodes, "links": links})
    task = Task("T", "PS", tuple(workers), tuple(precisions))
    times = {s: plan_precision(topo, task, s)[3].upload_time_s for s in ("pahina", "grid", "atp", "ps")}
    assert times["pahina"] < times["grid"] and times["pahina"] < times["atp"] <= times["ps"]


def test_mixed_aggregation_up_casts():
    topo = heterogeneous(3)
    task = task_on(topo, 10, 3)
    atp = plan_precision(topo, task, "atp")[0]
    prec = task.precision_of()
    for (s, p), members in outputs_of(atp).items():
        assert PAYLOAD[p] == max(PAYLOAD[prec[w]] for w in members)  # one stream at the highest precision
    pahina = plan_precision(topo, task, "pahina")[0]
    for (s, p), members in outputs_of(pahina).items():
        assert {prec[w] for w in members} == {p}  # never mixed


def test_training_metrics_are_consistent():
    topo = heterogeneous(0, k=4)
    task = task_on(topo, 12, 0)
    model = TrainingModel(model_mb=50, compute_s=0.1, iterations=10)
    for scheme in ("pahina", "ps", "atp", "grid"):
        m = plan_precision(topo, task, scheme, model=model)[3]
        assert m.training_time_s == pytest.approx(10 * m.iteration_time_s)
        assert m.iteration_time_s == pytest.approx(0.1 + m.upload_time_s + m.ps_aggregation_time_s)
        assert (m.ina_efficiency == 0) == (scheme == "ps") and 0 <= m.ina_efficiency < 1


def test_bad_input():
    topo = load_topology_spec("fattree:k=4,ina=0")
    task = task_on(topo, 4)
    with pytest.raises(NetweaveError, match="needs INA switches"):
        plan_precision(topo, task, "pahina")
    with pytest.raises(NetweaveError, match="unknown precision-aware scheme"):
        plan_precision(topo, task, "magic")
    with pytest.raises(NetweaveError, match="--precisions"):
        random_job(topo, 4, mix={"fp4": 1})
    topo = load_topology_spec("fattree:k=4,ina=0.5")
    task = task_on(topo, 4)
    with pytest.raises(NetweaveError, match="unknown PAHInA tie rule"):
        pahina_assign(control_view(topo, task), task, ties="alphabet")
