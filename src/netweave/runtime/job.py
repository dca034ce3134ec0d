"""What every rank of a training run receives, and the widths and predicted time of its exchanges.

The job is prepared once, before any process starts, by
:meth:`netweave.scenarios.TrainScenario.prepare` or :meth:`netweave.scenarios.DistributedScenario.prepare`
(load, partition, plan, validate: :func:`netweave.scenarios.distributed.prepare_run`); the ranks
only read it. ``job.config`` is that scenario (the run's settings).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ..errors import NetweaveError
from ..graph import Graph
from ..graph.memory import check_memory
from ..plan import GraphCommPlan, plan_cost
from ..units import feature_bytes

class RunSettings(Protocol):
    """What the runtime reads of a run's settings. :class:`netweave.scenarios.DistributedScenario`
    and :class:`netweave.scenarios.TrainScenario` are two; the runtime names only this shape, so it
    does not depend on the layer that wires it."""

    dataset: str
    workers: int
    comm: str
    device: str  # cpu (gloo) | cuda (NCCL)
    timeout_s: float
    normalize_features: bool
    seed: int
    cost_model: str

    def prepare(self, graph: Graph | None = None) -> tuple[TrainJob, Graph]: ...


class TrainSettings(RunSettings, Protocol):
    """A built-in model's training settings (:class:`netweave.scenarios.TrainScenario`'s recipe fields)."""

    model: str
    epochs: int
    hidden: int
    layers: int
    lr: float
    weight_decay: float
    dropout: float
    decay_first_layer_only: bool
    dump_logits: str | None


@dataclass
class TrainJob:
    """A prepared run: settings, the partition, and (for p2p/spst) the validated plan.

    Attributes:
        config: the run's settings (a ``TrainScenario`` or ``DistributedScenario``: both carry
            ``dataset``, ``workers``, ``comm``, ``device``, ``timeout_s``, ``normalize_features``,
            ``seed``); parts: (N,) int32 worker of each vertex.
        plan: the plan every rank executes (None for one worker or ``allreduce``), with its
            ``num_hops``, ``num_stages`` and ``planner``.
        predicted_comm_s: the predicted seconds of one epoch's embedding exchanges on the cost
            model of ``config.cost_model``: one graph allgather per width of :func:`exchanged_widths`.
    """

    config: RunSettings
    parts: np.ndarray
    plan: GraphCommPlan | None = None
    topology_name: str | None = None
    predicted_comm_s: float | None = None
    num_hops: int | None = None
    num_stages: int | None = None
    planner: str | None = None


def model_dims(in_dim: int, hidden: int, layers: int, classes: int) -> list[int]:
    """``[in, hidden, ..., classes]``: the ``layers + 1`` embedding widths of a ``layers``-layer GNN."""
    return [in_dim] + [hidden] * (layers - 1) + [classes]


def layer_widths(config: TrainSettings, graph: Graph) -> list[int]:
    """:func:`model_dims` of ``config``'s model on ``graph``."""
    return model_dims(graph.feature_dim, config.hidden, config.layers, graph.num_classes)


def exchanged_widths(config: TrainSettings, graph: Graph) -> tuple[list[int], list[int]]:
    """Embedding widths exchanged per epoch: every layer's input forward, and backward the
    gradients of every layer input except the features (they need none)."""
    inputs = layer_widths(config, graph)[:-1]
    return inputs, inputs[1:]


def epoch_comm_s(plan: GraphCommPlan, links, model, widths: list[int]) -> float:
    """Predicted seconds of one graph allgather of ``plan`` per width in ``widths`` (float32), summed.

    Each width is costed on its own: the α–β model's per-stage terms do not scale with bytes."""
    return sum(plan_cost(replace(plan, feature_bytes=feature_bytes(w)), links, model).total_s for w in widths)


def check_trainable(graph: Graph, spec: str) -> None:
    """Training needs features, labels and a train mask with at least one vertex, and memory for
    the ``(n, classes)`` logits and their gradients (labels are below ``n`` at load, but ``n``
    classes on ``n`` vertices is still ``n²`` logits)."""
    if graph.labels is None or graph.num_classes < 2:
        raise NetweaveError(f"{spec} has no class labels to train on; use a labelled dataset or a generator with classes=…")
    if graph.features is None or graph.feature_dim == 0:
        raise NetweaveError(f"{spec} has no vertex features; use a generator with feat=… or a dataset with features")
    if graph.train_mask is None or not graph.train_mask.any():
        raise NetweaveError(f"{spec} has no training vertices")
    check_memory(f"{spec}: {graph.num_classes:,} classes on {graph.num_nodes:,} vertices (logits and gradients)",
                 2 * 4 * graph.num_nodes * graph.num_classes,
                 "number the classes densely from 0 (the largest label sets how many there are), or train on a "
                 "machine with more memory")
