"""Full-graph GCN training whose embedding exchange goes through the emulated SwitchGNN switch
(:mod:`.switch`), or peer to peer (BNS-GCN with p = 1), on one emulated star (switchgnn.txt §5).

:func:`train_gnn_on_testbed` prepares the job (:func:`~.job.prepare_gnn_job`), brings up the star
``star:n=WORKERS`` with every link at ``gbps`` (HTB on the veths), starts the switch agent in the
switch's namespace and one worker (:mod:`.worker`) per host namespace under one
:class:`~netweave.testbed.net.supervisor.Supervisor`; per epoch each worker reports its time, its
exchange time and bytes; the final logits are gathered and compared with
:func:`~.job.single_process`.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from ...errors import NetweaveError
from ..net.background import BackgroundConfig
from ..net.ports import GNN_DATA, GNN_DOWN, GNN_SWITCH
from ..net.supervisor import Supervisor, last_line
from .job import prepare_gnn_job, single_process
from .switch import SwitchConfig
from .tables import MAX_SHARDS
from .slices import check_slices, slices_asked
from .wire import GRAD_CHUNK
from .worker import WorkerConfig

EXCHANGES = ("ina", "p2p")
DATAPLANES = ("auto", "xdp", "user")


def kernel_plane_available() -> bool:
    """Whether the kernel data plane can be built and loaded here: libbpf, and the switch's programs
    compiled (clang, or the objects already in the cache)."""
    from ..net.bpf import can_build, libbpf
    from ..programs import GNN_KERNEL_PLANE, program

    try:
        libbpf()  # found as ctypes finds it, or on LD_LIBRARY_PATH
    except NetweaveError:
        return False
    return all(can_build(p.source, p.define_values()) for p in map(program, GNN_KERNEL_PLANE))


@dataclass
class GnnTestbedRun:
    """What a run reports: per epoch (the slowest worker's time, the exchange time and bytes over all
    workers, the loss), the switch's counters, the veths' byte counters, the logits check."""

    __test__ = False

    exchange: str
    dataplane: str = "user"
    transport: list[dict] = field(default_factory=list)
    predicted: dict = field(default_factory=dict)
    background: list[dict] = field(default_factory=list)
    epochs: list[dict] = field(default_factory=list)
    switch: dict = field(default_factory=dict)
    veth: dict = field(default_factory=dict)
    planned: list[dict] = field(default_factory=list)
    switch_cpu: int | None = None  # the highest CPU the kernel data plane ran on (None: wherever packets arrived)
    switch_cpus: int = 1  # how many CPUs its aggregators were spread over (its shards) ...
    shard_cpus: list[int] | None = None  # ... and which: shard s on shard_cpus[s] (None: not pinned)
    host_cpus: list[int] | None = None  # the CPUs the workers and the agent ran on (None: any; steering.host_cpus)
    worker_cpus: list[list[int]] = field(default_factory=list)  # ... as each worker saw its own, at its end
    logits: np.ndarray | None = None
    single_logits: np.ndarray | None = None
    single_losses: list[float] = field(default_factory=list)

    @property
    def max_logit_diff(self) -> float | None:
        """The largest ``|logit - single-process logit|``; ``inf`` when either side holds a NaN or an
        inf (a diverged run agrees with nothing, so ``diff <= tolerance`` fails, as does
        ``not diff > tolerance``); ``None`` without the check."""
        if self.logits is None or self.single_logits is None:
            return None
        if not (np.isfinite(self.logits).all() and np.isfinite(self.single_logits).all()):
            return float("inf")
        return float(np.abs(self.logits - self.single_logits).max())

    def summary(self) -> dict:
        """The run as one JSON object: medians over the epochs after the first (which also sets up:
        all of them with one epoch) of the slowest worker's epoch, the exchange, its wait for the
        last worker (``straggler_s``), the compute and the bytes sent and received; ``bound``, the
        accounting's most frequent verdict over those epochs (``network``, ``cpu``, ...; None
        without accounting); and every epoch's record."""
        later = self.epochs[1:] or self.epochs
        med = {k: float(np.median([e[k] for e in later])) for k in MEDIANS if later and all(k in e for e in later)}
        bounds = [e["accounting_bound"] for e in later if "accounting_bound" in e]
        return {"exchange": self.exchange, "dataplane": self.dataplane, "switch_cpu": self.switch_cpu,
                "switch_cpus": self.switch_cpus, "shard_cpus": self.shard_cpus, "host_cpus": self.host_cpus,
                "worker_cpus": self.worker_cpus, "transport": self.transport,
                "predicted": self.predicted, "background": self.background,
                **{f"median_{k}": med.get(k) for k in MEDIANS},
                "bound": max(set(bounds), key=bounds.count) if bounds else None,
                "max_logit_diff": self.max_logit_diff, "single_process_losses": self.single_losses,
                "planned": self.planned, "switch": self.switch, "veth": self.veth, "epochs": self.epochs}


MEDIANS = ("epoch_s", "exchange_s", "straggler_s", "compute_s", "exchange_bytes", "exchange_received_bytes")


def compute_s(record: dict) -> float:
    """A worker's epoch (``record``: its epoch line) less its exchange and its gradients' all-reduce
    (s): its forward and backward passes and the optimizer's step, which a real cluster runs on
    its accelerators (0 if the waits took all of it)."""
    return max(0.0, record["epoch_s"] - record.get("exchange_s", 0.0) - record.get("sync_s", 0.0))


def straggler_s(entered: list[list[float]]) -> float:
    """The mean over workers of the time their exchanges of one epoch waited for the last worker
    to begin the same exchange (s): ``entered[w][k]``, when worker ``w`` began its ``k``-th
    (a monotonic clock all share). A sum needs every worker's contribution, so this wait is the
    other workers' compute (on a machine whose cores the workers share, also their turn on a
    CPU), not the network; the exchange less it is what began once all had. 0 without times."""
    if not entered or not entered[0] or any(len(e) != len(entered[0]) for e in entered):
        return 0.0
    t = np.asarray(entered, np.float64)  # (workers, exchanges)
    return float((t.max(axis=0) - t).sum(axis=1).mean())


def _veth_bytes(cluster) -> dict[str, int]:
    """Bytes the hosts' uplinks sent (up) and received (down), from the kernel's counters."""
    from ..net import netns

    up = down = 0
    for host in cluster.hosts:
        dev = cluster.interface[host, cluster.neighbours(host)[0]]
        stats = json.loads(netns.run(["ip", "-n", cluster.namespace[host], "-j", "-s", "link", "show", "dev", dev]))
        up += int(stats[0]["stats64"]["tx"]["bytes"])
        down += int(stats[0]["stats64"]["rx"]["bytes"])
    return {"up_bytes": up, "down_bytes": down}


def _ports(cluster, switch_name: str) -> dict[int, tuple[str, str, str, str]]:
    """Per worker rank: the switch's port toward it, the worker's address, its uplink's MAC and the
    port's MAC (read from the kernel: names come from the run's plan, never from user text)."""
    from ..net import netns

    def mac(node, peer):
        dev = cluster.interface[node, peer]
        return json.loads(netns.run(["ip", "-n", cluster.namespace[node], "-j", "link", "show", "dev", dev]))[0]["address"]

    return {r: (cluster.interface[switch_name, h], cluster.address[h], mac(h, switch_name), mac(switch_name, h))
            for r, h in enumerate(cluster.hosts)}


def auto_switch_cpus(cpus: int, workers: int, pinned: bool = True) -> int:
    """The switch's shards when none are asked for: one for every CPU the ``workers`` leave free
    of the machine's ``cpus``, at least two (one on one CPU) and at most :data:`~.tables.MAX_SHARDS`;
    one where the switch is not ``pinned`` (its locks allow no shards). Beyond the paper; measured
    (BENCHMARKS.md issue 32): on 16 CPUs with 8 workers, eight shards made amazon_cs's INA epoch at
    0.5 Gb/s 0.133 s against 0.205 with one; on 2 CPUs (runs alternated, 1 2 2 1) two shards made
    reddit-like:0.02's 0.84–0.87 s against 0.94–1.03 at 0.025 Gb/s and 0.60–0.62 against
    0.72–0.76 at 0.05, and amazon_cs's 0.58–0.63 against 0.61–0.65 at 0.05: the switch's one CPU
    binds a graph whose units feed hundreds of destinations, and the workers leave the CPUs idle
    during much of its exchange."""
    return max(min(2, cpus), min(MAX_SHARDS, cpus - workers)) if pinned else 1


def train_gnn_on_testbed(dataset: str, *, workers: int = 4, exchange: str = "ina", memory_bytes: int = 2 << 20,
                         gbps: float = 1.0, epochs: int = 3, hidden: int = 16, layers: int = 2, lr: float = 0.01,
                         weight_decay: float = 5e-4, dropout: float = 0.5, seed: int = 0, blocking: str = "paper",
                         latency_us: float = 1.0, timeout_s: float = 300.0, check: bool = True,
                         dataplane: str = "auto", overlap: bool = False, loss: float = 0.0, duplicate: float = 0.0,
                         reorder: float = 0.0, retransmit_s: float = 0.2, predict: bool = False,
                         congestion_control: bool = False, ecn_kb: float = 64.0, background: float = 0.0,
                         switch_buffer_kb: float = 0.0, fast_pull: bool = True,
                         transform_first: bool = True, grad_chunk: int = GRAD_CHUNK,
                         pin_switch: bool = True, switch_cpus: int = 0, isolate_switch: bool = True,
                         overlap_local: bool = True, column_slices: int = 0) -> GnnTestbedRun:
    """Train GCN on ``dataset`` with ``workers`` workers on ``star:n=WORKERS,gbps=GBPS`` (see the
    module). ``dataplane``: ``xdp`` (the switch in the kernel, :mod:`.kswitch`), ``user`` (the
    agent, the reference) or ``auto`` (``xdp`` where :func:`kernel_plane_available`, else ``user``); ``overlap``: double-buffered blocks (kernel data plane only);
    ``loss``/``duplicate``/``reorder``: per-packet probabilities on every interface (tc-BPF,
    :mod:`netweave.testbed.net.impair`); ``congestion_control``: §3.4's ECN-driven rates (the switch
    marks at ``ecn_kb`` KB of queue, :mod:`.ecn`; the workers halve on a CNP, :mod:`.rate`; kernel
    data plane only); ``background``: Poisson flows of Hadoop sizes between the hosts at that
    fraction of the link rate (:mod:`netweave.testbed.net.background`, §6.5); ``switch_buffer_kb``:
    every switch port's queue (KB; 0: 10,000 packets); ``fast_pull``: a worker pulls what is missing as
    soon as every worker's END of the block came (beyond the paper; False: §3.4's timer alone);
    ``transform_first``: a layer that narrows exchanges ``h W`` (PyG ``GCNConv``'s order; False: its
    input ``h``, :class:`~netweave.runtime.models.DistGNN`); ``grad_chunk``: gradient values a
    message to the switch agent, whose sum comes down while later chunks go up (0: the whole
    gradient in one message, summed once every worker's has come); ``pin_switch``: the kernel data
    plane runs on one CPU, the last (:mod:`netweave.testbed.net.steering`; False: on whichever CPU
    a packet arrives, the sender's: with the workers on both cores, two CPUs add into the same
    aggregators, and a cell costs about twice as much as pinned); ``switch_cpus``:
    with ``pin_switch``, the aggregators spread over that many CPUs, the last ones, each adding
    into its own (beyond the paper: :func:`~.tables.edge_shard`); 0 (the default):
    :func:`auto_switch_cpus`; ``isolate_switch``: with ``pin_switch``, the workers, the agent and
    the background traffic run on the CPUs the switch's leave free, where those are at least one a
    worker (:func:`~netweave.testbed.net.steering.host_cpus`; False: on any CPU);
    ``overlap_local``: with ``transform_first``, each worker sums its own neighbours' rows while its
    exchange is on the wire, in both exchanges (beyond the papers:
    :meth:`~netweave.runtime.ina_exchange.SumExchange.propagate`; False: after it);
    ``column_slices``: INA sends each row of a one-block layer whose width it divides as that many
    column slices, every unit's first slice before any unit's second, so that the first slices'
    sums come down while the rest go up (beyond the paper: :mod:`.slices`; both data planes; p2p
    takes whole rows; 1: whole rows; 0, the default: through the kernel plane 2 where the model of
    :mod:`.completion` ends the exchange in 90 % of the slots or fewer, else 1; through the
    userspace agent 1: :func:`~.slices.slices_asked`)."""
    import tempfile

    from ...topology import load_topology_spec
    from ..net.cluster import plan_cluster
    from ..net.lifecycle import Testbed
    from ..net.netns import require

    from ..net.accounting import Accountant, bpf_stats
    from ..net.steering import backlog_at_least, host_cpus, switch_cpus as pick_switch_cpus
    from ..net.impair import Impairment

    if exchange not in EXCHANGES:
        raise NetweaveError(f"--exchange {exchange!r}: use ina or p2p")
    if dataplane not in DATAPLANES:
        raise NetweaveError(f"--dataplane {dataplane!r}: use auto, xdp or user")
    if dataplane == "auto":
        dataplane = "xdp" if kernel_plane_available() else "user"
    if overlap and dataplane != "xdp":
        raise NetweaveError("--overlap: overlapped blocks need the kernel data plane (--dataplane xdp)")
    if congestion_control and not 1 <= ecn_kb <= 100_000:
        raise NetweaveError(f"--ecn-kb {ecn_kb:g}: give the marking threshold in KB, 1 to 100000")
    if congestion_control and not (exchange == "ina" and dataplane == "xdp"):
        raise NetweaveError("--congestion-control: the ECN-driven rates need the kernel data plane (--exchange ina "
                            "--dataplane xdp)")
    if switch_buffer_kb and not 3 <= switch_buffer_kb <= 1_000_000:
        raise NetweaveError(f"--switch-buffer-kb {switch_buffer_kb:g}: give a switch port's queue in KB, 3 (a packet) "
                            "to 1000000, or 0 for the testbed's 10,000 packets")
    if not 0 <= background < 1:
        raise NetweaveError(f"--background {background:g}: give the background load as a fraction of the link rate, "
                            "0 (none) to below 1")
    impairment = Impairment(loss, duplicate, reorder)
    if gbps <= 0:
        raise NetweaveError(f"--gbps {gbps:g}: give a positive link rate")
    if epochs < 1:
        raise NetweaveError(f"--epochs {epochs}: give at least 1")
    if memory_bytes < 0:
        raise NetweaveError(f"--memory {memory_bytes}: give a non-negative size")
    check_slices(column_slices)
    cpus = len(os.sched_getaffinity(0))
    most = min(MAX_SHARDS, cpus)
    if not 0 <= switch_cpus <= most:
        raise NetweaveError(f"--switch-cpus {switch_cpus}: give 1 to {most} (this machine's CPUs, at most {MAX_SHARDS}), "
                            "or 0 for one per CPU the workers leave free")
    if switch_cpus == 0:
        switch_cpus = auto_switch_cpus(cpus, workers, pin_switch)
    if switch_cpus > 1 and not pin_switch:
        raise NetweaveError(f"--switch-cpus {switch_cpus} --no-pin-switch: the shards need CPUs of their own; "
                            "drop --no-pin-switch")
    require()
    run = GnnTestbedRun(exchange)
    kernel = exchange == "ina" and dataplane == "xdp"
    with tempfile.TemporaryDirectory(prefix="netweave-gnn-") as directory:
        os.chmod(directory, 0o755)
        job = prepare_gnn_job(dataset, workers, memory_bytes, directory, hidden=hidden, layers=layers, seed=seed,
                              blocking=blocking, overlap=overlap and exchange == "ina", transform_first=transform_first,
                              column_slices=slices_asked(column_slices, exchange, dataplane))
        run.planned = job.planned
        topo = load_topology_spec(f"star:n={workers},gbps={gbps:g},latency_us={latency_us:g}")
        buffer = int(switch_buffer_kb * 1000) if switch_buffer_kb else None
        pinned = pick_switch_cpus(switch_cpus) if kernel and pin_switch else []  # shard s on pinned[s]
        shards = len(pinned) or 1
        apart = host_cpus(pinned, workers) if isolate_switch else None  # the hosts' CPUs, if none of the switch's
        with Testbed(plan_cluster(topo, scale=1.0, impairment=impairment, switch_buffer_bytes=buffer)) as cluster, \
                Supervisor(timeout_s) as supervisor, backlog_at_least() if kernel else nullcontext():
            switch_name, hosts = cluster.switches[0], cluster.hosts
            before = _veth_bytes(cluster)
            accountant = Accountant(cluster, cpus=apart)  # apart: the hosts' CPUs are the ones that bind them
            agent = supervisor.start("the switch agent", cluster.namespace[switch_name], "netweave.testbed.gnn.switch",
                                     SwitchConfig(address=cluster.address[switch_name], port=GNN_SWITCH,
                                                  workers=workers, memory_bytes=memory_bytes, timeout_s=timeout_s,
                                                  plans=os.path.join(directory, "plans.npz") if exchange == "ina"
                                                  else None, dataplane=dataplane if kernel else "user",
                                                  ports=_ports(cluster, switch_name) if kernel else None,
                                                  data_port=GNN_DATA, worker_port=GNN_DOWN,
                                                  overlap=bool(overlap and kernel),
                                                  ecn_bytes=int(ecn_kb * 1000) if congestion_control else 0,
                                                  link_kbit=cluster.shaping[switch_name, hosts[0]].rate_kbit,
                                                  switch_cpus=tuple(pinned), switch_shards=shards),
                                     ready=True, cpus=apart)
            noise = [supervisor.start(f"background traffic ({h})", cluster.namespace[h], "netweave.testbed.net.background",
                                      BackgroundConfig(address=cluster.address[h], link_gbps=gbps, load=background,
                                                       peers=tuple(cluster.address[g] for g in hosts if g != h),
                                                       seed=seed * 1000 + r, duration_s=timeout_s), cpus=apart)
                     for r, h in enumerate(hosts)] if background else []
            ranks = [supervisor.start(f"worker {r} ({h})", cluster.namespace[h], "netweave.testbed.gnn.worker",
                                      WorkerConfig(rank=r, workers=workers, address=cluster.address[h],
                                                   peers={q: cluster.address[g] for q, g in enumerate(hosts)},
                                                   switch=(cluster.address[switch_name], GNN_SWITCH),
                                                   exchange=exchange, directory=directory, dims=tuple(job.dims),
                                                   num_train=job.num_train, epochs=epochs, lr=lr,
                                                   weight_decay=weight_decay, dropout=dropout, seed=seed,
                                                   timeout_s=timeout_s, dataplane=dataplane if kernel else "user",
                                                   memory_bytes=memory_bytes, overlap=bool(overlap and kernel),
                                                   retransmit_s=retransmit_s, link_gbps=gbps,
                                                   congestion_control=congestion_control, fast_pull=fast_pull,
                                                   switch_shards=shards,
                                                   transform_first=transform_first, grad_chunk=grad_chunk,
                                                   overlap_local=overlap_local),
                                      cpus=apart)
                     for r, h in enumerate(hosts)]
            lead, accounting = [], []
            dp_cpus = shards if pinned else os.cpu_count() or 1  # where the data plane may run
            last = [accountant.snapshot()]

            def on_line(record: dict) -> bool:  # worker 0's epochs, as they end: what bound each
                lead.append(record)
                if "epoch" in record:
                    now = accountant.snapshot()
                    accounting.append(accountant.interval(last[0], now, 1, record["epoch_s"], compute_s(record),
                                                          exchange_s=record.get("exchange_s"),
                                                          data_plane_cpus=dp_cpus))
                    last[0] = now
                return "done" in record

            with bpf_stats():
                supervisor.follow(ranks[0], on_line)
                supervisor.wait([agent, *ranks[1:]], timeout_s * 4)
            run.background = [supervisor.finish(role) for role in noise]  # the job is done: so is the background
            after = _veth_bytes(cluster)
        run.veth = {k: after[k] - before[k] for k in after}
        run.switch = json.loads(last_line(agent.stdout))
        per_worker = [[r for r in lead if "epoch" in r]]
        per_worker += [[json.loads(line) for line in r.stdout.splitlines() if line.startswith('{"epoch"')]
                       for r in ranks[1:]]
        ends = [lead[-1]] + [json.loads(last_line(r.stdout)) for r in ranks[1:]]
        run.transport = [end.get("transport", {}) for end in ends]
        run.worker_cpus = [end.get("cpus", []) for end in ends]
        run.dataplane = dataplane if kernel else "user"
        run.switch_cpu = max(pinned) if pinned else None
        run.shard_cpus = pinned or None
        run.switch_cpus = shards
        run.host_cpus = sorted(apart) if apart else None
        for e in range(epochs):
            rows = [w[e] for w in per_worker]
            run.epochs.append({"epoch": e + 1, "epoch_s": max(r["epoch_s"] for r in rows),
                               "compute_s": float(np.mean([compute_s(r) for r in rows])),
                               "exchange_s": float(np.mean([r["exchange_s"] for r in rows])),
                               "straggler_s": straggler_s([r.get("entered", []) for r in rows]),
                               "max_exchange_s": max(r["exchange_s"] for r in rows),
                               "sync_s": float(np.mean([r["sync_s"] for r in rows])),
                               "exchange_bytes": sum(r["sent_bytes"] for r in rows),
                               "exchange_received_bytes": sum(r["received_bytes"] for r in rows),
                               "loss": rows[0]["loss"], **{f"accounting_{k}": v for k, v in accounting[e].items()}})
        logits = np.zeros((job.graph.num_nodes, job.dims[-1]), np.float32)
        for r in range(workers):
            logits[job.parts == r] = np.load(os.path.join(directory, f"logits{r}.npy"), allow_pickle=False)
        run.logits = logits
        if check:
            run.single_logits, run.single_losses = single_process(job, epochs, lr, weight_decay, dropout, seed)
        if predict:
            from .predict import predict_epoch_exchange_s

            run.predicted = predict_epoch_exchange_s(job, workers, gbps, latency_us)
    return run
