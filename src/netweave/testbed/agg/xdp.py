"""Compiling, loading and driving the XDP aggregator (``agg/bpf/ina_agg.bpf.c``) through libbpf.

* :func:`~netweave.testbed.net.bpf.compile_program` builds the object with clang at first use and
  caches it by the source's hash (``$XDG_CACHE_HOME/netweave/bpf``); the aggregator gets each
  precision's container width from :data:`netweave.dataplane.fixedpoint.CONTAINER_BITS` as ``-D``
  defines (:func:`aggregator_defines`).
* :class:`XdpAggregator` opens it with libbpf (``libbpf.so.1``, through ctypes), sizes the state
  and data maps to the switch's aggregator memory, loads it, attaches it to interfaces as BPF
  links (closed, hence detached, when the process ends: nothing stays behind), fills the
  configuration maps and reads the counters and the timer's ring buffer.

It runs inside the switch's namespace (:mod:`.agent`), where interface indexes mean something.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from pathlib import Path

from ...dataplane.fixedpoint import value_bytes
from ...dataplane.packet import PRECISION_CODE
from ...errors import NetweaveError
from ..net.bpf import RING_CALLBACK, XdpObject, compile_program

SOURCE = "agg/bpf/ina_agg.bpf.c"
MAX_SLOTS = 256  # values per packet (bpf source)
COUNTERS = ("accepted", "duplicates", "results", "saturated", "passed_full", "mismatched", "unknown", "timeouts",
            "raced")  # the order of the counters enum in bpf/ina_agg.bpf.c
KEY = struct.Struct("=IHBx")  # struct key
EVENT = struct.Struct("=IHBxQ")  # struct event: key, bitmap


def key_bytes() -> int:
    """Aggregator memory one in-flight key takes: the state entry and its int64 sums (whatever the
    precision's container on the wire)."""
    return 64 + 8 * MAX_SLOTS


def aggregator_defines() -> dict[str, int]:
    """The ``-D`` defines of ``ina_agg.bpf.c``: each precision's bytes per value on the wire."""
    return {f"WIDTH_{p.upper()}": value_bytes(p) for p in PRECISION_CODE}


@dataclass(frozen=True)
class AggregatorConfig:
    """One switch's aggregator: its ``agg_id``, the UDP ``port`` of aggregation traffic, its
    ``workers`` (wor_id → precision), the NACK ``timeout_s``, its ``memory_bytes`` and, in a
    multi-level tree, its ``parent`` (its sums go there as DATA instead of to the PS as RESULTs)."""

    agg_id: int
    port: int
    workers: dict[int, str]
    timeout_s: float = 0.05
    memory_bytes: int = 8 << 20
    parent: tuple[int, int] | None = None  # multi-level: (the next aggregator's agg_id, this one's wor_id there)

    @property
    def max_keys(self) -> int:
        return max(1, self.memory_bytes // key_bytes())

    def bits(self) -> dict[int, int]:
        """wor_id → its bit in the bitmap (the workers in id order, as the userspace service)."""
        return {w: 1 << i for i, w in enumerate(sorted(self.workers))}


class XdpAggregator(XdpObject):
    """The aggregator loaded and attached to ``interfaces`` of the current namespace (context manager)."""

    def __init__(self, config: AggregatorConfig, interfaces: list[str], obj: Path | None = None):
        if len(config.workers) > 64:
            raise NetweaveError(f"aggregator {config.agg_id}: {len(config.workers)} workers exceed the 64-bit bitmap")
        self.config, self._ring = config, None
        super().__init__(obj or compile_program(SOURCE, aggregator_defines()), "ina_aggregate", interfaces,
                         {"state": config.max_keys, "data": config.max_keys}, "the XDP aggregator")
        try:
            self._configure()
            self._open_ring()
            self.attach()
        except BaseException:
            self.close()
            raise


    def _configure(self) -> None:
        c = self.config
        self.update("cfg", struct.pack("=I", 0), struct.pack("=IIQII", c.port, c.agg_id, int(c.timeout_s * 1e9),
                                                                 *(c.parent or (0, 0))))
        full = {}
        for wor, bit in c.bits().items():
            code = PRECISION_CODE[c.workers[wor]]
            self.update("workers", struct.pack("=I", wor), struct.pack("=QII", bit, code, 0))
            full[code] = full.get(code, 0) | bit
        for code, bitmap in full.items():
            self.update("full", struct.pack("=I", code), struct.pack("=Q", bitmap))

    def counters(self) -> dict[str, int]:
        """The data plane's counters, summed over CPUs."""
        return self.percpu_counters("counters", COUNTERS)

    def _open_ring(self) -> None:
        code_precision = {v: k for k, v in PRECISION_CODE.items()}

        def on_event(_ctx, data, size):
            epoch, tensor, code, bitmap = EVENT.unpack(ctypes.string_at(data, EVENT.size))
            self._events.append(((epoch, tensor, code_precision.get(code, "?")), bitmap))
            return 0

        self._events: list = []
        self._callback = RING_CALLBACK(on_event)  # kept alive as long as the ring
        self._ring = self.lib.ring_buffer__new(self.fd("events"), ctypes.cast(self._callback, ctypes.c_void_p), None, None)
        if not self._ring:
            raise NetweaveError(f"could not open the aggregator's ring buffer (errno {ctypes.get_errno()})")

    def poll_timeouts(self, timeout_ms: int = 100) -> list[tuple[tuple[int, int, str], int]]:
        """Keys whose timer expired since the last poll: ``((epoch, tensor, precision), bitmap)``."""
        self._events.clear()
        self.lib.ring_buffer__poll(self._ring, timeout_ms)
        return list(self._events)

    def forget(self, key: tuple[int, int, str]) -> None:
        """Drop a finished (or bypassed) key, so that its workers' resends are aggregated afresh
        (the PS asks for this when the key's RESULT was lost on its way)."""
        raw = KEY.pack(key[0], key[1], PRECISION_CODE[key[2]])
        for name in ("done", "bypass"):
            self.lib.bpf_map_delete_elem(self.fd(name), ctypes.create_string_buffer(raw, len(raw)))

    def missing(self, bitmap: int, precision: str) -> list[int]:
        """The workers of ``precision`` whose bit is not in ``bitmap``."""
        return [w for w, bit in self.config.bits().items() if self.config.workers[w] == precision and not bitmap & bit]

    def close(self) -> None:
        if self._ring:
            self.lib.ring_buffer__free(self._ring)
            self._ring = None
        super().close()
