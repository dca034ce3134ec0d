"""Loading and driving the streaming aggregator (``agg/bpf/stream_agg.bpf.c``) through libbpf.

:class:`StreamXdp` sizes the program's maps to the switch's aggregator memory (an entry of a key in
flight holds its lanes, a kept sum its result: :data:`ENTRY_BYTES`, :data:`KEPT_BYTES`), writes
the configuration (this switch's aggregator and members, its parent in a multi-level tree, the
results' group and the distribution tree's ports) and attaches the program to every interface of
the switch's namespace. A switch on the distribution tree that aggregates nothing runs it too
(``agg_id`` 0): it forwards RESULTs.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ...dataplane.packet import PRECISION_CODE
from ...errors import NetweaveError
from ..net.bpf import XdpObject, compile_program
from .blockfp import PAYLOAD_BYTES

SOURCE = "agg/bpf/stream_agg.bpf.c"
COUNTERS = ("accepted", "duplicates", "results", "partials", "resent", "full", "mismatched", "unknown", "forwarded",
            "pulls")  # the order of the counters enum in bpf/stream_agg.bpf.c
ENTRY_BYTES = 32 + 2 * PAYLOAD_BYTES  # struct entry: the lock and state, two lane words per payload word
KEPT_BYTES = 24 + PAYLOAD_BYTES  # struct kept: a complete sum
CONFIG = struct.Struct("=IIIII4s4sII4s")  # struct config


@dataclass(frozen=True)
class StreamSwitch:
    """What one switch's program needs.

    Attributes:
        agg_id: its aggregator (0: it aggregates nothing and forwards RESULTs); members: member id →
        wire precision (workers, and each child aggregator's partial sums of one precision:
        :func:`~.streamtree.child_member`); port, results_port: the UDP ports of DATA and RESULTs;
        memory_bytes: its aggregator memory; parent: (the parent's agg_id, this one's member id
        there less the precision code) below the root of a tree, with ``parent_address``; group:
        the results' IPv4 multicast group; address: the switch's own (its RESULTs' source); up:
        the interface toward the distribution root (None at the root); down: its interfaces
        toward workers on the distribution tree.
    """

    agg_id: int
    port: int
    results_port: int
    group: str
    address: str = "0.0.0.0"
    members: dict[int, str] = field(default_factory=dict)
    memory_bytes: int = 8 << 20
    parent: tuple[int, int] | None = None
    parent_address: str | None = None
    up: str | None = None
    down: tuple[str, ...] = ()

    @property
    def max_keys(self) -> int:
        """Keys in flight the memory holds: each an entry while it sums and its kept sum after (the
        workers collect a whole step's sums before the next step's keys come)."""
        return max(1, self.memory_bytes // (ENTRY_BYTES + KEPT_BYTES))

    def bits(self) -> dict[int, int]:
        return {m: 1 << i for i, m in enumerate(sorted(self.members))}


class StreamXdp(XdpObject):
    """The streaming aggregator loaded and attached to ``interfaces`` (context manager)."""

    def __init__(self, switch: StreamSwitch, interfaces: list[str], obj: Path | None = None):
        if len(switch.members) > 64:
            raise NetweaveError(f"aggregator {switch.agg_id}: {len(switch.members)} members exceed the 64-bit bitmap")
        self.switch = switch
        keys = switch.max_keys
        super().__init__(obj or compile_program(SOURCE), "stream_aggregate", interfaces,
                         {"entries": keys, "done": keys}, "the streaming aggregator")
        try:
            self._configure()
            self.attach()
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        s = self.switch
        parent_agg, parent_wor = s.parent or (0, 0)
        up = socket.if_nametoindex(s.up) if s.up else 0
        self.update("cfg", struct.pack("=I", 0), CONFIG.pack(
            s.port, s.results_port, s.agg_id, parent_agg, parent_wor,
            socket.inet_aton(s.parent_address or "0.0.0.0"), socket.inet_aton(s.group), up, 0 if s.up else 1,
            socket.inet_aton(s.address)))
        full: dict[int, int] = {}
        for m, bit in s.bits().items():
            code = PRECISION_CODE[s.members[m]]
            self.update("members", struct.pack("=I", m), struct.pack("=QII", bit, code, 0))
            full[code] = full.get(code, 0) | bit
        for code, bitmap in full.items():
            self.update("full", struct.pack("=I", code), struct.pack("=Q", bitmap))
        for dev in s.down:
            index = struct.pack("=I", socket.if_nametoindex(dev))
            self.update("down", index, index)

    def counters(self) -> dict[str, int]:
        return self.percpu_counters("counters", COUNTERS)
