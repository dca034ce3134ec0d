"""The gradient packet of PAHInA's aggregation service (pahina.txt §IV-B, Figure 3a), in a UDP payload.

Header (network byte order, 22 bytes), then ``count`` signed 32-bit fixed-point values::

    magic "NWAG" | kind u8 | agg_id u16 | wor_id u16 | precision u8 | epoch_id u32 | tensor_id u16 | count u32 | flags u16

``kind``: DATA (worker → aggregator), RESULT (aggregator → PS, ``wor_id`` = number of workers
summed), NACK (aggregator → worker: resend this epoch/tensor). ``flags`` bit 0 on a RESULT: some
sum saturated. The flow of a packet is ``flow_id = (agg_id, wor_id, precision, epoch_id, tensor_id)``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

MAGIC = b"NWAG"
HEADER = struct.Struct("!4sBHHBIHIH")
DATA, RESULT, NACK = 1, 2, 3
PRECISION_CODE = {"fp8": 1, "fp16": 2, "fp32": 3}
CODE_PRECISION = {v: k for k, v in PRECISION_CODE.items()}
SATURATED = 1
MAX_VALUES = 16_000  # one datagram stays under 64 KiB


class PacketError(ValueError):
    """A datagram that is not a well-formed aggregation packet."""


@dataclass(frozen=True)
class Packet:
    kind: int
    agg_id: int
    wor_id: int
    precision: str
    epoch_id: int
    tensor_id: int
    values: np.ndarray  # (count,) int32 fixed-point
    flags: int = 0

    def encode(self) -> bytes:
        values = np.ascontiguousarray(self.values, dtype=">i4")
        if values.size > MAX_VALUES:
            raise PacketError(f"{values.size} values do not fit one datagram (at most {MAX_VALUES})")
        return HEADER.pack(MAGIC, self.kind, self.agg_id, self.wor_id, PRECISION_CODE[self.precision], self.epoch_id,
                           self.tensor_id, values.size, self.flags) + values.tobytes()


def decode(datagram: bytes) -> Packet:
    """Parse a datagram; anything malformed raises :class:`PacketError` (the service counts and drops it)."""
    if len(datagram) < HEADER.size:
        raise PacketError(f"{len(datagram)} bytes is shorter than the {HEADER.size}-byte header")
    magic, kind, agg, wor, code, epoch, tensor, count, flags = HEADER.unpack_from(datagram)
    if magic != MAGIC:
        raise PacketError("bad magic")
    if kind not in (DATA, RESULT, NACK):
        raise PacketError(f"unknown kind {kind}")
    if code not in CODE_PRECISION:
        raise PacketError(f"unknown precision code {code}")
    if len(datagram) != HEADER.size + 4 * count:
        raise PacketError(f"{count} values announced but {len(datagram) - HEADER.size} payload bytes")
    values = np.frombuffer(datagram, dtype=">i4", offset=HEADER.size).astype(np.int32)
    return Packet(kind, agg, wor, CODE_PRECISION[code], epoch, tensor, values, flags)
