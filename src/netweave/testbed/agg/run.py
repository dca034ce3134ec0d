"""One training run on the emulated cluster: the control plane's placement (:mod:`.plan`), the
cluster up with each worker's path pinned through its aggregator, one agent per aggregating
switch, the PS and the workers started in their namespaces, the PS's per-epoch lines collected,
everything removed.

The cluster is the run's topology at ``scale``; its first host is the PS, the workers are spread
over the access switches. ``routing`` (:data:`.plan.SCHEMES`): ``pahina``, ``atp`` and ``grid``
aggregate at the switches their control plane chose (``dataplane`` ``xdp``, in the kernel, or
``user``, the reference in each switch's agent); ``ps`` sends every gradient to the PS, which sums
them itself (no INA); ``ring`` is gloo's ring all-reduce among the workers (fp32, no PS), what
users run today. :class:`TrainRun` holds what a run needs, checked by the scenario that builds it
(:class:`netweave.scenarios.TestbedTrainScenario`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...topology import Topology
from ..net.accounting import Accountant, bpf_stats
from ..net.multicast import group_address, multicast_routing_missing, start_routers
from ..net.netns import require
from ..net.ports import AGGREGATION, CONTROL, PARAMETERS, RESULTS
from ..net.supervisor import Supervisor
from .agent import AgentConfig
from .model import PACING, stream_rates
from .streamtree import RESULTS_GROUP, check_memory, stream_plan
from .plan import DEFAULT_MEMORY, PSEUDO, TrainingPlan, multicast_gbps
from .ps import GroupEndpoint, PsConfig
from .ring import RingConfig
from .steps import DIVERGED
from .stream_xdp import StreamSwitch
from .streampacket import stream_bytes
from .worker import WorkerConfig

MULTICAST_GROUP = group_address(1)  # the parameters, from the PS to every worker
REASONS = {DIVERGED: "the loss diverged: {name}: {line}; the run was stopped (lower --lr)"}


@dataclass(frozen=True, kw_only=True)
class TrainRun:
    """What one run trains, and where (resolved and checked: see the module docstring).

    Attributes:
        topology: the cluster; precisions: one entry (fp8/fp16/fp32) per worker; routing, dataplane;
        mode: ``stream`` (every chunk's complete sum multicast down by the switches, the optimizer on
        every worker: :mod:`.stream_worker`; netweave's, beyond the paper) or ``ps`` (pahina.txt
        §IV-C as published: sums to the PS, which normalises, steps and multicasts the parameters;
        the only mode of routing ``ps``);
        model, data: names; epochs; steps: at most this many global batches per epoch (None: all);
        scale: factor on every link rate; batch: the global batch; lr, momentum, seed;
        switch_gbps: INA capacity (Gb/s per precision, before ``scale``) of switches whose topology
        gives none; timeout_s; eval_samples: samples evaluated after each epoch (None: all).
    """

    topology: Topology
    precisions: tuple[str, ...]
    routing: str = "pahina"
    dataplane: str = "xdp"
    model: str = "lenet5"
    data: str = "digits"
    epochs: int = 3
    steps: int | None = None
    scale: float = 0.1
    batch: int = 64
    lr: float = 0.05
    momentum: float = 0.9
    seed: int = 0
    switch_gbps: float = 100.0
    timeout_s: float = 60.0
    eval_samples: int | None = None
    mode: str = "stream"


@dataclass
class TestbedRun:
    """What a run reports: one record per epoch (the PS's, or ring rank 0's), the final summary,
    each aggregating switch's agent counters, the multicast routers' counters, the placement, and
    (streaming) every worker's per-step ``timing`` per epoch by rank."""

    __test__ = False

    epochs: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    agents: dict[str, dict] = field(default_factory=dict)
    multicast: dict[str, dict] = field(default_factory=dict)
    plan: TrainingPlan | None = None
    timing: dict[int, list[dict]] = field(default_factory=dict)

    def slowest(self, key: str, epochs: slice = slice(None)) -> list[float]:
        """Per step of ``epochs``, the largest ``timing[key]`` over the ranks (streaming runs: every
        worker's ``first_s``, ``compute_s``, ``update_s`` per step, :mod:`.stream_worker`)."""
        per_rank = [[v for e in epochs_[epochs] for v in e[key]] for epochs_ in self.timing.values()]
        return [max(vs) for vs in zip(*per_rank)] if per_rank else []

    @property
    def agent(self) -> dict | None:
        """The one agent of a single-switch run (None without INA)."""
        return next(iter(self.agents.values()), None)


def _uplink(cluster, host: str) -> str:
    """The interface of ``host``'s (first) link, in its namespace."""
    return cluster.interface[host, cluster.neighbours(host)[0]]


def parameter_count(model: str, data: str) -> int:
    """Parameters of ``model`` for ``data``'s inputs (the model is built once, here, to count them)."""
    from .data import CHANNELS
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


def agent_configs(plan: TrainingPlan, cluster, dataplane: str, timeout_s: float) -> dict[str, AgentConfig]:
    """Per aggregating switch, its agent's configuration (its group, its parent in a tree)."""
    ps = (cluster.address[plan.ps], AGGREGATION)
    configs = {}
    for g in plan.groups.values():
        if g.switch is None:
            continue
        up = plan.groups[g.parent] if g.parent is not None else None
        configs[g.switch] = AgentConfig(
            agg_id=g.agg_id, port=AGGREGATION, workers=dict(g.workers), timeout_s=timeout_s,
            memory_bytes=plan.topology.node(g.switch).aggregator_memory or DEFAULT_MEMORY,
            address=cluster.address[g.switch], addresses={w: cluster.address[plan.member(w)] for w in g.workers},
            dataplane=dataplane, ps=ps, parent=(up.agg_id, PSEUDO + g.agg_id) if up else None,
            parent_address=(cluster.address[up.switch], AGGREGATION) if up else None)
    return configs


def start_stream(plan: TrainingPlan, cluster, supervisor: Supervisor, size: int, dataplane: str, scale: float,
                 timeout_s: float, role):
    """The roles of a streaming aggregation of ``size`` values: an agent on every switch (and at
    the PS for groups without INA), then one endpoint role per worker, ``role(w, endpoint) →
    (module, config)``; returns (the first worker's role, the agents)."""
    from ..net.bpf import attach_pass
    from .stream_agent import StreamAgentConfig
    from .stream_client import StreamEndpoint

    p = cluster
    switches, at_ps, streams, own = stream_plan(plan, p)
    check_memory(switches, size)
    workers = {w: p.address[h] for w, h in plan.hosts.items()}
    agents = {name: supervisor.start(f"the agent of switch {name}", p.namespace[name],
                                     "netweave.testbed.agg.stream_agent",
                                     StreamAgentConfig(switch=s, dataplane=dataplane, address=p.address[name],
                                                       workers=workers), ready=True)
              for name, s in switches.items() if s.agg_id or dataplane == "xdp"}
    for g in at_ps:  # no INA for these workers: the PS host sums them, in userspace
        switch = StreamSwitch(agg_id=g.agg_id, port=AGGREGATION, results_port=RESULTS, group=RESULTS_GROUP,
                              members=dict(g.workers))
        agents[plan.ps] = supervisor.start(f"the aggregator at the PS {plan.ps}", p.namespace[plan.ps],
                                           "netweave.testbed.agg.stream_agent",
                                           StreamAgentConfig(switch=switch, dataplane="user",
                                                             address=p.address[plan.ps], workers=workers), ready=True)
    if dataplane == "xdp":
        for h in plan.hosts.values():
            attach_pass(p.namespace[h], _uplink(p, h))
    slowest = max(stream_bytes(plan.wire(w), size) * 8 / (plan.topology.access(h)[1].gbps * scale * 1e9)
                  for w, h in plan.hosts.items())
    _, rates = stream_rates(plan, p, size, scale)
    first = None
    for w, h in plan.hosts.items():
        g = plan.group_of(w)
        target = (p.address[g.switch] if g.switch else p.address[plan.ps], AGGREGATION)
        endpoint = StreamEndpoint(rank=w - 1, workers=len(plan.hosts), wor_id=w, agg_id=g.agg_id, target=target,
                                  port=AGGREGATION, stream=own[w], streams=streams, address=p.address[h],
                                  interface=_uplink(p, h), results_group=RESULTS_GROUP, results_port=RESULTS,
                                  retransmit_s=0.1 + 2 * slowest, timeout_s=timeout_s, rate_bps=rates[w],
                                  slack_s=(1 - PACING) * stream_bytes(plan.wire(w), size) * 8 / rates[w])
        module, config = role(w, endpoint)
        started = supervisor.start(f"worker {w} ({h})", p.namespace[h], module, config)
        first = first or started
    return first, agents


def train(run: TrainRun, on_epoch: Callable[[dict], None] | None = None) -> TestbedRun:
    """Train ``run.model`` on ``run.data`` with one worker per entry of ``run.precisions`` through
    ``run.routing``'s aggregation on ``run.topology`` at ``run.scale`` (see the module docstring)."""
    from ..net.bpf import can_build
    from ..net.cluster import plan_cluster
    from ..net.lifecycle import Testbed
    from ..net.multicast_tc import SOURCE as FORWARDER
    from .plan import plan_training

    n = len(run.precisions)
    plan = plan_training(run.topology, list(run.precisions), run.routing, run.scale, run.seed, run.switch_gbps)
    streamed = run.mode == "stream" and run.routing not in ("ring", "ps")
    if run.routing != "ring" and not streamed and multicast_routing_missing() and not can_build(FORWARDER):
        require("clang")  # the PS's multicast goes through the switches in tc-BPF: no kernel multicast routing
    result = TestbedRun(plan=plan)
    common = dict(seed=run.seed, batch=run.batch, port=AGGREGATION, timeout_s=run.timeout_s, model=run.model,
                  data=run.data, steps=run.steps, eval_samples=run.eval_samples, epochs=run.epochs, lr=run.lr,
                  momentum=run.momentum)
    with Testbed(plan_cluster(run.topology, scale=run.scale, routes=plan.routes or None)) as p, \
            Supervisor(run.timeout_s, REASONS) as supervisor, bpf_stats():
        accountant = Accountant(p)
        if streamed:
            from .stream_client import StreamWorkerConfig

            leader, agents = start_stream(plan, p, supervisor, parameter_count(run.model, run.data), run.dataplane,
                                          run.scale, run.timeout_s, lambda w, endpoint: (
                                              "netweave.testbed.agg.stream_worker",
                                              StreamWorkerConfig(**common, endpoint=endpoint)))
            _follow_and_report(supervisor, leader, agents, {}, result, on_epoch, accountant)
            return result
        agents = {} if run.routing == "ring" else {
            switch: supervisor.start(f"the agent of switch {switch}", p.namespace[switch], "netweave.testbed.agg.agent",
                                     config, ready=True)
            for switch, config in agent_configs(plan, p, run.dataplane,
                                                nack_timeout_s(plan, parameter_count(run.model, run.data),
                                                               run.scale)).items()}
        routers = {}
        names = {w: f"worker {w} ({h})" for w, h in plan.hosts.items()}
        if run.routing == "ring":  # no PS: rank 0 prints the epochs
            master = p.address[plan.hosts[1]]
            ranks = [supervisor.start(names[w], p.namespace[h], "netweave.testbed.agg.ring", RingConfig(
                **common, rank=w - 1, workers=n, master=master, control_port=CONTROL, interface=_uplink(p, h)))
                for w, h in plan.hosts.items()]
            leader = ranks[0]
        else:
            routers = start_routers(supervisor, p, plan.ps, list(plan.hosts.values()), [MULTICAST_GROUP])
            ps_address = p.address[plan.ps]
            multicast = dict(multicast=(MULTICAST_GROUP, PARAMETERS))
            leader = supervisor.start("the PS", p.namespace[plan.ps], "netweave.testbed.agg.ps", PsConfig(
                **common, **multicast, address=ps_address, control_port=CONTROL, interface=_uplink(p, plan.ps),
                groups={g.agg_id: GroupEndpoint((p.address[g.switch], AGGREGATION) if g.switch else None,
                                                dict(g.workers))
                        for g in plan.groups.values() if g.parent is None},  # the PS hears from the tops of the trees
                wires={w: plan.wire(w) for w in plan.hosts}, retry_s=0.5,
                worker_addresses={w: (p.address[plan.member(w)], AGGREGATION) for g in plan.groups.values()
                                  for w in g.workers},
                multicast_bps=PACING * multicast_gbps(run.topology, plan.ps, plan.hosts.values(), run.scale) * 1e9))
            for w, h in plan.hosts.items():
                g = plan.group_of(w)
                target = (p.address[g.switch], AGGREGATION) if g.switch and run.dataplane == "user" \
                    else (ps_address, AGGREGATION)
                supervisor.start(names[w], p.namespace[h], "netweave.testbed.agg.worker", WorkerConfig(
                    **common, **multicast, rank=w - 1, workers=n, wor_id=w, precision=plan.precisions[w],
                    wire=g.workers[w], agg_id=g.agg_id, address=p.address[h], target=target,
                    rate_bps=PACING * plan.rate_gbps[w] * 1e9 if plan.rate_gbps.get(w) else None,
                    interface=_uplink(p, h), ps_control=(ps_address, CONTROL), multicast_timeout_s=2.0))

        _follow_and_report(supervisor, leader, agents, routers, result, on_epoch, accountant)
    return result


def _follow_and_report(supervisor: Supervisor, leader, agents: dict, routers: dict, result: TestbedRun,
                       on_epoch, accountant: Accountant) -> None:
    """Follow the leader's epoch lines to its final one, wait for the other ranks, collect the
    agents' and routers' counters; every epoch also says what bound it (``accountant``:
    :mod:`netweave.testbed.net.accounting`, its counters read when the leader's steps of the epoch
    ended, before it evaluated: ``{"epoch_ends": n}``)."""
    last = accountant.snapshot()
    ended = None

    def on_line(record: dict) -> bool:
        nonlocal last, ended
        if "done" in record:
            result.summary = record
            return True
        if "epoch_ends" in record:
            ended = accountant.snapshot()
            return False
        now, ended = ended or accountant.snapshot(), None
        record |= accountant.interval(last, now, record["steps"], record["epoch_s"], record.get("compute_s", 0.0))
        last = now
        result.epochs.append(record)
        if on_epoch:
            on_epoch(record)
        return False

    ranks = [role for role in supervisor.roles  # the other ranks, the PS's workers: done with the leader
             if role is not leader and role not in agents.values() and role not in routers.values()]
    supervisor.follow(leader, on_line, collect=ranks)
    lines = [e | {"rank": 0} for e in result.epochs] + [line for role in ranks for line in supervisor.drain(role)]
    for line in lines:
        if "timing" in line:  # streaming workers only
            result.timing.setdefault(line["rank"], []).append(line["timing"])
    result.agents = {switch: supervisor.finish(role) for switch, role in agents.items()}
    result.multicast = {switch: supervisor.finish(role) for switch, role in routers.items()}
