"""A worker of streaming data-parallel training (issue 31): ``python -m
netweave.testbed.agg.stream_worker CONFIG`` (a :class:`~.stream_client.StreamWorkerConfig`) in its
host's namespace.

No PS and no serial phases. Every worker holds the model and the optimizer; per step it

1. computes the gradient, and as soon as the gradients of a suffix of the model's parameters are
   complete (the backward pass produces the last layers first: PyTorch DDP's buckets) hands the
   chunks that suffix covers to its :class:`~.stream_client.StreamClient`, which quantises them at
   the paper's byte widths and paces them to its aggregator from a thread;
2. collects the complete sum of every chunk of every aggregation stream as the switches multicast
   them down — while its own later chunks still go up, so both directions of every link are busy;
3. takes the optimizer step on the mean, as every worker does with the same bits, so the models
   stay identical.

Every worker notes per step when its first chunks went (``first_s``), its compute, its wait for
the sums and its update (``timing``): the slowest worker's set what a step takes
(:func:`.model.predict_step_s`); the epoch's times are their sums.

The first step's exponents come from every worker's shard's gradient, computed by each worker
(:func:`first_peaks`). Rank 0 evaluates after each epoch and prints one JSON line per epoch and a
final one; the other ranks print their ``timing`` once per epoch.
"""

from __future__ import annotations

import json
import time

import numpy as np

from . import streampacket as sp
from .steps import flat_parameters, report_epoch, role_main, set_gradient, setup, shard, steps_per_epoch
from .stream_client import StreamClient, StreamWorkerConfig


class Buckets:
    """DDP's buckets: a hook per parameter notes its gradient as it is accumulated; whenever the
    parameters from some index to the last all have theirs, the chunks that suffix covers are
    ready (``on_ready(first_chunk)``: every chunk from there on may go)."""

    def __init__(self, model, flat: np.ndarray, per: int, on_ready):
        self.params = list(model.parameters())
        self.offsets = np.cumsum([0] + [p.numel() for p in self.params])
        self.flat, self.per, self.on_ready = flat, per, on_ready
        self.ready = np.zeros(len(self.params), bool)
        self.suffix = len(self.params)
        for k, p in enumerate(self.params):
            p.register_post_accumulate_grad_hook(lambda p, k=k: self._done(k, p))

    def reset(self) -> None:
        self.ready[:] = False
        self.suffix = len(self.params)

    def _done(self, k: int, p) -> None:
        self.flat[self.offsets[k]:self.offsets[k + 1]] = p.grad.detach().reshape(-1).numpy()
        self.ready[k] = True
        before = self.suffix
        while self.suffix > 0 and self.ready[self.suffix - 1]:
            self.suffix -= 1
        if self.suffix != before:
            self.on_ready(-(-int(self.offsets[self.suffix]) // self.per))


def first_peaks(model, x, y, config: StreamWorkerConfig) -> np.ndarray:
    """The elementwise largest ``|gradient|`` of the first step over every worker's shard: what
    the first exponents are set from (:mod:`.blockfp`), the same on every worker."""
    import torch

    peaks = None
    workers = config.endpoint.workers
    for rank in range(workers):
        model.zero_grad(set_to_none=False)
        part = shard(0, rank, workers, config.batch, len(x))
        torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()
        g = np.abs(np.concatenate([p.grad.detach().reshape(-1).numpy() for p in model.parameters()]))
        peaks = g if peaks is None else np.maximum(peaks, g)
    model.zero_grad(set_to_none=False)
    return peaks


def stream_worker(config: StreamWorkerConfig) -> None:
    """Train until the last epoch (see the module docstring)."""
    import torch

    torch.set_num_threads(1)
    x, y, xt, yt, model = setup(config)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    size = flat_parameters(model).size
    client = StreamClient(config.endpoint, size)
    client.first_exponents(first_peaks(model, x, y, config))
    buckets = Buckets(model, client.flat, client.per, client.send_ready)
    batch, steps = config.batch, steps_per_epoch(config, len(x))
    for epoch in range(config.epochs):
        client.resent = client.retried = client.recoveries = client.sums.stashed = 0
        t0 = time.perf_counter()
        step_s = []
        timing = {key: [] for key in ("first_s", "compute_s", "upload_s", "update_s")}  # per step (s)
        for s in range(steps):
            c0 = time.perf_counter()
            client.begin(epoch * steps + s)
            buckets.reset()
            model.zero_grad(set_to_none=False)
            part = shard(s, config.endpoint.rank, config.endpoint.workers, batch, len(x))
            torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()
            c1 = time.perf_counter()
            mean = client.finish()
            c2 = time.perf_counter()
            set_gradient(model, mean)
            opt.step()
            c3 = time.perf_counter()
            for key, value in (("first_s", (client.first_at or c1) - c0), ("compute_s", c1 - c0),
                               ("upload_s", c2 - c1), ("update_s", c3 - c2)):
                timing[key].append(value)
            step_s.append(c3 - c0)
        seconds = time.perf_counter() - t0
        times = {key: sum(timing[key]) for key in ("compute_s", "upload_s", "update_s")}
        if config.endpoint.rank == 0:  # what all workers sent up once per step (resends aside), as the ring's counts
            sent = steps * sum(sp.stream_bytes(spec.precision, size) * spec.workers for spec in config.endpoint.streams)
            report_epoch(epoch, model, (x, y, xt, yt), limit=config.eval_samples, seconds=seconds, steps=steps,
                         batch=batch, times=times, step_s=step_s, sent=sent, chunks_resent=client.resent,
                         chunks_retried=client.retried, recoveries=client.recoveries,
                         results_early=client.sums.stashed, timing=timing)
        else:  # the launcher collects them while it follows rank 0 (Supervisor.follow)
            print(json.dumps({"rank": config.endpoint.rank, "epoch": epoch + 1, "timing": timing}), flush=True)
    client.close()
    if config.endpoint.rank == 0:
        print(json.dumps({"done": True, "parameters": size, "steps": steps * config.epochs}), flush=True)


if __name__ == "__main__":
    role_main(stream_worker, StreamWorkerConfig)
