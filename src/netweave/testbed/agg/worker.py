"""A worker of data-parallel training through the testbed (PAHInA §VI-B's setting):
``python -m netweave.testbed.agg.worker CONFIG`` (a :class:`WorkerConfig`) in its host's namespace.

For every step it receives the parameters (multicast, the missed chunks over TCP), computes the
gradient of its shard of the batch, casts it to its ``precision``, encodes it in its group's
``wire`` container (:mod:`.gradients`, :mod:`.plan`) and sends it as DATA packets to aggregator
``agg_id`` (an INA switch's XDP program, or the PS); a thread answers NACKs. Its compute seconds go
back to the PS on the control connection.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from .control import COMPUTE, HEADER, HELLO, connect, receive_parameters, recv_exact
from .steps import TrainingConfig, backward_on, flat_gradient, load_parameters, role_main, setup, shard


@dataclass(frozen=True, kw_only=True)
class WorkerConfig(TrainingConfig):
    """One worker's role.

    Attributes:
        rank: its index among the ``workers`` (its shard); wor_id: its id in the packets (rank + 1);
        precision: its gradients' precision; wire: the container its group's aggregator expects
        (wider than ``precision`` when the group mixes precisions); agg_id: the aggregator it sends
        to, at ``target`` (address, port); rate_bps: its pacing (None: as fast as it can);
        address: its own address; interface: its uplink (where it joins the multicast group);
        ps_control: the PS's control (address, port); multicast: the parameters' (group, port);
        multicast_timeout_s: how long it waits for a step's multicast before asking over TCP.
    """

    rank: int
    workers: int
    wor_id: int
    precision: str
    wire: str
    agg_id: int
    target: tuple[str, int]
    address: str
    interface: str
    ps_control: tuple[str, int]
    multicast: tuple[str, int]
    multicast_timeout_s: float
    rate_bps: float | None = None


def worker(config: WorkerConfig) -> None:
    """Run the worker until the PS says the run is over (see the module docstring)."""
    import torch

    from ..net.multicast import ParameterReceiver, receiver_socket
    from .endpoints import WorkerSender
    from .gradients import encode, upcast

    torch.set_num_threads(1)
    x, y, _, _, model = setup(config)
    own, wire = config.precision, config.wire
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((config.address, config.port))
    sender = WorkerSender(udp, config.wor_id, wire, config.agg_id, config.target, rate_bps=config.rate_bps)
    serving = threading.Thread(target=sender.serve, args=(1e9, 1e9), daemon=True)  # NACKs, for the whole run
    group, port = config.multicast
    receiver = ParameterReceiver(receiver_socket(group, port, config.interface))
    ctrl = connect(config.ps_control, config.timeout_s)
    ctrl.sendall(HELLO.pack(config.rank))
    serving.start()
    while True:
        step, exponent, count = HEADER.unpack(recv_exact(ctrl, HEADER.size))
        if count == 0:
            break  # the PS is done
        load_parameters(model, receive_parameters(ctrl, receiver, step, count, config.multicast_timeout_s))
        t0 = time.perf_counter()
        backward_on(model, x, y, shard(step, config.rank, config.workers, config.batch, len(x)))
        values, _ = encode(flat_gradient(model, step), own, exponent)
        compute_s = time.perf_counter() - t0
        sender.send(step, values if wire == own else upcast(values, own, wire))
        ctrl.sendall(COMPUTE.pack(compute_s))


if __name__ == "__main__":
    role_main(worker, WorkerConfig)
