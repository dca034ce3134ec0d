"""The PS's TCP control channel to each worker: the step's header, the parameter chunks a worker
missed in the multicast, and its compute time.

Per step the PS sends :data:`HEADER` (step, fixed-point exponent, parameter count; count 0 ends the
run); the worker answers :data:`COUNT` and the indices of the chunks it missed, which the PS sends
it over TCP (reliable); after sending its gradient the worker sends :data:`COMPUTE`.
"""

from __future__ import annotations

import socket
import struct
import time

import numpy as np

from ..net.multicast import DATAGRAM_BYTES, chunk_rows, floats_per_chunk

HEADER = struct.Struct("!IiI")  # step, exponent, number of float32 parameters (0: the run is over)
COMPUTE = struct.Struct("!d")  # a worker's compute seconds for the step, after its gradient is sent
COUNT = struct.Struct("!I")  # how many parameter chunks a worker missed (then their indices, u32 each)
HELLO = struct.Struct("!I")  # a worker's rank, first on its connection


def recv_exact(conn: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``conn`` (ConnectionError when it closes first)."""
    chunks, got = [], 0
    while got < n:
        b = conn.recv(min(n - got, 1 << 20))
        if not b:
            raise ConnectionError("the PS closed the connection")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def connect(address: tuple[str, int], timeout_s: float) -> socket.socket:
    """Connect to the PS, which may still be starting (importing torch): retry until ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while True:
        try:
            return socket.create_connection(address, timeout=timeout_s)
        except ConnectionRefusedError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def receive_parameters(ctrl: socket.socket, receiver, step: int, size: int, timeout_s: float) -> np.ndarray:
    """The worker's side of a step's parameters: the multicast chunks that come within
    ``timeout_s``, then the missed ones asked for and read over TCP (``ctrl``)."""
    flat, missing = receiver.receive(step, size, timeout_s)
    ctrl.sendall(COUNT.pack(missing.size) + missing.astype(">u4").tobytes())
    if missing.size:
        per = floats_per_chunk(DATAGRAM_BYTES)
        rows = chunk_rows(flat, per)
        rows[missing] = np.frombuffer(recv_exact(ctrl, 4 * per * missing.size), dtype="<f4").reshape(-1, per)
        flat = rows.reshape(-1)[:size]
    return flat


def send_missed(conn: socket.socket, flat: np.ndarray) -> int:
    """The PS's side: read which chunks a worker missed and send them over TCP; returns how many."""
    count = COUNT.unpack(recv_exact(conn, COUNT.size))[0]
    if count:
        missing = np.frombuffer(recv_exact(conn, 4 * count), dtype=">u4").astype(np.int64)
        conn.sendall(chunk_rows(flat, floats_per_chunk(DATAGRAM_BYTES))[missing].tobytes())
    return count
