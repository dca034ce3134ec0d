"""Rank results → the run's :class:`TrainReport` and the optional logits file.

Per epoch: ``epoch_s`` is the slowest rank's step time, ``comm_s``/``sync_s`` the mean over ranks
of the time inside the embedding exchange / gradient all-reduce, ``compute_s`` the remainder, and
bytes are summed over ranks. Summaries are medians over the epochs after the first (warm-up).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .job import TrainJob
from .trainer import PER_EPOCH, RankResult


def collapse_warning(results: list[RankResult], losses: np.ndarray, num_classes: int) -> str | None:
    """One line when a run learned nothing, else ``None``.

    A run has *collapsed* when it diverged (a loss or logit is not finite), when the final model
    gives every vertex the same logits (their spread is below 1e-5 of their scale), or when the
    training loss of the last 10 of at least 50 epochs stayed at ``ln C`` (≥ 0.99 ln C), the loss
    of a uniform guess over ``C`` classes.
    """
    spread, scale = results[0].logit_spread, results[0].logit_scale
    uniform = float(np.log(num_classes))
    if not (np.isfinite(losses).all() and np.isfinite(spread) and np.isfinite(scale)):
        return "the model collapsed: the loss or the logits are not finite (diverged); lower --lr"
    if spread <= 1e-5 * max(1.0, scale):
        return (f"the model collapsed: every vertex gets the same logits (loss {losses[-1]:.4f}, ln C = {uniform:.4f}); "
                "check the features' scale (normalisation), lower --lr or --weight-decay")
    if losses.size >= 50 and losses[-10:].min() >= 0.99 * uniform:
        return (f"the model collapsed: the training loss stayed at ln C = {uniform:.4f} over the last 10 epochs; "
                "check the features' scale (normalisation), --lr and --weight-decay")
    return None


@dataclass(frozen=True)
class EpochRecord:
    """One epoch: the loss and accuracies (fractions), seconds (the slowest rank's step; the mean
    rank's time in the exchange and the gradient all-reduce; the rest), bytes summed over ranks."""

    epoch: int
    loss: float
    train_acc: float
    val_acc: float
    test_acc: float
    epoch_s: float
    compute_s: float
    comm_s: float
    sync_s: float
    exchange_bytes: int
    sync_bytes: int


@dataclass(frozen=True, kw_only=True)
class TrainReport:
    """A finished run: its settings, final and best accuracies, per-epoch medians (after the
    warm-up epoch), the predicted exchange time, the collapse check and every epoch.

    ``comm`` is ``none`` for one worker; ``num_hops``, ``num_stages`` and ``planner`` are the
    plan's (None without one); ``prepare_s`` is the time of loading, partitioning and planning.
    """

    dataset: str
    model: str
    workers: int
    comm: str
    topology: str | None
    num_hops: int | None
    num_stages: int | None
    planner: str | None
    epochs_run: int
    hidden: int
    layers: int
    lr: float
    weight_decay: float
    decay_first_layer_only: bool
    dropout: float
    normalize_features: bool
    seed: int
    final_loss: float
    final_train_acc: float
    final_val_acc: float
    final_test_acc: float
    best_val_acc: float
    test_acc_at_best_val: float
    median_epoch_s: float
    median_compute_s: float
    median_comm_s: float
    median_sync_s: float
    exchange_bytes_per_epoch: int
    sync_bytes_per_epoch: int
    predicted_comm_s: float | None
    cost_model: str | None
    train_s: float
    collapsed: bool
    warnings: tuple[str, ...]
    epochs: tuple[EpochRecord, ...]
    logits_file: str | None = None
    prepare_s: float | None = None

    def summary(self) -> dict:
        """The JSON report of ``netweave train`` (units in key names; ``epochs`` a list of dicts)."""
        return asdict(self) | {"warnings": list(self.warnings)}

    def epoch_rows(self, shown: int = 10) -> tuple[list[tuple], tuple[str, ...]]:
        """About ``shown`` epochs (the first, then every k-th) as table rows, and their columns."""
        step = max(1, len(self.epochs) // shown)
        columns = ("epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_s", "comm_s", "exchange_MB")
        rows = [(e.epoch, e.loss, e.train_acc, e.val_acc, e.test_acc, e.epoch_s, e.comm_s, e.exchange_bytes / 1e6)
                for e in self.epochs if e.epoch % step == 0 or e.epoch == 1]
        return rows, columns


def run_report(job: TrainJob, results: list[RankResult], train_s: float, num_nodes: int, num_classes: int,
               prepare_s: float | None = None) -> TrainReport:
    """The run's report from every rank's result (the launching process, or torchrun's rank 0, calls
    it); ``num_nodes``, ``num_classes``: the graph's; writes the logits file when asked."""
    cfg = job.config
    per_rank = np.stack([r.per_epoch for r in sorted(results, key=lambda r: r.rank)])  # (P, E, 5)
    col = {name: per_rank[:, :, i] for i, name in enumerate(PER_EPOCH)}
    epoch_s = col["epoch_s"].max(axis=0)
    comm_s, sync_s = col["comm_s"].mean(axis=0), col["sync_s"].mean(axis=0)
    metrics = results[0].metrics
    acc = {name: metrics[:, 1 + 2 * i] / np.maximum(metrics[:, 2 + 2 * i], 1)
           for i, name in enumerate(("train_acc", "val_acc", "test_acc"))}
    epochs = tuple(EpochRecord(epoch=e + 1, loss=float(metrics[e, 0]), **{k: float(v[e]) for k, v in acc.items()},
                               epoch_s=float(epoch_s[e]), compute_s=float(epoch_s[e] - comm_s[e] - sync_s[e]),
                               comm_s=float(comm_s[e]), sync_s=float(sync_s[e]),
                               exchange_bytes=int(col["exchange_bytes"][:, e].sum()),
                               sync_bytes=int(col["sync_bytes"][:, e].sum()))
                   for e in range(cfg.epochs))
    steady = epochs[1:] if len(epochs) > 1 else epochs

    def median(key):
        return float(np.median([getattr(row, key) for row in steady]))

    best = int(np.argmax(acc["val_acc"]))
    warning = collapse_warning(results, metrics[:, 0], num_classes)
    logits_file = None
    if cfg.dump_logits:
        logits = np.zeros((num_nodes, num_classes), dtype=np.float32)
        for r in results:
            logits[r.own_ids] = r.logits
        with open(cfg.dump_logits, "wb") as f:
            np.save(f, logits)
        logits_file = cfg.dump_logits
    return TrainReport(
        dataset=cfg.dataset, model=cfg.model, workers=cfg.workers, comm=cfg.comm if cfg.workers > 1 else "none",
        topology=job.topology_name, num_hops=job.num_hops, num_stages=job.num_stages, planner=job.planner,
        epochs_run=cfg.epochs, hidden=cfg.hidden, layers=cfg.layers, lr=cfg.lr, weight_decay=cfg.weight_decay,
        decay_first_layer_only=cfg.decay_first_layer_only, dropout=cfg.dropout,
        normalize_features=cfg.normalize_features, seed=cfg.seed, final_loss=epochs[-1].loss,
        final_train_acc=epochs[-1].train_acc, final_val_acc=epochs[-1].val_acc, final_test_acc=epochs[-1].test_acc,
        best_val_acc=float(acc["val_acc"][best]), test_acc_at_best_val=float(acc["test_acc"][best]),
        median_epoch_s=median("epoch_s"), median_compute_s=median("compute_s"), median_comm_s=median("comm_s"),
        median_sync_s=median("sync_s"), exchange_bytes_per_epoch=int(median("exchange_bytes")),
        sync_bytes_per_epoch=int(median("sync_bytes")), predicted_comm_s=job.predicted_comm_s,
        cost_model=cfg.cost_model if job.plan is not None else None, train_s=train_s,
        collapsed=warning is not None, warnings=(warning,) if warning else (), epochs=epochs, logits_file=logits_file,
        prepare_s=prepare_s)
