"""The wire protocol of the SwitchGNN exchange on the testbed: what the switch agent
(:mod:`.switch`) and the workers (:mod:`.worker`) both speak, over one TCP stream per worker.

A message is :data:`HEADER` (little-endian): magic ``NWGX``, kind, layer, direction, block,
sender, count, dim, offset, seq, payload bytes; then the payload. Kinds: HELLO (a worker's rank),
UNITS (a block's rows going up), SUMS and COPIES (coming down), DONE and NEXT (block
synchronisation, §3.3), GRAD and GRADSUM (the parameter gradients, summed by the switch: ``count``
float32 values from ``offset`` of ``dim`` in all, :data:`GRAD_CHUNK` a message), ROWS (the
peer-to-peer exchange), BYE. :class:`Conn` queues messages and reassembles them from a
non-blocking socket; :func:`pump` moves every connection until a condition holds.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

MAGIC = b"NWGX"
HEADER = struct.Struct("<4sBBBxIIIIIIQ")  # 40 bytes
HELLO, UNITS, SUMS, COPIES, DONE, NEXT, GRAD, GRADSUM, ROWS, BYE = range(1, 11)
EXCHANGE_KINDS = (UNITS, SUMS, COPIES, DONE, NEXT, ROWS)
GRAD_CHUNK = 8192  # gradient values a GRAD message (32 KB): a chunk's sum comes down while later chunks go up
MAX_PAYLOAD = 1 << 32


class ProtocolError(RuntimeError):
    """A message that does not fit the exchange in progress."""


@dataclass
class Message:
    kind: int
    layer: int
    direction: int
    block: int
    sender: int
    count: int
    dim: int
    offset: int
    seq: int
    payload: bytes

    def arrays(self, *spec: tuple[type, int]) -> list[np.ndarray]:
        """Split the payload into arrays of ``(dtype, size)`` in order; the last may be ``-1`` (the rest)."""
        out, at = [], 0
        for dtype, size in spec:
            item = np.dtype(dtype).itemsize
            size = (len(self.payload) - at) // item if size < 0 else size
            if at + size * item > len(self.payload):
                raise ProtocolError(f"message kind {self.kind}: payload of {len(self.payload)} B too short")
            out.append(np.frombuffer(self.payload, dtype, size, at))
            at += size * item
        return out


class Conn:
    """One non-blocking TCP stream with an output queue: ``queue`` never blocks, ``flush`` sends what
    the socket takes, ``read`` returns the complete messages that came. ``sent``/``received``:
    bytes per message kind (header included)."""

    def __init__(self, sock: socket.socket, peer: int = -1):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.peer = sock, peer
        self.out: deque[memoryview] = deque()
        self.inbuf = bytearray()
        self.sent: dict[int, int] = {}
        self.received: dict[int, int] = {}
        self.closed = False
        self.bye = False  # the peer said BYE: its stream may end

    def fileno(self) -> int:
        return self.sock.fileno()

    def queue(self, kind: int, *arrays: np.ndarray, layer: int = 0, direction: int = 0, block: int = 0,
              sender: int = 0, count: int = 0, dim: int = 0, offset: int = 0, seq: int = 0) -> None:
        parts = [memoryview(np.ascontiguousarray(a)).cast("B") for a in arrays]
        size = sum(p.nbytes for p in parts)
        self.out.append(memoryview(HEADER.pack(MAGIC, kind, layer, direction, block, sender, count, dim, offset, seq,
                                               size)))
        self.out.extend(p for p in parts if p.nbytes)
        self.sent[kind] = self.sent.get(kind, 0) + HEADER.size + size

    def flush(self) -> None:
        while self.out:
            try:
                n = self.sock.send(self.out[0])
            except (BlockingIOError, InterruptedError):
                return
            if n < len(self.out[0]):
                self.out[0] = self.out[0][n:]
                return
            self.out.popleft()

    def read(self) -> list[Message]:
        while True:
            try:
                data = self.sock.recv(1 << 22)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                self.closed = True
                break
            self.inbuf += data
        messages, at = [], 0
        while len(self.inbuf) - at >= HEADER.size:
            magic, kind, layer, direction, block, sender, count, dim, offset, seq, size = HEADER.unpack_from(self.inbuf, at)
            if magic != MAGIC or size > MAX_PAYLOAD:
                raise ProtocolError(f"a malformed message from peer {self.peer} (magic {magic!r}, {size} B)")
            if len(self.inbuf) - at - HEADER.size < size:
                break
            payload = bytes(self.inbuf[at + HEADER.size: at + HEADER.size + size])
            messages.append(Message(kind, layer, direction, block, sender, count, dim, offset, seq, payload))
            self.bye |= kind == BYE
            self.received[kind] = self.received.get(kind, 0) + HEADER.size + size
            at += HEADER.size + size
        del self.inbuf[:at]
        return messages


def pump(conns, done, on_message, timeout_s: float, what: str) -> None:
    """Send and receive on ``conns`` until ``done()`` and everything queued has left (a worker that
    stops pumping a stream with data still queued could stall its peer); ``on_message(conn,
    message)`` for each message. Raises TimeoutError when nothing came for ``timeout_s`` s,
    ConnectionError when a peer closed its stream before saying BYE."""
    last = time.monotonic()
    while True:
        for c in conns:
            if c.out:
                c.flush()
        if done() and not any(c.out for c in conns):
            return
        open_ = [c for c in conns if not c.closed]
        if not open_:
            raise ConnectionError(f"every stream closed while waiting for {what}")
        readable, writable, _ = select.select(open_, [c for c in open_ if c.out], [], 0.5)
        for c in writable:
            c.flush()
        for c in readable:
            messages = c.read()
            if messages:
                last = time.monotonic()
            for m in messages:
                on_message(c, m)
            if c.closed and not c.bye and not done():
                raise ConnectionError(f"peer {c.peer} closed its stream while waiting for {what}")
        if time.monotonic() - last > timeout_s:
            raise TimeoutError(f"nothing arrived for {timeout_s:g} s while waiting for {what}")


def drain(conns, timeout_s: float = 30.0) -> None:
    """Send everything queued (blocking up to ``timeout_s``)."""
    pump(conns, lambda: not any(c.out for c in conns), lambda c, m: None, timeout_s, "the last messages to leave")
