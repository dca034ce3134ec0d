"""The agent of one switch of a streaming aggregation (issue 31):
``python -m netweave.testbed.agg.stream_agent CONFIG`` (a :class:`StreamAgentConfig`) in the switch's
namespace.

With ``dataplane="xdp"`` it loads the streaming aggregator (:class:`~.stream_xdp.StreamXdp`) on the
switch's interfaces and holds it; recovery needs nothing from it (the senders resend, the program
answers from its kept sums). With ``dataplane="user"`` it is the reference: :class:`UserStream`
aggregates the same packets in numpy (:mod:`.blockfp`), with the same rules, and sends each
complete sum to every worker (unicast) or to the parent aggregator. Either way it prints one JSON
line ``{"ready": …}``, serves until its standard input closes (or SIGTERM), and prints its counters.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ...dataplane.packet import PRECISION_CODE
from ..net.batchio import recv_batch, send_batch, set_receive_buffer
from ..net.netns import interfaces
from ..net.role import RoleConfig
from . import streampacket as sp
from .blockfp import aggregate
from .stream_xdp import StreamSwitch, StreamXdp


BATCH = 32  # datagrams the userspace agent takes, and so answers, at a time


@dataclass(frozen=True, kw_only=True)
class StreamAgentConfig(RoleConfig):
    """One switch's role: its :class:`~.stream_xdp.StreamSwitch` settings, the data plane, and for
    the userspace one its own ``address`` and the workers' (``workers``: wor_id → address), where
    complete sums go."""

    switch: StreamSwitch
    dataplane: str = "xdp"
    address: str | None = None
    workers: dict[int, str] = field(default_factory=dict)


class UserStream:
    """The streaming aggregator in userspace, packet for packet the XDP program's rules: a key's
    members added once each with the same count and exponent, the largest ``want``, the OR of the
    flags; the complete sum (:func:`~.blockfp.aggregate`) kept for resends and sent on."""

    def __init__(self, config: StreamAgentConfig, sock: socket.socket):
        self.c, self.s, self.sock = config, config.switch, sock
        self.bits = self.s.bits()
        self.full = {p: sum(self.bits[m] for m, q in self.s.members.items() if q == p) for p in set(self.s.members.values())}
        self.open: dict[tuple, dict] = {}
        self.kept: dict[tuple, tuple] = {}
        self.counters = dict.fromkeys(("accepted", "duplicates", "results", "partials", "resent", "mismatched",
                                       "unknown", "pulls"), 0)

    def take(self, batch: sp.Batch) -> None:
        h = batch.header
        for i in range(len(h)):
            if h["kind"][i] not in (sp.DATA, sp.PULL) or h["agg_id"][i] != self.s.agg_id:
                continue
            member, precision = int(h["wor_id"][i]), sp.PRECISION_OF[int(h["precision"][i])]
            if h["kind"][i] == sp.PULL:
                key = (int(h["step"][i]), int(h["chunk"][i]), precision)
                self.counters["pulls"] += 1
                if key in self.kept:
                    self._send(key, again=True, to=member)
                continue
            if self.s.members.get(member) != precision:
                self.counters["unknown"] += 1
                continue
            key = (int(h["step"][i]), int(h["chunk"][i]), precision)
            if key in self.kept:
                self._send(key, again=True, to=member)
                continue
            entry = self.open.setdefault(key, {"bitmap": 0, "values": []})
            count, exponent = int(h["count"][i]), int(h["exponent"][i])
            if entry["bitmap"] & self.bits[member]:
                self.counters["duplicates"] += 1
                continue
            if entry["bitmap"] and (entry["count"], entry["exponent"]) != (count, exponent):
                self.counters["mismatched"] += 1
                continue
            if not entry["bitmap"]:
                entry.update(count=count, exponent=exponent, want=int(h["want"][i]), flags=0)
            entry["want"] = max(entry["want"], int(h["want"][i]))
            entry["flags"] |= int(h["flags"][i])
            entry["bitmap"] |= self.bits[member]
            entry["values"].append(batch.values(i).copy())
            self.counters["accepted"] += 1
            if entry["bitmap"] == self.full[precision]:
                total = aggregate(np.stack(entry["values"]), precision)
                members = bin(self.full[precision]).count("1")
                self.kept[key] = (total, entry["exponent"], entry["want"], entry["flags"], members)
                del self.open[key]
                self._send(key)

    def _send(self, key: tuple, again: bool = False, to: int = 0) -> None:
        """Send a kept sum on (``again``: a resend, counted as such; the first send counts as a
        result or a partial sum). A root sends its sums to every worker, one unicast copy each; a
        resend asked for by worker ``to`` (its PULL or its own values again) goes to that worker
        alone — the others ask for what they miss themselves, and answering every ask with a copy
        for every worker turned a few losses at the PS into a storm of N² copies."""
        step, chunk, precision = key
        self.counters["resent" if again else "partials" if self.s.parent else "results"] += 1
        total, exponent, want, flags, members = self.kept[key]
        u = total[None, :]
        if self.s.parent:  # below the root: one member's DATA at the parent (one member per precision)
            agg, member = self.s.parent
            rows, lengths = sp.build(sp.DATA, agg, member + PRECISION_CODE[precision], precision, step, chunk, u,
                                     exponents=exponent, want=want, flags=flags,
                                     size=chunk * u.shape[1] + total.size, workers=members)
            send_batch(self.sock, rows, lengths, (self.s.parent_address, self.s.port))
            return
        rows, lengths = sp.build(sp.RESULT, self.s.agg_id, 0, precision, step, chunk, u, exponents=exponent,
                                 want=want, flags=flags, size=chunk * u.shape[1] + total.size, workers=members)
        for address in [self.c.workers[to]] if to in self.c.workers else self.c.workers.values():
            send_batch(self.sock, rows, lengths, (address, self.s.results_port))


def serve(config: StreamAgentConfig) -> dict:
    """Run the agent until stdin closes or SIGTERM; returns the data plane's counters."""
    from contextlib import nullcontext

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    user = config.dataplane == "user"
    with (nullcontext() if user else StreamXdp(config.switch, interfaces())) as xdp, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        plane = None
        if user:
            sock.bind((config.address, config.switch.port))
            set_receive_buffer(sock, 64 << 20)
            plane = UserStream(config, sock)
        print(json.dumps({"ready": True, "agg_id": config.switch.agg_id, "dataplane": config.dataplane,
                          "max_keys": config.switch.max_keys}), flush=True)
        ready_cpu_s = time.process_time()
        # at most BATCH packets at a time: the userspace agent answers each batch at once, one copy per
        # worker, and 256 × 6 workers overflowed the PS link's 1,000-packet queue (GRID, 6 workers)
        rows = np.zeros((BATCH, sp.HEADER.itemsize + 2048), np.uint8)
        lengths = np.zeros(BATCH, np.int64)
        while not stop:
            if user:
                k = recv_batch(sock, rows, lengths, 0.01)
                if k:
                    plane.take(sp.parse(rows, lengths, k))
            ready = select.select([sys.stdin], [], [], 0 if user else 0.2)[0]
            if ready and not os.read(sys.stdin.fileno(), 4096):
                break  # the parent closed our stdin: it is gone or done
        counters = plane.counters if user else xdp.counters()
        return {"counters": counters, "agent_cpu_s": time.process_time() - ready_cpu_s}


def main() -> None:
    print(json.dumps(serve(StreamAgentConfig.from_json(sys.argv[1]))), flush=True)


if __name__ == "__main__":
    main()
