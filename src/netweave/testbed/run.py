"""One training run on the emulated cluster: the control plane's placement (:mod:`.plan`), the
cluster up with each worker's path pinned through its aggregator, one agent per aggregating
switch, the PS and the workers started in their namespaces, the PS's per-epoch lines collected,
everything removed.

The cluster is ``topology`` (default ``star:n=WORKERS+1``) at ``scale``; its first host is the
PS, the workers are spread over the access switches. ``routing`` (:data:`.plan.SCHEMES`):
``pahina``, ``atp`` and ``grid`` aggregate at the switches their control plane chose
(``dataplane`` ``xdp``, in the kernel, or ``user``, the reference in each switch's agent); ``ps``
sends every gradient to the PS, which sums them itself (no INA); ``ring`` is gloo's ring
all-reduce among the workers (fp32, no PS), what users run today.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field

from ..errors import NetweaveError
from .datasets import DATASETS
from .models import MODELS
from .multicast import PORT as MULTICAST_PORT
from .multicast import Routers, group_address
from .netns import python_in
from .plan import PSEUDO, SCHEMES, TrainingPlan, multicast_gbps
from .training import DIVERGED

PORT, CONTROL_PORT = 47000, 47001
MULTICAST_GROUP = group_address(1)  # the parameters, from the PS to every worker
ROUTINGS = SCHEMES
DEFAULT_MEMORY = 8 << 20  # an aggregating switch's memory when the topology gives none
PACING = 0.9  # senders keep to 90 % of their planned rate: headers and HTB's bursts take the rest


@dataclass
class TestbedRun:
    """What a run reports: one record per epoch (the PS's, or ring rank 0's), the final summary,
    each aggregating switch's agent counters, and the placement."""

    __test__ = False

    epochs: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    agents: dict[str, dict] = field(default_factory=dict)
    multicast: dict[str, dict] = field(default_factory=dict)
    plan: TrainingPlan | None = None

    @property
    def agent(self) -> dict | None:
        """The one agent of a single-switch run (None without INA)."""
        return next(iter(self.agents.values()), None)


def _last_line(stream) -> str:
    return (stream.read().strip().splitlines() or ["?"])[-1]


def _died(name: str, proc) -> NetweaveError:
    """The one line for a role that ended with a non-zero status: the loss diverged (its gradient
    was not finite: :data:`.training.DIVERGED`), or it died (a signal, or an exit with its last line)."""
    code = proc.returncode
    if code == DIVERGED:
        return NetweaveError(f"the loss diverged: {name}: {_last_line(proc.stderr)}; the run was stopped (lower --lr)")
    how = f"signal {-code}" if code < 0 else f"exit {code}: {_last_line(proc.stderr)}"
    return NetweaveError(f"{name} died ({how}); the run was stopped")


def _follow(leader, procs, names, run: TestbedRun, on_epoch, timeout_s: float, leader_name: str = "the PS") -> None:
    """Read the lines of the process that reports epochs (the PS, or ring rank 0) as they come; a
    worker that dies, or a reporter that fails, ends the run at once with one line (the others are
    killed by the caller)."""
    import select

    while True:
        for name, proc in zip(names, procs):
            code = proc.poll()
            if code not in (None, 0):
                raise _died(name, proc)
        if select.select([leader.stdout], [], [], 0.2)[0]:
            line = leader.stdout.readline()  # the reporter writes whole lines and flushes each
            if not line:  # it ended
                leader.wait(timeout=timeout_s)
                if leader.returncode == DIVERGED:
                    raise _died(leader_name, leader)
                if leader.returncode or not run.summary:
                    raise NetweaveError(f"the PS failed: {_last_line(leader.stderr)}")
                for proc in procs:
                    proc.wait(timeout=timeout_s)
                return
            record = json.loads(line)
            if "done" in record:
                run.summary = record
            else:
                run.epochs.append(record)
                if on_epoch:
                    on_epoch(record)


def _uplink(cluster, host: str) -> str:
    """The interface of ``host``'s (first) link, in its namespace."""
    return cluster.interface[host, cluster.neighbours(host)[0]]


def parameter_count(model: str, data: str) -> int:
    """Parameters of ``model`` for ``data``'s inputs (the model is built once, here, to count them)."""
    from .datasets import CHANNELS
    from .models import build

    return sum(p.numel() for p in build(model, CHANNELS[data]).parameters())


def nack_timeout_s(plan: TrainingPlan, parameters: int, scale: float) -> float:
    """How long a switch waits for a key's missing workers before it NACKs them: 0.1 s, plus twice the
    time the slowest worker needs to send a whole gradient over its access link (the packets of
    one tensor leave fast and slow workers that far apart, and a NACK for a packet still on its
    way only adds traffic)."""
    from .endpoints import packet_bytes

    slowest = max(packet_bytes(plan.wire(w), parameters) * 8 / (plan.topology.access(h)[1].gbps * scale * 1e9)
                  for w, h in plan.hosts.items())
    return 0.1 + 2 * slowest


def _member_address(plan: TrainingPlan, cluster, member: int) -> str:
    """Where a group member is NACKed: a worker's host, or a child aggregator's switch."""
    return cluster.address[plan.member(member)]


def _start_agents(plan: TrainingPlan, p, dataplane: str, ps_addr, timeout_s: float) -> dict:
    """One agent per aggregating switch, each with its group; waits for every ``ready`` line."""
    agents = {}
    for g in plan.groups.values():
        if g.switch is None:
            continue
        memory = plan.topology.node(g.switch).aggregator_memory or DEFAULT_MEMORY
        up = plan.groups[g.parent] if g.parent is not None else None
        agents[g.switch] = python_in(p.namespace[g.switch], "netweave.testbed.agent", json.dumps({
            "agg_id": g.agg_id, "port": PORT, "workers": g.workers, "timeout_s": timeout_s, "memory_bytes": memory,
            "address": p.address[g.switch], "addresses": {w: _member_address(plan, p, w) for w in g.workers},
            "dataplane": dataplane, "ps": ps_addr,
            "parent": [up.agg_id, PSEUDO + g.agg_id] if up else None,
            "parent_address": [p.address[up.switch], PORT] if up else None}))
    for switch, agent in agents.items():
        if not agent.stdout.readline():
            raise NetweaveError(f"the agent of switch {switch} did not start: {_last_line(agent.stderr)}")
    return agents


def train_on_testbed(precisions: list[str], routing: str = "pahina", dataplane: str = "xdp", epochs: int = 3,
                     scale: float = 0.1, batch: int = 64, lr: float = 0.05, momentum: float = 0.9, seed: int = 0,
                     timeout_s: float = 60.0, on_epoch=None, topology: str | None = None, model: str = "lenet5",
                     data: str = "digits", steps: int | None = None, switch_gbps: float = 100.0,
                     eval_samples: int | None = None) -> TestbedRun:
    """Train ``model`` on ``data`` with one worker per entry of ``precisions`` (fp8/fp16/fp32)
    through ``routing``'s aggregation on ``topology`` at ``scale``; ``steps`` caps the global
    batches per epoch (throughput runs), ``eval_samples`` the samples evaluated after each epoch."""
    from ..topology import load_topology_spec
    from .cluster import plan_cluster
    from .lifecycle import Testbed
    from .plan import plan_training

    if routing not in ROUTINGS:
        raise NetweaveError(f"--routing {routing!r}: use one of {', '.join(ROUTINGS)}")
    if model not in MODELS:
        raise NetweaveError(f"--model {model!r}: use one of {', '.join(MODELS)}")
    if data not in DATASETS:
        raise NetweaveError(f"--data {data!r}: use one of {', '.join(DATASETS)}")
    if dataplane not in ("xdp", "user"):
        raise NetweaveError(f"--dataplane {dataplane!r}: use xdp or user")
    if not precisions or any(p not in ("fp8", "fp16", "fp32") for p in precisions):
        raise NetweaveError("--precisions: give each worker fp8, fp16 or fp32")
    if batch % len(precisions):
        raise NetweaveError(f"--batch {batch} must be a multiple of the {len(precisions)} workers")
    n = len(precisions)
    topo = load_topology_spec(topology or f"star:n={n + 1}")
    plan = plan_training(topo, precisions, routing, scale, seed, switch_gbps)
    parameters = parameter_count(model, data)
    run = TestbedRun(plan=plan)
    common = {"seed": seed, "batch": batch, "port": PORT, "timeout_s": timeout_s, "model": model, "data": data,
              "steps": steps, "eval_samples": eval_samples, "epochs": epochs, "lr": lr, "momentum": momentum}
    routers = None
    with Testbed(plan_cluster(topo, scale=scale, routes=plan.routes or None)) as p, ExitStack() as stack:
        ps_addr = (p.address[plan.ps], PORT)
        agents = _start_agents(plan, p, dataplane, ps_addr, nack_timeout_s(plan, parameters, scale)) \
            if routing != "ring" else {}
        names = [f"worker {w} ({h})" for w, h in plan.hosts.items()]
        if routing == "ring":  # no PS: rank 0 prints the epochs, the other workers are followed
            first = plan.hosts[1]
            ranks = [python_in(p.namespace[h], "netweave.testbed.training", "ring", json.dumps(common | {
                "rank": w - 1, "workers": n, "master": p.address[first], "control_port": CONTROL_PORT,
                "interface": _uplink(p, h)})) for w, h in plan.hosts.items()]
            leader, followers, names, leader_name = ranks[0], ranks[1:], names[1:], names[0]
        else:
            routers = stack.enter_context(Routers(p, plan.ps, list(plan.hosts.values()), [MULTICAST_GROUP]))
            groups = {g.agg_id: {"switch": [p.address[g.switch], PORT] if g.switch else None, "workers": g.workers}
                      for g in plan.groups.values() if g.parent is None}  # the PS hears from the top of each tree
            common |= {"multicast": (MULTICAST_GROUP, MULTICAST_PORT), "multicast_timeout_s": 2.0,
                       "multicast_bps": PACING * multicast_gbps(topo, plan.ps, plan.hosts.values(), scale) * 1e9}
            leader_name = "the PS"
            leader = python_in(p.namespace[plan.ps], "netweave.testbed.training", "ps", json.dumps(common | {
                "address": ps_addr[0], "control_port": CONTROL_PORT, "groups": groups, "retry_s": 0.5,
                "wires": {w: plan.wire(w) for w in plan.hosts},
                "interface": _uplink(p, plan.ps),
                "worker_addresses": {w: (_member_address(plan, p, w), PORT) for g in plan.groups.values()
                                     for w in g.workers}}))
            followers = []
            for w, h in plan.hosts.items():
                g = plan.group_of(w)
                target = (p.address[g.switch], PORT) if g.switch and dataplane == "user" else ps_addr
                followers.append(python_in(p.namespace[h], "netweave.testbed.training", "worker", json.dumps(common | {
                    "rank": w - 1, "workers": n, "wor_id": w, "precision": plan.precisions[w], "wire": g.workers[w],
                    "agg_id": g.agg_id, "address": p.address[h], "target": target,
                    "rate_bps": PACING * plan.rate_gbps[w] * 1e9 if plan.rate_gbps.get(w) else None,
                    "interface": _uplink(p, h),
                    "ps_control": (ps_addr[0], CONTROL_PORT)})))
        try:
            _follow(leader, followers, names, run, on_epoch, timeout_s, leader_name)
            for switch, agent in agents.items():
                run.agents[switch] = json.loads(agent.communicate(input="", timeout=timeout_s)[0].strip().splitlines()[-1])
        finally:
            for proc in [leader, *followers, *agents.values()]:
                if proc.poll() is None:
                    proc.kill()
    run.multicast = routers.reports if routers else {}
    return run
