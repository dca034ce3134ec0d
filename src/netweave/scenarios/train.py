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
from .distributed import check_rules, prepare_run, run_rules
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
        shared = run_rules(self)
        check_rules(shared[:2] + [
            (self.epochs >= 1, f"--epochs {self.epochs} must be at least 1"),
            (self.hidden >= 1, f"--hidden {self.hidden} must be at least 1"),
            (self.layers >= 1, f"--layers {self.layers} must be at least 1"),
            (self.lr > 0, f"--lr {self.lr} must be positive"),
            (np.isfinite(self.lr), f"--lr {self.lr} must be a finite number, e.g. --lr 0.01"),
            (self.weight_decay >= 0, f"--weight-decay {self.weight_decay} must be non-negative"),
            (np.isfinite(self.weight_decay), f"--weight-decay {self.weight_decay} must be a finite number, e.g. --weight-decay 5e-4"),
            (0 <= self.dropout < 1, f"--dropout {self.dropout} must be in [0, 1)"),
        ] + shared[2:])
        check_output_file(self.dump_logits, "--dump-logits")  # before training, not after it

    def prepare(self, graph=None):
        """Load, partition, plan and validate: ``(TrainJob, Graph)``; the job is what every rank receives."""
        from ..graph import load_dataset
        from ..plan.cost import cost_model
        from ..runtime.job import check_trainable, exchanged_widths

        self.check()
        cost_model(self.cost_model)
        graph = graph if graph is not None else load_dataset(self.dataset)
        check_trainable(graph, self.dataset)
        widths = sum(exchanged_widths(self, graph), [])
        return prepare_run(self, graph, widths, self.hidden), graph

    def run(self):
        """Train; a :class:`~netweave.runtime.report.TrainReport` (``None`` on a torchrun rank other than 0)."""
        from ..runtime.launcher import train

        return train(self)
