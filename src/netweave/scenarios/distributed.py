"""A distributed run of *any* function on N ranks, as a scenario: dataset → partition → DGCL plan
(or the all-reduce baseline) → N ranks that each run the function with a
:class:`~netweave.runtime.context.RankContext`.

What :func:`netweave.distributed.launch` runs, and the layer :class:`~.train.TrainScenario` (the
built-in models) stands on: :func:`prepare_run` partitions, plans and validates once, before any
process starts, for both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..plan.cost import DEFAULT_COST_MODEL
from .defaults import feature_bytes

COMMS = ("p2p", "spst", "allreduce")


def run_rules(config) -> list[tuple[bool, str]]:
    """The settings every distributed run shares, as ``(ok, message)`` rules (``config``: a
    :class:`DistributedScenario` or :class:`~.train.TrainScenario`)."""
    return [
        (config.workers >= 1, f"--workers {config.workers} must be at least 1"),
        (config.comm in COMMS, f"--comm {config.comm} is not one of {', '.join(COMMS)}"),
        (config.timeout_s > 0, f"--timeout {config.timeout_s} must be positive"),
        (np.isfinite(config.timeout_s), f"--timeout {config.timeout_s} must be a finite number of seconds, "
                                        "e.g. --timeout 120"),
        (config.device in ("cpu", "cuda"), f"--device {config.device} must be cpu or cuda"),
        (config.plan_file is None or config.comm in ("p2p", "spst"), "--plan-file needs --comm p2p or spst"),
        (config.plan_file is None or config.workers >= 2,
         f"--plan-file needs --workers 2 or more (a plan exchanges embeddings between workers; "
         f"--workers is {config.workers}); pass the plan's worker count"),
        (config.parts_file is None or config.workers >= 2,
         f"--parts-file needs --workers 2 or more (one worker trains the whole graph; --workers is "
         f"{config.workers}); pass the partition's part count"),
    ]


def check_rules(rules: list[tuple[bool, str]]) -> None:
    """Raise the first broken rule's message."""
    for ok, message in rules:
        if not ok:
            raise NetweaveError(message)


def prepare_run(config, graph, widths: list[int], plan_width: int):
    """Partition ``graph`` and plan its exchange for ``config`` (checked): the
    :class:`~netweave.runtime.job.TrainJob` every rank receives.

    ``widths``: the float32 embedding widths one step exchanges; the plan's prediction is their sum
    and SPST's P2P guard compares on it (the plan itself does not depend on the width, §5.1; it is
    made, and saved, at ``plan_width``). The α–β constants are the transport the ranks use: gloo on
    CPU, NCCL on CUDA.
    """
    from ..partition import comm_relation, load_partition, partition_by_method
    from ..plan import load_plan, p2p_guard, p2p_plan, spst_plan, validate_plan, worker_links
    from ..plan.cost import cost_model
    from ..plan.transport import transport
    from ..runtime.job import TrainJob, epoch_comm_s
    from ..topology import load_topology_spec

    model = cost_model(config.cost_model, transport("nccl" if config.device == "cuda" else "gloo"))  # what the ranks use
    if graph.num_nodes < config.workers:
        raise NetweaveError(f"{config.dataset} has {graph.num_nodes} vertices, fewer than --workers {config.workers}")
    if config.workers == 1:
        return TrainJob(config, np.zeros(graph.num_nodes, dtype=np.int32))
    topo = None
    if config.comm != "allreduce" or config.topology is not None:
        topo = load_topology_spec(config.topology or f"star:n={config.workers}")
        if len(topo.workers) != config.workers:
            raise NetweaveError(f"topology {topo.name} has {len(topo.workers)} workers but --workers is "
                                f"{config.workers}; pass --workers {len(topo.workers)} or another topology")
    if config.parts_file is not None:
        partition = load_partition(config.parts_file, graph.num_nodes, config.workers)
    else:
        partition = partition_by_method(graph, config.method, config.workers, topo, config.seed)
    job = TrainJob(config, partition.parts, topology_name=None if topo is None else topo.name)
    if config.comm == "allreduce":
        return job
    comm = comm_relation(graph, partition)
    links = worker_links(topo)
    fb = feature_bytes(plan_width)
    if config.plan_file is not None:
        plan = load_plan(config.plan_file)
        if plan.parts.shape[0] != graph.num_nodes or not np.array_equal(plan.parts, partition.parts):
            raise NetweaveError(f"{config.plan_file} was planned for another partition of {config.dataset}; "
                                "pass its partition with --parts-file, or re-plan")
        if plan.workers != links.workers:
            raise NetweaveError(f"{config.plan_file} was planned for other workers than {topo.name}'s")
    elif config.comm == "p2p":
        if not links.complete:
            raise NetweaveError(f"p2p needs a logical link between every pair of workers of {topo.name}; "
                                "use --comm spst")
        plan = p2p_plan(comm, links, fb)
    else:
        plan = spst_plan(comm, links, fb, config.seed, guard_p2p=False, model=model)  # the run's model, stage budget too
        if links.complete:  # SPST's P2P guard, on the step's real widths and the model in use
            plan = p2p_guard(plan, p2p_plan(comm, links, fb), lambda p: epoch_comm_s(p, links, model, widths))
    validate_plan(plan, comm, links)
    job.plan = plan
    job.predicted_comm_s = epoch_comm_s(plan, links, model, widths)
    job.num_hops, job.num_stages, job.planner = plan.num_hops, plan.num_stages, plan.planner
    return job


@dataclass(frozen=True, kw_only=True)
class DistributedScenario:
    """Where and how to run a function on N ranks (the keyword arguments of
    :func:`netweave.distributed.launch`).

    Attributes:
        dataset: dataset spec (``cora``, ``npz:FILE``, ``rmat:…``; every rank loads it).
        workers: ranks, one partition each (1: in this process, no communication).
        comm: ``spst`` / ``p2p`` (a DGCL plan on ``topology``, default ``star:n=WORKERS``) or
            ``allreduce`` (the PyG-SPMD baseline: every exchange all-reduces an ``(N, D)`` matrix).
        topology: the topology the plan is made for (its workers are the ranks, in order).
        method: partitioner (``metis``, ``random``, ``range``, ``hierarchical``); seed: its seed,
            SPST's and the dropout key's.
        parts_file, plan_file: a saved partition / plan instead of partitioning / planning.
        cost_model: ``alpha-beta`` or ``dgcl``, for SPST's P2P guard and the predicted time.
        widths: the float32 widths one step exchanges (the guard's and the prediction's; default:
            the features' width).
        normalize_features: row-normalise ``ctx.x`` as PyG's ``NormalizeFeatures`` (whole-graph shift).
        timeout_s: seconds to wait for the rendezvous and for any peer, and heartbeat age at which
            a silent rank ends the run.
        device: ``cpu`` (gloo) or ``cuda`` (NCCL, one GPU per rank).
    """

    dataset: str = "cora"
    workers: int = 1
    comm: str = "spst"
    topology: str | None = None
    method: str = "metis"
    seed: int = 0
    parts_file: str | None = None
    plan_file: str | None = None
    cost_model: str = DEFAULT_COST_MODEL
    widths: tuple[int, ...] | None = None
    normalize_features: bool = False
    timeout_s: float = 120.0
    device: str = "cpu"

    def check(self) -> None:
        """Reject impossible settings with one line each."""
        from ..plan.cost import cost_model

        check_rules(run_rules(self) + [(self.widths is None or all(w >= 1 for w in self.widths),
                                        f"widths {self.widths} must be positive")])
        cost_model(self.cost_model)

    def prepare(self, graph=None):
        """Load, partition, plan and validate: ``(TrainJob, Graph)``; the job is what every rank receives."""
        from ..graph import load_dataset

        self.check()
        graph = graph if graph is not None else load_dataset(self.dataset)
        widths = list(self.widths) if self.widths else [max(graph.feature_dim, 1)]
        return prepare_run(self, graph, widths, widths[0]), graph

    def run(self, fn):
        """Run ``fn(ctx)`` on every rank; returns what rank 0's call returned (under torchrun: this
        rank's)."""
        from ..runtime.launcher import run_task

        return run_task(self, fn).result
