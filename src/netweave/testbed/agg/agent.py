"""The userspace agent of one INA switch (pahina.txt §IV-C): ``python -m netweave.testbed.agg.agent CONFIG``,
run inside the switch's namespace.

It loads and attaches the XDP aggregator (:class:`~.xdp.XdpAggregator`) to the switch's
interfaces, prints one JSON line ``{"ready": …}``, and then serves the aggregator's timer: for
every key whose timer expired it sends a NACK (``netweave.dataplane.packet``) to each worker still
missing, which resends. A NACK from the PS with ``wor_id`` 0 (to the switch's ``address``) means
the key's RESULT was lost after the switch: the agent forgets the key and NACKs all its workers. It ends when its standard input closes (its parent is gone) or on SIGTERM,
printing the data plane's counters as one JSON line; the XDP program detaches as its links close,
so nothing stays attached.

CONFIG is an :class:`AgentConfig` (JSON: :class:`~netweave.testbed.net.role.RoleConfig`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

from dataclasses import dataclass, field

import numpy as np

from ...dataplane.packet import NACK, Packet, PacketError, decode
from ..net.batchio import set_receive_buffer
from ..net.netns import interfaces
from ..net.role import RoleConfig
from .xdp import AggregatorConfig, XdpAggregator


@dataclass(frozen=True, kw_only=True)
class AgentConfig(RoleConfig):
    """One switch agent's role.

    Attributes:
        agg_id: its aggregator's id; port: the aggregation traffic's UDP port; workers: wor_id →
        wire precision of its members; timeout_s: how long a key waits before its missing workers
        are NACKed; memory_bytes: the switch's aggregator memory; dataplane: ``xdp`` (the kernel
        aggregates, the agent NACKs and answers the PS) or ``user`` (:class:`UserPlane` aggregates
        here; needs ``address`` and ``ps``); address: the switch's own address, where the PS's
        requests arrive (None: none taken); addresses: wor_id → the member's address (NACKs);
        worker_port: where NACKs go (default ``port``); ps: the PS's (address, port); parent and
        parent_address: in a multi-level tree, (agg_id, wor_id) of this aggregator at the next one
        up and that switch's (address, port); interfaces: where the XDP program attaches (None:
        every interface but loopback).
    """

    agg_id: int
    port: int
    workers: dict[int, str]
    timeout_s: float = 0.05
    memory_bytes: int = 8 << 20
    dataplane: str = "xdp"
    address: str | None = None
    addresses: dict[int, str] = field(default_factory=dict)
    worker_port: int | None = None
    ps: tuple[str, int] | None = None
    parent: tuple[int, int] | None = None
    parent_address: tuple[str, int] | None = None
    interfaces: tuple[str, ...] | None = None


class UserPlane:
    """The userspace data plane (``dataplane: user``): :class:`~netweave.dataplane.aggregation.AggregationState`
    behind a UDP socket on the switch's address, the reference the XDP program must equal. Workers
    address the switch; complete sums go to the PS as RESULTs; a key that finds the memory full
    goes to the PS as its DATA (bypassed whole, as in XDP)."""

    def __init__(self, agg: AggregatorConfig, ps: tuple[str, int], up: tuple[str, int] | None = None):
        from ...dataplane.aggregation import AggregationState

        self.agg, self.ps, self.up = agg, ps, up or ps  # up: the parent aggregator's switch (multi-level)
        self.state = AggregationState(dict(agg.workers), timeout_s=agg.timeout_s)
        self.bypass: set = set()
        self.passed_full = 0

    def take(self, p: Packet, sock: socket.socket, now: float) -> None:
        from ...dataplane.packet import DATA, RESULT

        key = (p.epoch_id, p.tensor_id, p.precision)
        if p.kind != DATA or p.agg_id != self.agg.agg_id:
            return
        if key in self.bypass or (key not in self.state.state and len(self.state.state) >= self.agg.max_keys):
            self.bypass.add(key)
            self.passed_full += 1
            sock.sendto(p.encode(), self.ps)
            return
        done = self.state.accept(p.wor_id, p.epoch_id, p.tensor_id, p.precision, p.values, now)
        if done is not None:
            total, saturated = done
            if self.agg.parent:  # multi-level: one more worker's DATA at the next aggregator up
                parent, me = self.agg.parent
                sock.sendto(Packet(DATA, parent, me, p.precision, p.epoch_id, p.tensor_id, total,
                                   int(saturated)).encode(), self.up)
                return
            summed = sum(1 for prec in self.agg.workers.values() if prec == p.precision)
            sock.sendto(Packet(RESULT, self.agg.agg_id, summed, p.precision, p.epoch_id, p.tensor_id, total,
                               int(saturated)).encode(), self.ps)

    def poll_timeouts(self, now: float) -> list:
        return self.state.expired(now)

    def forget(self, key) -> None:
        self.state.completed.pop(key, None)
        self.bypass.discard(key)

    def counters(self) -> dict:
        c = self.state.counters
        return {"accepted": c.accepted, "duplicates": c.duplicates, "results": c.results, "saturated": c.saturated,
                "passed_full": self.passed_full, "mismatched": c.mismatched, "unknown": c.unknown_workers}


def serve(config: AgentConfig) -> dict:
    """Run the agent until stdin closes or SIGTERM; returns the counters and the NACKs sent."""
    import time
    from contextlib import nullcontext

    agg = AggregatorConfig(agg_id=config.agg_id, port=config.port, workers=dict(config.workers),
                           timeout_s=config.timeout_s, memory_bytes=config.memory_bytes, parent=config.parent)
    addresses = config.addresses
    user = config.dataplane == "user"
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    nacks, resends = 0, 0
    worker_port = config.worker_port or agg.port
    plane = UserPlane(agg, config.ps, config.parent_address) if user else None
    with (nullcontext() if user else XdpAggregator(agg, list(config.interfaces or interfaces()))) as xdp, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        plane = plane or xdp
        if config.address:
            sock.bind((config.address, agg.port))
            set_receive_buffer(sock, 32 << 20)  # a burst of every worker's packets fits

        def nack(workers, epoch, tensor, precision):
            for wor in workers:
                if wor in addresses:
                    packet = Packet(NACK, agg.agg_id, wor, precision, epoch, tensor, np.zeros(0, np.int32))
                    sock.sendto(packet.encode(), (addresses[wor], worker_port))

        print(json.dumps({"ready": True, "agg_id": agg.agg_id, "max_keys": agg.max_keys,
                          "dataplane": "user" if user else "xdp"}), flush=True)
        ready_cpu_s = time.process_time()
        next_check = 0.0
        while not stop:
            if user:  # the reference scans every open key: at most every 10 ms
                now = time.monotonic()
                expired = plane.poll_timeouts(now) if now >= next_check else []
                next_check = max(next_check, now + 0.01) if now >= next_check else next_check
            else:
                expired = [(key, xdp.missing(bitmap, key[2])) for key, bitmap in xdp.poll_timeouts(20)]
            for (epoch, tensor, precision), missing in expired:
                nack(missing, epoch, tensor, precision)
                nacks += len(missing)
            while config.address and select.select([sock], [], [], 0.005 if user else 0)[0]:
                try:
                    p = decode(sock.recv(65536))
                except PacketError:
                    continue
                asked = (p.wor_id == 0 and p.agg_id == agg.agg_id  # the PS lost this key's RESULT
                         or agg.parent is not None and (p.agg_id, p.wor_id) == agg.parent)  # the parent lost our sum
                if p.kind == NACK and asked:
                    key = (p.epoch_id, p.tensor_id, p.precision)
                    plane.forget(key)
                    nack([w for w, prec in agg.workers.items() if prec == p.precision], *key)
                    resends += 1
                elif user:
                    plane.take(p, sock, time.monotonic())
            if select.select([sys.stdin], [], [], 0)[0] and not os.read(sys.stdin.fileno(), 4096):
                break  # the parent closed our stdin: it is gone or done
        return {"counters": plane.counters(), "nacks_sent": nacks, "results_asked_again": resends,
                "agent_cpu_s": time.process_time() - ready_cpu_s}  # serving only, not start-up


def main() -> None:
    result = serve(AgentConfig.from_json(sys.argv[1]))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
