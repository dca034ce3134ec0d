"""Full-graph GNN training as a scenario: dataset → partition → DGCL plan (or the all-reduce
baseline) → N ranks that train and exchange embeddings → the run's report.

What ``netweave train`` and ``compare``'s training section run. :meth:`TrainScenario.prepare`
wires the layers once, before any process starts, so that a bad combination fails in one line;
:meth:`TrainScenario.run` hands the prepared :class:`~netweave.runtime.job.TrainJob` to the
runtime (local processes, or the ranks torchrun started) and returns a typed
:class:`~netweave.runtime.report.TrainReport`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..outputs import check_output_file
from ..plan.cost import DEFAULT_COST_MODEL
from .defaults import feature_bytes

COMMS = ("p2p", "spst", "allreduce")
_RECIPE_FIELDS = ("hidden", "lr", "weight_decay", "dropout", "decay_first_layer_only")


@dataclass(frozen=True, kw_only=True)
class TrainScenario:
    """One training run (the options of ``netweave train``).

    Attributes:
        workers: processes, one partition each (1: no communication); comm: ``spst`` / ``p2p`` (a
            DGCL plan on ``topology``, default ``star:n=WORKERS``) or ``allreduce`` (PyG-SPMD baseline).
        hidden, lr, weight_decay, dropout, decay_first_layer_only: ``None`` takes the model's
            standard recipe (:data:`netweave.runtime.recipe.RECIPES`).
        normalize_features: row-normalise the inputs as PyG's ``NormalizeFeatures``.
        timeout_s: seconds to wait for the rendezvous and for any peer.
        parts_file, plan_file: a saved partition / plan instead of METIS (``method``) / planning.
        dump_logits: write the final (N, C) float32 logits as ``.npy``.
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
        from ..runtime.recipe import RECIPES

        recipe = RECIPES.get(self.model)
        if recipe is None:
            return  # check() names the unknown model
        for name in _RECIPE_FIELDS:
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(recipe, name))

    def check(self) -> None:
        """Reject impossible settings with one line each."""
        from ..runtime.models import MODELS

        if self.model not in MODELS:
            raise NetweaveError(f"--model {self.model} is not one of {', '.join(MODELS)}")
        rules = [
            (self.workers >= 1, f"--workers {self.workers} must be at least 1"),
            (self.comm in COMMS, f"--comm {self.comm} is not one of {', '.join(COMMS)}"),
            (self.epochs >= 1, f"--epochs {self.epochs} must be at least 1"),
            (self.hidden >= 1, f"--hidden {self.hidden} must be at least 1"),
            (self.layers >= 1, f"--layers {self.layers} must be at least 1"),
            (self.lr > 0, f"--lr {self.lr} must be positive"),
            (np.isfinite(self.lr), f"--lr {self.lr} must be a finite number, e.g. --lr 0.01"),
            (self.weight_decay >= 0, f"--weight-decay {self.weight_decay} must be non-negative"),
            (np.isfinite(self.weight_decay), f"--weight-decay {self.weight_decay} must be a finite number, e.g. --weight-decay 5e-4"),
            (0 <= self.dropout < 1, f"--dropout {self.dropout} must be in [0, 1)"),
            (self.timeout_s > 0, f"--timeout {self.timeout_s} must be positive"),
            (np.isfinite(self.timeout_s), f"--timeout {self.timeout_s} must be a finite number of seconds, "
                                          "e.g. --timeout 120"),
            (self.device in ("cpu", "cuda"), f"--device {self.device} must be cpu or cuda"),
            (self.plan_file is None or self.comm in ("p2p", "spst"), "--plan-file needs --comm p2p or spst"),
            (self.plan_file is None or self.workers >= 2,
             f"--plan-file needs --workers 2 or more (a plan exchanges embeddings between workers; "
             f"--workers is {self.workers}); pass the plan's worker count"),
            (self.parts_file is None or self.workers >= 2,
             f"--parts-file needs --workers 2 or more (one worker trains the whole graph; --workers is "
             f"{self.workers}); pass the partition's part count"),
        ]
        for ok, message in rules:
            if not ok:
                raise NetweaveError(message)
        check_output_file(self.dump_logits, "--dump-logits")  # before training, not after it

    def prepare(self, graph=None):
        """Load, partition, plan and validate: ``(TrainJob, Graph)``; the job is what every rank receives."""
        from ..graph import load_dataset
        from ..partition import comm_relation, load_partition, partition_by_method
        from ..plan import load_plan, p2p_guard, p2p_plan, spst_plan, validate_plan, worker_links
        from ..plan.cost import cost_model
        from ..runtime.job import TrainJob, check_trainable, epoch_comm_s, exchanged_widths
        from ..topology import load_topology_spec

        self.check()
        model = cost_model(self.cost_model)
        graph = graph if graph is not None else load_dataset(self.dataset)
        check_trainable(graph, self.dataset)
        if graph.num_nodes < self.workers:
            raise NetweaveError(f"{self.dataset} has {graph.num_nodes} vertices, fewer than --workers {self.workers}")
        if self.workers == 1:
            return TrainJob(self, np.zeros(graph.num_nodes, dtype=np.int32)), graph
        topo = None
        if self.comm != "allreduce" or self.topology is not None:
            topo = load_topology_spec(self.topology or f"star:n={self.workers}")
            if len(topo.workers) != self.workers:
                raise NetweaveError(f"topology {topo.name} has {len(topo.workers)} workers but --workers is "
                                    f"{self.workers}; pass --workers {len(topo.workers)} or another topology")
        if self.parts_file is not None:
            partition = load_partition(self.parts_file, graph.num_nodes, self.workers)
        else:
            partition = partition_by_method(graph, self.method, self.workers, topo, self.seed)
        job = TrainJob(self, partition.parts, topology_name=None if topo is None else topo.name)
        if self.comm == "allreduce":
            return job, graph
        comm = comm_relation(graph, partition)
        links = worker_links(topo)
        fb = feature_bytes(self.hidden)  # the plan does not depend on the width (§5.1); costs use each layer's
        widths = sum(exchanged_widths(self, graph), [])
        if self.plan_file is not None:
            plan = load_plan(self.plan_file)
            if plan.parts.shape[0] != graph.num_nodes or not np.array_equal(plan.parts, partition.parts):
                raise NetweaveError(f"{self.plan_file} was planned for another partition of {self.dataset}; "
                                    "pass its partition with --parts-file, or re-plan")
            if plan.workers != links.workers:
                raise NetweaveError(f"{self.plan_file} was planned for other workers than {topo.name}'s")
        elif self.comm == "p2p":
            if not links.complete:
                raise NetweaveError(f"p2p needs a logical link between every pair of workers of {topo.name}; "
                                    "use --comm spst")
            plan = p2p_plan(comm, links, fb)
        else:
            plan = spst_plan(comm, links, fb, self.seed, guard_p2p=False)
            if links.complete:  # SPST's P2P guard, on the epoch's real widths and the model in use
                plan = p2p_guard(plan, p2p_plan(comm, links, fb), lambda p: epoch_comm_s(p, links, model, widths))
        validate_plan(plan, comm, links)
        job.plan = plan
        job.predicted_comm_s = epoch_comm_s(plan, links, model, widths)
        job.num_hops, job.num_stages, job.planner = plan.num_hops, plan.num_stages, plan.planner
        return job, graph

    def run(self):
        """Train; a :class:`~netweave.runtime.report.TrainReport` (``None`` on a torchrun rank other than 0)."""
        from ..runtime.launcher import train

        return train(self)
