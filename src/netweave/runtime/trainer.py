"""Full-graph training of the built-in models on one rank: Adam, dropout, the dataset's masks,
per-epoch timing. The trainer is a user of :mod:`netweave.distributed`: it gets the same
:class:`~.context.RankContext` as any user function (:class:`BuiltinTraining`).

Every rank holds the same model (same seed), computes the logits of its own vertices on ``G_d``
and the *sum* of their cross-entropy divided by the global number of training vertices; summing
the parameter gradients over ranks then gives exactly the gradient of the single-process mean
loss, so Adam takes the same step everywhere.

Per epoch (the training step: forward, backward, gradient sync, optimiser step), each rank
measures its wall time, the time inside the embedding exchange (``comm_s``) and inside the
gradient all-reduce (``sync_s``), and the bytes it sent for each; ``compute_s`` is the rest.
Evaluation (a dropout-free forward for the accuracies) runs after the step and is not timed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..graph import Graph
from ..progress import epoch_bar
from .context import RankContext, rank_context
from .faults import injected_fault, trigger
from .job import TrainJob, TrainSettings, model_dims
from .models import DistGNN
from .recipe import param_groups

PER_EPOCH = ("epoch_s", "comm_s", "sync_s", "exchange_bytes", "sync_bytes")


@dataclass
class RankResult:
    """What one rank measured: ``per_epoch`` is ``(E, 5)`` in the order of :data:`PER_EPOCH`."""

    rank: int
    per_epoch: np.ndarray
    metrics: np.ndarray  # (E, 7): loss sum, correct/total for train, val, test (global after reduce)
    own_ids: np.ndarray
    logits: np.ndarray | None
    logit_spread: float = float("nan")  # max over classes of (max − min) of the final logits, all vertices
    logit_scale: float = float("nan")  # max |logit| of the final logits, all vertices


def train_rank(job: TrainJob, graph: Graph, rank: int, world: int, device="cpu", show_progress=False) -> RankResult:
    """Train ``job`` as ``rank`` of ``world`` (a process group must exist when ``world > 1``)."""
    return train_on(rank_context(job, graph, rank, world, device), job.config, show_progress)


def forward_backward(model, optimiser, x, tensors, exchange, y, train, num_train: int) -> torch.Tensor:
    """One full-graph step up to the gradients (dropout on): the logits of this rank's vertices
    through ``exchange``, the *sum* of their training cross-entropy over ``num_train`` (all ranks'
    training vertices), backward. Returns the loss: this rank's share of the global mean.

    x: (n_own, F) float32; y: (n_own,) int64; train: (n_own,) bool; tensors: the rank's local
    graph (:func:`~.models.local_tensors`). Summing the gradients over ranks then gives the
    single-process gradient."""
    model.train()
    optimiser.zero_grad(set_to_none=False)
    logits = model(x, tensors, exchange)
    loss = F.cross_entropy(logits[train], y[train], reduction="sum") / num_train
    loss.backward()
    return loss


def train_on(ctx: RankContext, cfg: TrainSettings, show_progress=False) -> RankResult:
    """Train the built-in model of ``cfg`` (a :class:`~netweave.scenarios.TrainScenario`) on one rank,
    through the same :class:`~.context.RankContext` a user's function gets."""
    world = ctx.world
    torch.manual_seed(cfg.seed)  # identical initial parameters on every rank
    model = DistGNN(cfg.model, model_dims(ctx.x.shape[1], cfg.hidden, cfg.layers, ctx.num_classes),
                    cfg.dropout, cfg.seed).to(ctx.device)
    params = list(model.parameters())
    optimiser = torch.optim.Adam(param_groups(model.convs, cfg.weight_decay, cfg.decay_first_layer_only), lr=cfg.lr)
    x, y, masks = ctx.x, ctx.y, [ctx.train_mask, ctx.val_mask, ctx.test_mask]
    per_epoch = np.zeros((cfg.epochs, len(PER_EPOCH)))
    metrics = np.zeros((cfg.epochs, 7))
    fault = injected_fault(ctx.rank)
    with epoch_bar(cfg.epochs, f"training {cfg.model} on {world} worker(s)", enabled=show_progress) as advance:
        for epoch in range(cfg.epochs):
            if fault is not None and fault[1] == epoch:
                trigger(fault[0])
            ctx.reset_counters()
            t0 = time.perf_counter()
            loss = forward_backward(model, optimiser, x, ctx.tensors, ctx.exchange, y, masks[0], ctx.num_train)
            ctx.sync_gradients(params)
            optimiser.step()
            c = ctx.counters()
            per_epoch[epoch] = (time.perf_counter() - t0, c.exchange_s, c.sync_s, c.exchange_bytes, c.sync_bytes)
            metrics[epoch] = _evaluate(model, x, ctx, y, masks, float(loss.detach()), world)
            advance(f"loss {metrics[epoch, 0]:.4f}  val {metrics[epoch, 3] / max(metrics[epoch, 4], 1):.3f}")
    model.eval()
    with torch.no_grad():
        final = model(x, ctx.tensors, ctx.exchange)
    spread, scale = _logit_range(final, world)
    logits = final.cpu().numpy() if cfg.dump_logits else None
    return RankResult(ctx.rank, per_epoch, metrics, ctx.own_ids.cpu().numpy(), logits, spread, scale)


@dataclass(frozen=True)
class TrainingOutput:
    """What :class:`BuiltinTraining` hands back from rank 0: every rank's result, rank 0's training
    seconds, and the graph's size (for the report)."""

    results: list[RankResult]
    train_s: float
    num_nodes: int
    num_classes: int


@dataclass(frozen=True)
class BuiltinTraining:
    """``netweave train``'s function for :func:`~.launcher.run_task`: trains ``config``'s built-in
    model on the rank's context; rank 0 returns a :class:`TrainingOutput`, the others None."""

    config: object

    def __call__(self, ctx: RankContext) -> TrainingOutput | None:
        t0 = time.perf_counter()
        result = train_on(ctx, self.config, show_progress=ctx.rank == 0)
        train_s = time.perf_counter() - t0
        results = [result]
        if ctx.world > 1:
            results = [None] * ctx.world
            dist.all_gather_object(results, result)
        return TrainingOutput(results, train_s, ctx.num_nodes, ctx.num_classes) if ctx.rank == 0 else None


def _logit_range(logits: torch.Tensor, world: int) -> tuple[float, float]:
    """``(spread, scale)`` of ``(num_local, C)`` logits over every vertex of every rank: the largest
    per-class range ``max_v − min_v`` and the largest ``|logit|``. A spread of 0 means every vertex
    gets the same logits (a collapsed model)."""
    c = logits.shape[1]
    if logits.shape[0]:
        stats = torch.cat([logits.max(dim=0).values, -logits.min(dim=0).values, logits.abs().max().reshape(1)])
    else:
        stats = torch.full((2 * c + 1,), -torch.inf, dtype=logits.dtype, device=logits.device)
    stats = stats.to(torch.float64)
    if world > 1:
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)
    high, low = stats[:c], -stats[c:2 * c]
    return float((high - low).max()), float(stats[-1])


def _evaluate(model, x, ctx: RankContext, y, masks, loss: float, world: int) -> np.ndarray:
    """Global loss and (correct, total) per mask, summed over ranks; runs after the epoch's figures
    are recorded (the counters are reset at the next epoch), so it is not counted."""
    model.eval()
    with torch.no_grad():
        pred = model(x, ctx.tensors, ctx.exchange).argmax(dim=1)
    values = [loss]
    for m in masks:
        values += [float((pred[m] == y[m]).sum()), float(m.sum())]
    stats = torch.tensor(values, dtype=torch.float64, device=y.device)
    if world > 1:
        dist.all_reduce(stats)
    return stats.cpu().numpy()
