"""What every training role of the testbed shares: its settings, the data and the model, the
step's shard of the global batch, the flat parameter and gradient vectors, the epoch's report.

:class:`TrainingConfig` is the part of every role's configuration (:mod:`.ps`, :mod:`.worker`,
:mod:`.ring`) that is the same on all of them: the model is initialised from ``seed`` on every
process, so all start from the same parameters.
"""

from __future__ import annotations

import json

from dataclasses import dataclass

import numpy as np

from ..net.role import RoleConfig

DIVERGED = 3  # a role's exit status when its gradient is not finite: the loss diverged


@dataclass(frozen=True, kw_only=True)
class TrainingConfig(RoleConfig):
    """The settings every training role shares.

    Attributes:
        seed: the model's initialisation and the data's split; batch: the global batch (samples);
        model, data: names (:data:`.models.MODELS`, :data:`.data.DATASETS`); epochs; steps: at most
        this many global batches per epoch (None: all); eval_samples: samples evaluated after each
        epoch (None: all); lr, momentum: SGD's; timeout_s: how long a role waits for a peer;
        port: the aggregation traffic's UDP port.
    """

    seed: int
    batch: int
    model: str
    data: str
    epochs: int
    lr: float
    momentum: float
    timeout_s: float
    port: int
    steps: int | None = None
    eval_samples: int | None = None


class Diverged(Exception):
    """A gradient with NaN or infinite values (the loss diverged): the role ends with :data:`DIVERGED`
    and this one line, which the launcher reports."""


def setup(config: TrainingConfig):
    """The role's data and model: ``(x, y, x_test, y_test, model)``, the model initialised from
    ``config.seed`` (the same on every process)."""
    import torch

    from .data import load
    from .models import build

    torch.manual_seed(config.seed)
    x, y, xt, yt = load(config.data, config.seed)
    return x, y, xt, yt, build(config.model, x.shape[1])


def steps_per_epoch(config: TrainingConfig, samples: int) -> int:
    """Whole global batches per epoch, at most ``config.steps`` when given (throughput runs)."""
    steps = samples // config.batch
    return min(steps, config.steps) if config.steps else steps


def flat_parameters(model) -> np.ndarray:
    import torch

    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().astype(np.float32)


def _per_parameter(model, flat: np.ndarray):
    """``(parameter, its part of flat reshaped like it)``, in ``model.parameters()`` order."""
    offset = 0
    for p in model.parameters():
        yield p, flat[offset:offset + p.numel()].reshape(p.shape)
        offset += p.numel()


def load_parameters(model, flat: np.ndarray) -> None:
    import torch

    with torch.no_grad():
        for p, part in _per_parameter(model, flat):
            p.copy_(torch.from_numpy(part))


def set_gradient(model, flat: np.ndarray) -> None:
    """Every parameter's ``.grad`` from one flat float32 gradient (a copy)."""
    import torch

    for p, part in _per_parameter(model, flat):
        p.grad = torch.from_numpy(part.copy())


def shard(step: int, rank: int, workers: int, batch: int, samples: int) -> slice:
    """The samples of ``rank``'s share of global batch ``step`` (batches cycle over ``samples``)."""
    start = (step % (samples // batch)) * batch
    return slice(start + rank * batch // workers, start + (rank + 1) * batch // workers)


def evaluate(model, x, y, xt, yt) -> tuple[float, float]:
    """``(training loss, test accuracy)`` of ``model``."""
    import torch

    def logits(a):
        return torch.cat([model(torch.from_numpy(a[i:i + 512])) for i in range(0, len(a), 512)])

    with torch.no_grad():
        loss = float(torch.nn.functional.cross_entropy(logits(x), torch.from_numpy(y)))
        return loss, float((logits(xt).argmax(1).numpy() == yt).mean())


def backward_on(model, x, y, part: slice) -> None:
    """Every parameter's ``.grad``: the cross-entropy gradient of ``model`` on samples ``part``."""
    import torch

    model.zero_grad()
    torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()


def flat_gradient(model, step: int) -> np.ndarray:
    """The model's gradient as one float32 vector; :class:`Diverged` when it is not finite (no
    precision can carry it, and a sum with it is meaningless)."""
    import torch

    g = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy().astype(np.float32)
    if not np.isfinite(g).all():
        raise Diverged(f"its gradient at step {step} has {int((~np.isfinite(g)).sum()):,} NaN or infinite values")
    return g


def epoch_record(epoch: int, model, data, *, limit: int | None, seconds: float, steps: int, batch: int, times: dict,
                 step_s: list[float], sent: int, **extra) -> dict:
    """One epoch's line (PS, or ring rank 0): loss and accuracy on ``data`` (the first ``limit``
    samples), times, throughput, the gradient bytes ``sent`` and their rate over ``times["upload_s"]``."""
    x, y, xt, yt = data
    loss, acc = evaluate(model, x[:limit], y[:limit], xt[:limit], yt[:limit])
    return {"epoch": epoch + 1, "loss": loss, "test_acc": acc, "epoch_s": seconds, "steps": steps,
            "samples_per_s": steps * batch / seconds, **times, "step_s": step_s, "gradient_bytes": sent,
            "gradient_rate_gbps": sent * 8 / max(times["upload_s"], 1e-9) / 1e9, **extra}


def report_epoch(epoch: int, model, data, **record) -> None:
    """The leader's two lines at the end of an epoch on stdout: ``{"epoch_ends": n}`` as soon as its
    steps are done, then, after it evaluated, the epoch's :func:`epoch_record` (``record``: its
    keyword arguments). The launcher reads the links' counters at the first, so that what the
    other workers send for the next epoch while the leader evaluates counts in that epoch, not in
    this one (ResNet-18's evaluation takes seconds: its epochs' busiest link was 8.5 s a step, then
    5.5, against 6.9 s sent in each)."""
    print(json.dumps({"epoch_ends": epoch + 1}), flush=True)
    print(json.dumps(epoch_record(epoch, model, data, **record)), flush=True)


def role_main(run, config_type: type[TrainingConfig]) -> None:
    """A role's ``python -m`` entry: ``run(config_type.from_json(argv[1]))``; a diverged gradient
    ends it with :data:`DIVERGED` and its one line on stderr. Either way the process ends as the
    runtime's ranks do (:func:`~netweave.runtime.launcher.exit_rank`: flushed, no interpreter
    teardown), where gloo's threads (the ring's ranks) could abort it and turn its status into
    SIGABRT ("terminate called without an active exception": CI, 2026-12-07)."""
    import sys

    from ...runtime.launcher import exit_rank

    try:
        run(config_type.from_json(sys.argv[1]))
    except Diverged as exc:
        print(exc, file=sys.stderr, flush=True)
        exit_rank(DIVERGED)
    exit_rank()
