"""The gradient packet of PAHInA's aggregation service (pahina.txt §IV-B, Figure 3a), in a UDP payload.

Header (network byte order, 22 bytes), then ``count`` fixed-point values, each in the signed
big-endian container of the packet's precision (:data:`~.fixedpoint.CONTAINER_BITS`: fp8 int16,
fp16 int32, fp32 int64 — 2, 4 or 8 bytes a value, PAHInA's 1 : 2 : 4)::

    magic "NWAG" | kind u8 | agg_id u16 | wor_id u16 | precision u8 | epoch_id u32 | tensor_id u16 | count u32 | flags u16

so a datagram is exactly ``22 + count × width`` bytes (256 fp8 values: 22 + 512). ``kind``: DATA
(worker → aggregator), RESULT (aggregator → PS, ``wor_id`` = number of workers summed, the sum
saturated to the same container), NACK (aggregator → worker: resend this epoch/tensor; no
values). ``flags`` bit 0 on a RESULT: some sum saturated. The flow of a packet is
``flow_id = (agg_id, wor_id, precision, epoch_id, tensor_id)``.

:class:`Packet` and :func:`decode` handle one datagram (values in memory as int64);
:func:`encode_chunks` and :func:`decode_batch` handle many at once as rows of a ``uint8``
array (numpy structured views, no Python loop per packet), the layout ``sendmmsg``/``recvmmsg``
want.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from . import fixedpoint

MAGIC = b"NWAG"
HEADER = struct.Struct("!4sBHHBIHIH")
HEADER_DTYPE = np.dtype([("magic", "S4"), ("kind", "u1"), ("agg_id", ">u2"), ("wor_id", ">u2"), ("precision", "u1"),
                         ("epoch_id", ">u4"), ("tensor_id", ">u2"), ("count", ">u4"), ("flags", ">u2")])
DATA, RESULT, NACK = 1, 2, 3
PRECISION_CODE = {"fp8": 1, "fp16": 2, "fp32": 3}
CODE_PRECISION = {v: k for k, v in PRECISION_CODE.items()}
SATURATED = 1
MAX_VALUES = 8_000  # one datagram of the widest container (8 B) stays under UDP's 65,507 bytes
_WIDTH = np.zeros(256, np.int64)  # bytes per value by precision code (0: unknown code)
for _p, _c in PRECISION_CODE.items():
    _WIDTH[_c] = fixedpoint.value_bytes(_p)
assert HEADER.size == HEADER_DTYPE.itemsize == 22


class PacketError(ValueError):
    """A datagram that is not a well-formed aggregation packet."""


def _container(values: np.ndarray, precision: str) -> np.ndarray:
    """``values`` in ``precision``'s big-endian container; a value outside the container is an error
    (never wrapped)."""
    values = np.asarray(values)
    if values.size:
        lo, hi = fixedpoint.container_range(precision)
        if values.dtype.kind not in "iu" or int(values.min()) < lo or int(values.max()) > hi:
            raise PacketError(f"{precision} values must be integers within its int{fixedpoint.CONTAINER_BITS[precision]} "
                              f"container [{lo}, {hi}]")
    return np.ascontiguousarray(values, dtype=fixedpoint.wire_dtype(precision))


@dataclass(frozen=True)
class Packet:
    kind: int
    agg_id: int
    wor_id: int
    precision: str
    epoch_id: int
    tensor_id: int
    values: np.ndarray  # (count,) fixed-point integers (int64 when decoded); in the precision's container on the wire
    flags: int = 0

    def encode(self) -> bytes:
        values = _container(self.values, self.precision)
        if values.size > MAX_VALUES:
            raise PacketError(f"{values.size} values do not fit one datagram (at most {MAX_VALUES})")
        return HEADER.pack(MAGIC, self.kind, self.agg_id, self.wor_id, PRECISION_CODE[self.precision], self.epoch_id,
                           self.tensor_id, values.size, self.flags) + values.tobytes()


def datagram_bytes(precision: str, count: int) -> int:
    """The size of a datagram carrying ``count`` values of ``precision``: 22 + count × width."""
    return HEADER.size + count * fixedpoint.value_bytes(precision)


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
    precision = CODE_PRECISION[code]
    if len(datagram) != datagram_bytes(precision, count):
        raise PacketError(f"{count} {precision} values announced but {len(datagram) - HEADER.size} payload bytes")
    values = np.frombuffer(datagram, dtype=fixedpoint.wire_dtype(precision), offset=HEADER.size).astype(np.int64)
    return Packet(kind, agg, wor, precision, epoch, tensor, values, flags)


# -- many packets at once ---------------------------------------------------------------------------

def encode_chunks(kind: int, agg_id: int, wor_id: int, precision: str, epoch_id: int, first_tensor: int,
                  values_flat: np.ndarray, per_packet: int) -> tuple[np.ndarray, np.ndarray]:
    """``values_flat`` as ``k = ceil(size / per_packet)`` datagrams (one empty datagram for no
    values): packet ``i`` carries
    ``values[i*per_packet:(i+1)*per_packet]`` as tensor ``first_tensor + i``.

    Returns ``(buffer, lengths)``: ``buffer`` is ``uint8 (k, stride)`` with ``stride = 22 +
    per_packet × width``, row ``i`` holding datagram ``i`` in its first ``lengths[i]`` bytes (the
    last row's tail is zero padding, not part of it). Values outside the container raise
    :class:`PacketError`, as do tensor ids beyond 16 bits.
    """
    if not 1 <= per_packet <= MAX_VALUES:
        raise PacketError(f"{per_packet} values per packet: must be 1..{MAX_VALUES}")
    values = _container(np.asarray(values_flat).ravel(), precision)
    n, width = values.size, fixedpoint.value_bytes(precision)
    k = max(1, -(-n // per_packet))
    if first_tensor < 0 or first_tensor + k - 1 > 0xFFFF:
        raise PacketError(f"tensors {first_tensor}..{first_tensor + k - 1} do not fit the 16-bit tensor_id")
    counts = np.full(k, per_packet, np.int64)
    counts[-1] = n - (k - 1) * per_packet
    header = np.zeros(k, HEADER_DTYPE)
    header["magic"], header["kind"], header["agg_id"], header["wor_id"] = MAGIC, kind, agg_id, wor_id
    header["precision"], header["epoch_id"] = PRECISION_CODE[precision], epoch_id
    header["tensor_id"] = first_tensor + np.arange(k)
    header["count"] = counts
    buffer = np.empty((k, HEADER.size + per_packet * width), np.uint8)
    buffer[:, :HEADER.size] = header.view(np.uint8).reshape(k, HEADER.size)
    padded = np.zeros(k * per_packet, values.dtype)
    padded[:n] = values
    buffer[:, HEADER.size:] = padded.view(np.uint8).reshape(k, per_packet * width)
    return buffer, HEADER.size + counts * width


@dataclass(frozen=True)
class PacketBatch:
    """Decoded rows of a batch: header fields as arrays (``precision`` is the wire code: 1 fp8,
    2 fp16, 3 fp32), ``valid`` False for a malformed datagram (every other field of its row is 0),
    and ``values`` int64 ``(k, max count)``, zero beyond each row's ``count``."""

    kind: np.ndarray
    agg_id: np.ndarray
    wor_id: np.ndarray
    precision: np.ndarray
    epoch_id: np.ndarray
    tensor_id: np.ndarray
    count: np.ndarray
    flags: np.ndarray
    valid: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return self.valid.size

    def packet(self, i: int) -> Packet:
        """Row ``i`` as a :class:`Packet` (a malformed row raises :class:`PacketError`)."""
        if not self.valid[i]:
            raise PacketError(f"row {i} is not a well-formed packet")
        return Packet(int(self.kind[i]), int(self.agg_id[i]), int(self.wor_id[i]), CODE_PRECISION[int(self.precision[i])],
                      int(self.epoch_id[i]), int(self.tensor_id[i]), self.values[i, :self.count[i]].copy(),
                      int(self.flags[i]))


def decode_batch(buffer: np.ndarray, lengths: np.ndarray) -> PacketBatch:
    """Parse ``k`` datagrams, row ``i`` of ``buffer`` (``uint8 (k, stride)``) holding one of
    ``lengths[i]`` bytes, with the checks of :func:`decode` (a length beyond ``stride``, e.g. a
    truncated receive, is malformed too)."""
    buffer = np.asarray(buffer, dtype=np.uint8)
    if buffer.ndim != 2:
        raise ValueError(f"buffer must be (k, stride), got shape {buffer.shape}")
    k, stride = buffer.shape
    lengths = np.asarray(lengths, dtype=np.int64).reshape(k)
    if stride < HEADER.size:
        header = np.zeros(k, HEADER_DTYPE)
    else:
        header = np.ascontiguousarray(buffer[:, :HEADER.size]).view(HEADER_DTYPE).reshape(k)
    code = header["precision"].astype(np.int64)
    count = header["count"].astype(np.int64)
    kind = header["kind"]
    width = _WIDTH[code]
    valid = ((lengths >= HEADER.size) & (lengths <= stride) & (header["magic"] == MAGIC)
             & ((kind == DATA) | (kind == RESULT) | (kind == NACK)) & (width > 0)
             & (lengths == HEADER.size + count * width))
    count = np.where(valid, count, 0)
    values = np.zeros((k, int(count.max(initial=0))), np.int64)
    for precision, c in PRECISION_CODE.items():  # one pass per precision, not per packet
        rows = np.flatnonzero(valid & (code == c))
        if rows.size == 0:
            continue
        w, most = fixedpoint.value_bytes(precision), int(count[rows].max())
        if most == 0:
            continue
        block = buffer[rows, HEADER.size:HEADER.size + most * w]  # a copy (fancy index), contiguous
        block = block.view(fixedpoint.wire_dtype(precision)).reshape(rows.size, most).astype(np.int64)
        block[np.arange(most)[None, :] >= count[rows, None]] = 0
        values[rows, :most] = block

    def field(name: str) -> np.ndarray:
        return np.where(valid, header[name], 0).astype(np.int64)

    return PacketBatch(kind=field("kind"), agg_id=field("agg_id"), wor_id=field("wor_id"), precision=field("precision"),
                       epoch_id=field("epoch_id"), tensor_id=field("tensor_id"), count=count, flags=field("flags"),
                       valid=valid, values=values)
