"""Full-graph training on one rank: Adam, dropout, the dataset's masks, per-epoch timing.

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
from ..partition import Partition, comm_relation
from ..progress import epoch_bar
from .exchange import Exchange, allreduce_gradients
from .faults import injected_fault, trigger
from .graph_allgather import CommCounter
from .job import TrainJob, layer_widths
from .models import DistGNN, local_tensors
from .rank_tables import rank_tables
from .recipe import feature_shift, normalize_rows, param_groups

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


def _rank_data(job: TrainJob, graph: Graph, rank: int, world: int, device):
    partition = Partition(job.parts, world, "job")
    comm = comm_relation(graph, partition)
    local = comm.local_graph(graph, rank)
    g = local_tensors(local, graph.degrees, device)
    own = local.global_ids[: local.num_local]
    features = graph.features[own]
    if job.config.normalize_features:
        features = normalize_rows(features, feature_shift(graph.features))
    features = features.toarray() if hasattr(features, "toarray") else np.asarray(features)
    x = torch.from_numpy(np.ascontiguousarray(features, dtype=np.float32)).to(device)
    y = torch.from_numpy(graph.labels[own].astype(np.int64)).to(device)
    masks = [torch.from_numpy(np.asarray(m[own], dtype=bool) if m is not None else np.zeros(own.size, bool)).to(device)
             for m in (graph.train_mask, graph.val_mask, graph.test_mask)]  # an absent mask selects no vertex
    if world == 1:
        mode, tables = "none", None
    elif job.plan is None:
        mode, tables = "allreduce", None
    else:
        mode, tables = "plan", rank_tables(job.plan, comm, rank)
    exchange = Exchange(mode, local.global_ids, local.num_local, graph.num_nodes, tables, device)
    return g, x, y, masks, exchange


def train_rank(job: TrainJob, graph: Graph, rank: int, world: int, device="cpu", show_progress=False) -> RankResult:
    """Train ``job`` as ``rank`` of ``world`` (a process group must exist when ``world > 1``)."""
    cfg = job.config
    g, x, y, masks, exchange = _rank_data(job, graph, rank, world, device)
    num_train = int(graph.train_mask.sum())
    torch.manual_seed(cfg.seed)  # identical initial parameters on every rank
    model = DistGNN(cfg.model, layer_widths(cfg, graph), cfg.dropout, cfg.seed).to(device)
    params = list(model.parameters())
    optimiser = torch.optim.Adam(param_groups(model.convs, cfg.weight_decay, cfg.decay_first_layer_only), lr=cfg.lr)
    sync = CommCounter()
    per_epoch = np.zeros((cfg.epochs, len(PER_EPOCH)))
    metrics = np.zeros((cfg.epochs, 7))
    fault = injected_fault(rank)
    with epoch_bar(cfg.epochs, f"training {cfg.model} on {world} worker(s)", enabled=show_progress) as advance:
        for epoch in range(cfg.epochs):
            if fault is not None and fault[1] == epoch:
                trigger(fault[0])
            exchange.counter.reset()
            sync.reset()
            t0 = time.perf_counter()
            model.train()
            optimiser.zero_grad(set_to_none=False)
            logits = model(x, g, exchange)
            loss = F.cross_entropy(logits[masks[0]], y[masks[0]], reduction="sum") / num_train
            loss.backward()
            if world > 1:
                allreduce_gradients(params, sync)
            optimiser.step()
            per_epoch[epoch] = (time.perf_counter() - t0, exchange.counter.seconds, sync.seconds,
                                exchange.counter.bytes_sent, sync.bytes_sent)
            metrics[epoch] = _evaluate(model, x, g, exchange, y, masks, float(loss.detach()), world)
            advance(f"loss {metrics[epoch, 0]:.4f}  val {metrics[epoch, 3] / max(metrics[epoch, 4], 1):.3f}")
    model.eval()
    with torch.no_grad():
        final = model(x, g, exchange)
    spread, scale = _logit_range(final, world)
    logits = final.cpu().numpy() if cfg.dump_logits else None
    return RankResult(rank, per_epoch, metrics, g.own_ids.cpu().numpy(), logits, spread, scale)


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


def _evaluate(model, x, g, exchange, y, masks, loss: float, world: int) -> np.ndarray:
    """Global loss and (correct, total) per mask, summed over ranks; runs after the epoch's figures
    are recorded (the exchange counter is reset at the next epoch), so it is not counted."""
    model.eval()
    with torch.no_grad():
        pred = model(x, g, exchange).argmax(dim=1)
    values = [loss]
    for m in masks:
        values += [float((pred[m] == y[m]).sum()), float(m.sum())]
    stats = torch.tensor(values, dtype=torch.float64, device=y.device)
    if world > 1:
        dist.all_reduce(stats)
    return stats.cpu().numpy()
