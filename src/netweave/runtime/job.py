"""What a training run is: its settings, and the partition and plan every rank executes.

:func:`prepare_job` runs once (in the launcher, or on rank 0 under torchrun) before any training:
it loads the graph, partitions it, plans the exchange and validates the plan against the
partition and topology, so a bad combination fails before a single process starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import NetweaveError
from ..graph import Graph, load_dataset
from ..partition import comm_relation, load_partition, partition_by_method
from ..plan import (GraphCommPlan, load_plan, p2p_guard, p2p_plan, plan_cost, spst_plan, validate_plan,
                    worker_links)
from ..plan.cost import DEFAULT_COST_MODEL, cost_model
from ..topology import load_topology_spec

COMMS = ("p2p", "spst", "allreduce")


@dataclass
class TrainConfig:
    """Settings of one run (the options of ``netweave train``).

    ``hidden``, ``lr``, ``weight_decay`` and ``dropout`` left ``None`` take the model's standard
    recipe (:data:`.recipe.RECIPES`); ``normalize_features`` row-normalises the inputs as PyG's
    ``NormalizeFeatures`` does. ``decay_first_layer_only`` follows the recipe unless set.
    """

    dataset: str = "cora"
    workers: int = 1
    model: str = "gcn"
    comm: str = "spst"
    topology: str | None = None
    epochs: int = 200
    hidden: int | None = None
    layers: int = 2
    lr: float | None = None
    weight_decay: float | None = None
    dropout: float | None = None
    seed: int = 0
    method: str = "metis"
    parts_file: str | None = None
    plan_file: str | None = None
    timeout_s: float = 120.0
    device: str = "cpu"
    dump_logits: str | None = None
    normalize_features: bool = True
    decay_first_layer_only: bool | None = None
    cost_model: str = DEFAULT_COST_MODEL

    def __post_init__(self) -> None:
        from .recipe import RECIPES

        recipe = RECIPES.get(self.model)
        if recipe is None:
            return  # check() names the unknown model
        for name in ("hidden", "lr", "weight_decay", "dropout", "decay_first_layer_only"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(recipe, name))

    def check(self) -> None:
        """Reject impossible settings with one line each."""
        from .models import MODELS

        if self.model not in MODELS:
            raise NetweaveError(f"--model {self.model} is not one of {', '.join(MODELS)}")
        rules = [
            (self.workers >= 1, f"--workers {self.workers} must be at least 1"),
            (self.comm in COMMS, f"--comm {self.comm} is not one of {', '.join(COMMS)}"),
            (self.epochs >= 1, f"--epochs {self.epochs} must be at least 1"),
            (self.hidden >= 1, f"--hidden {self.hidden} must be at least 1"),
            (self.layers >= 1, f"--layers {self.layers} must be at least 1"),
            (self.lr > 0, f"--lr {self.lr} must be positive"),
            (self.weight_decay >= 0, f"--weight-decay {self.weight_decay} must be non-negative"),
            (0 <= self.dropout < 1, f"--dropout {self.dropout} must be in [0, 1)"),
            (self.timeout_s > 0, f"--timeout {self.timeout_s} must be positive"),
            (self.device in ("cpu", "cuda"), f"--device {self.device} must be cpu or cuda"),
            (self.plan_file is None or self.comm in ("p2p", "spst"), "--plan-file needs --comm p2p or spst"),
        ]
        for ok, message in rules:
            if not ok:
                raise NetweaveError(message)


@dataclass
class TrainJob:
    """A prepared run: settings, the partition, and (for p2p/spst) the validated plan.

    ``predicted_comm_s`` is the predicted time of one epoch's embedding exchanges on the cost
    model of ``config.cost_model``: one graph allgather per width of :func:`exchanged_widths`
    (``None`` without a plan).
    """

    config: TrainConfig
    parts: np.ndarray
    plan: GraphCommPlan | None = None
    topology_name: str | None = None
    predicted_comm_s: float | None = None
    info: dict = field(default_factory=dict)


def layer_widths(config: TrainConfig, graph: Graph) -> list[int]:
    """``[in, hidden, ..., classes]``: the ``layers + 1`` embedding widths of the model."""
    return [graph.feature_dim] + [config.hidden] * (config.layers - 1) + [graph.num_classes]


def exchanged_widths(config: TrainConfig, graph: Graph) -> tuple[list[int], list[int]]:
    """Embedding widths exchanged per epoch: every layer's input forward, and backward the
    gradients of every layer input except the features (they need none)."""
    inputs = layer_widths(config, graph)[:-1]
    return inputs, inputs[1:]


def epoch_comm_s(plan: GraphCommPlan, links, model, widths: list[int]) -> float:
    """Predicted seconds of one graph allgather of ``plan`` per width in ``widths`` (float32), summed.

    Each width is costed on its own: the α–β model's per-stage terms do not scale with bytes."""
    return sum(plan_cost(replace(plan, feature_bytes=4 * w), links, model).total_s for w in widths)


def check_trainable(graph: Graph, spec: str) -> None:
    """Training needs features, labels and a train mask with at least one vertex."""
    if graph.labels is None or graph.num_classes < 2:
        raise NetweaveError(f"{spec} has no class labels to train on; use a labelled dataset or a generator with classes=…")
    if graph.features is None or graph.feature_dim == 0:
        raise NetweaveError(f"{spec} has no vertex features; use a generator with feat=… or a dataset with features")
    if graph.train_mask is None or not graph.train_mask.any():
        raise NetweaveError(f"{spec} has no training vertices")


def prepare_job(config: TrainConfig, graph: Graph | None = None) -> tuple[TrainJob, Graph]:
    """Load, partition, plan and validate; the returned job is what every rank receives."""
    config.check()
    model = cost_model(config.cost_model)
    graph = graph if graph is not None else load_dataset(config.dataset)
    check_trainable(graph, config.dataset)
    if graph.num_nodes < config.workers:
        raise NetweaveError(f"{config.dataset} has {graph.num_nodes} vertices, fewer than --workers {config.workers}")
    if config.workers == 1:
        return TrainJob(config, np.zeros(graph.num_nodes, dtype=np.int32)), graph
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
        return job, graph
    comm = comm_relation(graph, partition)
    links = worker_links(topo)
    feature_bytes = 4 * config.hidden
    widths = sum(exchanged_widths(config, graph), [])
    if config.plan_file is not None:
        plan = load_plan(config.plan_file)
        if plan.parts.shape[0] != graph.num_nodes or not np.array_equal(plan.parts, partition.parts):
            raise NetweaveError(f"{config.plan_file} was planned for another partition of {config.dataset}; "
                                "pass its partition with --parts-file, or re-plan")
        if plan.workers != links.workers:
            raise NetweaveError(f"{config.plan_file} was planned for other workers than {topo.name}'s")
    elif config.comm == "p2p":
        if not links.complete:
            raise NetweaveError(f"p2p needs a logical link between every pair of workers of {topo.name}; use --comm spst")
        plan = p2p_plan(comm, links, feature_bytes)
    else:
        plan = spst_plan(comm, links, feature_bytes, config.seed, guard_p2p=False)
        if links.complete:  # SPST's P2P guard, on the epoch's real widths and the model in use
            plan = p2p_guard(plan, p2p_plan(comm, links, feature_bytes),
                             lambda p: epoch_comm_s(p, links, model, widths))
    validate_plan(plan, comm, links)
    job.plan = plan
    job.predicted_comm_s = epoch_comm_s(plan, links, model, widths)
    job.info = {"num_hops": plan.num_hops, "num_stages": plan.num_stages, "planner": plan.planner}
    return job, graph
