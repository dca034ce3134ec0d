"""The baseline users run today, on the testbed: gloo's ring all-reduce of fp32 gradients among
the workers, no PS, nothing aggregated in the network. ``python -m netweave.testbed.agg.ring
CONFIG`` (a :class:`RingConfig`) is one rank; every rank holds the model and steps; rank 0 prints
one JSON line per epoch and a final one."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from .steps import (TrainingConfig, backward_on, flat_gradient, flat_parameters, report_epoch, role_main, set_gradient,
                    setup, shard, steps_per_epoch)


@dataclass(frozen=True, kw_only=True)
class RingConfig(TrainingConfig):
    """One rank: its ``rank`` of ``workers``, gloo's rendezvous at ``master``:``control_port``, and
    its uplink ``interface`` (gloo binds its identity address there, not the loopback's)."""

    rank: int
    workers: int
    master: str
    control_port: int
    interface: str


def ring(config: RingConfig) -> None:
    """Run the rank until its epochs are done (see the module docstring)."""
    import datetime

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank, n = config.rank, config.workers
    os.environ["GLOO_SOCKET_IFNAME"] = config.interface  # the uplink (identity address), not the loopback
    dist.init_process_group("gloo", init_method=f"tcp://{config.master}:{config.control_port}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=config.timeout_s))
    x, y, xt, yt, model = setup(config)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    batch, steps = config.batch, steps_per_epoch(config, len(x))
    for epoch in range(config.epochs):
        t0 = time.perf_counter()
        times = dict.fromkeys(("compute_s", "upload_s"), 0.0)
        step_s = []
        for s in range(steps):
            c0 = time.perf_counter()
            backward_on(model, x, y, shard(s, rank, n, batch, len(x)))
            flat = torch.from_numpy(flat_gradient(model, epoch * steps + s))
            c1 = time.perf_counter()
            dist.all_reduce(flat)
            times["compute_s"] += c1 - c0
            times["upload_s"] += time.perf_counter() - c1
            flat /= n
            set_gradient(model, flat.numpy())
            opt.step()
            step_s.append(time.perf_counter() - c0)
        seconds = time.perf_counter() - t0
        if rank == 0:  # a ring all-reduce sends 2 (n-1)/n of the gradient per worker; nothing is aggregated in the network
            report_epoch(epoch, model, (x, y, xt, yt), limit=config.eval_samples, seconds=seconds, steps=steps,
                         batch=batch, times=times, step_s=step_s, sent=2 * (n - 1) * flat.numel() * 4 * steps)
    dist.barrier()
    if rank == 0:
        print(json.dumps({"done": True, "parameters": flat_parameters(model).size, "steps": steps * config.epochs}),
              flush=True)
    # no destroy_process_group: role_main ends the process without teardown, where gloo's pair
    # threads can abort a rank whose peer left first


if __name__ == "__main__":
    role_main(ring, RingConfig)
