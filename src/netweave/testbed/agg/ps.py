"""The PS of data-parallel training through the testbed (PAHInA §IV-D, §VI-B):
``python -m netweave.testbed.agg.ps CONFIG`` (a :class:`PsConfig`) in the PS host's namespace.

Each step:

1. the PS sends the step and its fixed-point exponent to every worker over TCP (:mod:`.control`)
   and multicasts the parameters (float32) through the switches (the kernel's multicast
   forwarding: one copy per link, as the paper's PS); each worker answers with the chunks it
   missed, which the PS then sends it over TCP (reliable);
2. the workers send their encoded gradients (:mod:`.worker`), through the INA switch whose XDP
   program aggregates each precision, or straight to the PS (routing ``ps``);
3. the PS collects every precision's sum (:class:`~.endpoints.Collector`), normalises them into the
   mean gradient and takes an SGD-with-momentum step.

It prints one JSON line per epoch on stdout: loss, accuracy, and the §VI-A metrics (epoch time,
throughput, upload time and gradient sending rate, INA efficiency as the share of gradient bytes
that did not reach the PS, PS aggregation time), then a final ``{"done": true, …}``.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field

import numpy as np

from .control import COMPUTE, HEADER, HELLO, recv_exact, send_missed
from .steps import (TrainingConfig, flat_parameters, report_epoch, role_main, set_gradient, setup,
                    steps_per_epoch)


@dataclass(frozen=True)
class GroupEndpoint:
    """An aggregator the PS hears from: its switch's (address, port), or None where the PS sums the
    DATA itself; its members (wor_id → wire precision)."""

    switch: tuple[str, int] | None
    workers: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class PsConfig(TrainingConfig):
    """The PS's role.

    Attributes:
        address: its own address; control_port: where the workers connect; interface: its uplink
        (where the parameters leave); groups: agg_id → :class:`GroupEndpoint`, the tops of the
        aggregation trees; wires: wor_id → its precision on the wire; worker_addresses: wor_id →
        (address, port), where NACKs go; retry_s: how long it waits for a key before NACKing;
        multicast: the parameters' (group, port); multicast_bps: its pacing of them.
    """

    address: str
    control_port: int
    interface: str
    groups: dict[int, GroupEndpoint]
    wires: dict[int, str]
    worker_addresses: dict[int, tuple[str, int]]
    retry_s: float
    multicast: tuple[str, int]
    multicast_bps: float | None = None


def ps(config: PsConfig) -> None:
    """Run the PS until its epochs are done (see the module docstring)."""
    import torch

    from ..net.batchio import set_receive_buffer
    from ..net.multicast import publish, publisher_socket
    from .endpoints import Collector, packet_bytes
    from .gradients import decode_mean, step_exponent
    from .xdp import MAX_SLOTS

    x, y, xt, yt, model = setup(config)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    groups = {a: (g.switch, g.workers) for a, g in config.groups.items()}
    n = len(config.wires)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((config.address, config.port))
    set_receive_buffer(udp, 256 << 20)  # a step's packets fit
    collector = Collector(udp, groups, dict(config.worker_addresses))
    publisher = publisher_socket(config.address, config.interface)
    missed = 0
    server = socket.create_server((config.address, config.control_port))
    server.settimeout(config.timeout_s)
    conns = {}
    while len(conns) < n:
        conn, _ = server.accept()
        conns[HELLO.unpack(recv_exact(conn, HELLO.size))[0]] = conn
    steps = steps_per_epoch(config, len(x))
    size = flat_parameters(model).size
    chunks = -(-size // MAX_SLOTS)
    sent_per_step = sum(packet_bytes(p, size) for p in config.wires.values())
    exponent, step = step_exponent(1.0, n), 0
    for epoch in range(config.epochs):
        t0 = time.perf_counter()
        times = dict.fromkeys(("compute_s", "upload_s", "parameters_s", "ps_aggregation_s"), 0.0)
        step_s = []
        bytes_before = collector.counters["bytes"]
        for _ in range(steps):
            s0 = time.perf_counter()
            flat = flat_parameters(model)
            for conn in conns.values():
                conn.sendall(HEADER.pack(step, exponent, flat.size))
            publish(publisher, step, flat, config.multicast, rate_bps=config.multicast_bps)
            missed += sum(send_missed(conn, flat) for conn in conns.values())
            s1 = time.perf_counter()
            got = collector.collect(step, chunks, retry_s=config.retry_s, timeout_s=config.timeout_s)
            computed = max(COMPUTE.unpack(recv_exact(conn, COMPUTE.size))[0] for conn in conns.values())
            s2 = time.perf_counter()
            sums: dict[str, np.ndarray] = {}
            for (_, p), (values, _) in got.items():  # one precision, one scale: aggregators add exactly
                sums[p] = sums.get(p, 0) + values[:size].astype(np.int64)
            mean = decode_mean(sums, exponent, n)
            s3 = time.perf_counter()
            set_gradient(model, mean)
            opt.step()
            exponent = step_exponent(4 * float(np.abs(mean).max(initial=0.0)), n)  # next step's, with headroom
            step += 1
            times["parameters_s"] += s1 - s0
            times["compute_s"] += computed
            times["upload_s"] += max(0.0, s2 - s1 - computed)
            times["ps_aggregation_s"] += s3 - s2
            step_s.append(time.perf_counter() - s0)
        seconds = time.perf_counter() - t0
        times["ps_aggregation_s"] += collector.counters.get("aggregate_s", 0.0)
        collector.counters["aggregate_s"] = 0.0
        at_ps = collector.counters["bytes"] - bytes_before
        report_epoch(epoch, model, (x, y, xt, yt), limit=config.eval_samples, seconds=seconds, steps=steps,
                     batch=config.batch, times=times, step_s=step_s, sent=sent_per_step * steps, bytes_at_ps=at_ps,
                     ina_efficiency=1 - at_ps / (sent_per_step * steps), parameter_chunks_resent=missed,
                     collector=dict(collector.counters))
    for conn in conns.values():
        conn.sendall(HEADER.pack(step, 0, 0))
        conn.close()
    print(json.dumps({"done": True, "parameters": size, "steps": step}), flush=True)


if __name__ == "__main__":
    role_main(ps, PsConfig)
