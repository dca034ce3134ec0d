"""Batched datagram I/O: many datagrams per system call, from and into rows of a numpy buffer.

Python's one ``sendto``/``recv`` per datagram costs microseconds each, which binds the testbed's
endpoints (a ResNet-18 step is ~43 K packets per worker). This module moves whole batches with
``sendmmsg``/``recvmmsg`` (``batchio.c``, compiled with the system C compiler at first use and
cached by its hash: :func:`~.native.compile_shared`), loaded with ctypes, which releases the GIL
while it runs.

* :func:`send_batch` sends rows ``0..k-1`` of a ``uint8 (k, stride)`` buffer, row ``i`` being
  ``lengths[i]`` bytes, to one address; a full socket (``EAGAIN``) waits for writability and
  retries, so nothing is dropped at the sender.
* :func:`recv_batch` waits up to ``timeout_s`` for a first datagram and then takes whatever is
  already queued, up to ``k``, into the rows of ``out``; ``lengths_out[i]`` is the datagram's full
  length (larger than ``stride``: it was cut to ``stride`` bytes).

:data:`BACKEND` says which implementation is active: ``"native"`` (the C library), or
``"python"``, the slow path (one ``sendto``/``recv_into`` per datagram, the same results), used
when no C compiler is found or when ``NETWEAVE_BATCHIO=python`` is set; :func:`set_backend`
switches at run time.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import select
import socket
import struct
import time

import numpy as np

from ...errors import NetweaveError
from .native import NoCompiler, compile_shared

SOURCE = "net/batchio.c"
ENV = "NETWEAVE_BATCHIO"  # "python": force the fallback; "native": fail rather than fall back
_lib: ctypes.CDLL | None = None
BACKEND = "python"
FALLBACK_REASON = ""  # why the native backend is not active, when it is not


SO_RCVBUFFORCE = 33  # Linux: SO_RCVBUF beyond net.core.rmem_max, for root (not in Python's socket module)


def set_receive_buffer(sock: socket.socket, size: int) -> bool:
    """A receive buffer of ``size`` bytes, so that a burst of datagrams fits: forced beyond
    ``net.core.rmem_max`` where allowed (root, CAP_NET_ADMIN), else as much as that limit allows.
    Returns whether it was forced."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)
        return True
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
        return False


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(str(compile_shared(SOURCE)), use_errno=True)
        i, l, vp = ctypes.c_int, ctypes.c_long, ctypes.c_void_p
        lib.nw_send_batch.restype = l
        lib.nw_send_batch.argtypes = [i, vp, l, l, vp, vp, i, l, ctypes.POINTER(i)]
        lib.nw_recv_batch.restype = l
        lib.nw_recv_batch.argtypes = [i, vp, l, l, vp, l, ctypes.POINTER(i)]
        _lib = lib
    return _lib


def set_backend(name: str = "auto") -> str:
    """Choose the implementation: ``native`` (raises if it cannot be built), ``python`` (the slow
    path), or ``auto`` (native when it can be built and loaded; else the slow path, with the reason
    in :data:`FALLBACK_REASON`). Returns the one now active."""
    global BACKEND, FALLBACK_REASON
    if name not in ("auto", "native", "python"):
        raise NetweaveError(f"batchio backend {name!r}: use auto, native or python")
    if name == "python":
        BACKEND, FALLBACK_REASON = "python", "chosen"
        return BACKEND
    try:
        _load()
    except (NoCompiler, NetweaveError, OSError) as e:  # no compiler, a failed build, an unwritable cache
        if name == "native":
            raise
        BACKEND, FALLBACK_REASON = "python", str(e)
        return BACKEND
    BACKEND, FALLBACK_REASON = "native", ""
    return BACKEND


def _sockaddr(sock: socket.socket, address) -> bytes | None:
    """The ``struct sockaddr`` of ``address`` ((ip, port) for AF_INET, a path for AF_UNIX; None:
    connected), built once per address (a sender sends many batches to one)."""
    if address is None:
        return None
    return _sockaddr_of(sock.family, address if isinstance(address, (str, bytes)) else tuple(address))


@functools.lru_cache(maxsize=256)
def _sockaddr_of(family, address) -> bytes:
    if family == socket.AF_INET:
        ip, port = address
        return struct.pack("=H", socket.AF_INET) + struct.pack("!H", int(port)) + socket.inet_aton(
            socket.gethostbyname(ip)) + bytes(8)
    if family == socket.AF_INET6:
        ip, port = address[:2]
        flow, scope = (list(address[2:4]) + [0, 0])[:2]
        return (struct.pack("=H", socket.AF_INET6) + struct.pack("!HI", int(port), flow)
                + socket.inet_pton(socket.AF_INET6, ip) + struct.pack("=I", scope))
    if family == socket.AF_UNIX:
        path = os.fsencode(address)
        return struct.pack("=H", socket.AF_UNIX) + path + b"\0"
    raise NetweaveError(f"send_batch: sockets of family {family!r} are not supported")


def _check_rows(buffer: np.ndarray, name: str, writable: bool = False) -> None:
    if not isinstance(buffer, np.ndarray) or buffer.dtype != np.uint8 or buffer.ndim != 2:
        raise NetweaveError(f"{name} must be a uint8 numpy array of shape (k, stride)")
    if not buffer.flags.c_contiguous:
        raise NetweaveError(f"{name} must be C-contiguous")
    if writable and not buffer.flags.writeable:
        raise NetweaveError(f"{name} must be writable")


def _timeout_ms(timeout_s: float | None) -> int:
    return -1 if timeout_s is None else max(0, int(round(timeout_s * 1000)))


def send_batch(sock: socket.socket, buffer: np.ndarray, lengths, address=None, timeout_s: float | None = None) -> int:
    """Send row ``i`` of ``buffer`` (``uint8 (k, stride)``), its first ``lengths[i]`` bytes, as one
    datagram to ``address`` (``(ip, port)``; None: the socket's connected peer), for every row, in
    order. A full socket is waited on (``poll``) and retried, at most ``timeout_s`` (None: no
    limit). Returns how many were sent (all of them unless the time ran out); raises
    :class:`OSError` on any other error."""
    _check_rows(buffer, "buffer")
    k, stride = buffer.shape
    lengths = np.ascontiguousarray(lengths, dtype=np.int64).reshape(-1)
    if lengths.size != k:
        raise NetweaveError(f"send_batch: {lengths.size} lengths for {k} rows")
    if k and (lengths.min() < 0 or lengths.max() > stride):
        raise NetweaveError(f"send_batch: lengths must lie in [0, {stride}] (the row stride)")
    if k == 0:
        return 0
    name = _sockaddr(sock, address)
    if BACKEND == "python":
        return _py_send(sock, buffer, lengths, address, timeout_s)
    lengths32 = lengths.astype(np.uint32)
    err = ctypes.c_int(0)
    addr = ctypes.create_string_buffer(name, len(name)) if name is not None else None
    sent = _load().nw_send_batch(sock.fileno(), buffer.ctypes.data, k, stride, lengths32.ctypes.data, addr,
                                 len(name) if name is not None else 0, _timeout_ms(timeout_s), ctypes.byref(err))
    if sent < 0 or err.value:
        code = err.value or -sent
        raise OSError(code, f"send_batch: {os.strerror(code)} after {max(sent, 0)} of {k} datagrams")
    return int(sent)


def send_paced(sock: socket.socket, buffer: np.ndarray, lengths, address=None, rate_bps: float | None = None,
               burst: int = 32) -> int:
    """:func:`send_batch` at most ``rate_bps`` bits per second of UDP payload (None: as fast as the
    socket takes them): ``burst`` datagrams per system call, then a sleep until the average is
    back on the rate. A sender that keeps to the rate its control plane gave it (PAHInA eq. 2)
    does not overflow the queue of the link it shares, where a blast would be dropped there."""
    lengths = np.ascontiguousarray(lengths, dtype=np.int64).reshape(-1)
    if not rate_bps:
        return send_batch(sock, buffer, lengths, address)
    start, sent, bits = time.monotonic(), 0, 0
    for i in range(0, len(lengths), burst):
        sent += send_batch(sock, buffer[i:i + burst], lengths[i:i + burst], address)
        bits += 8 * int(lengths[i:i + burst].sum())
        wait = start + bits / rate_bps - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    return sent


def recv_batch(sock: socket.socket, out: np.ndarray, lengths_out: np.ndarray, timeout_s: float | None) -> int:
    """Wait up to ``timeout_s`` (None: forever) for a datagram, then take every one already queued,
    up to ``k = len(out)``, into the rows of ``out`` (``uint8 (k, stride)``); ``lengths_out[i]``
    (an integer array of at least k) gets datagram ``i``'s full length (above ``stride``: cut).
    Returns how many (0: none came in time)."""
    _check_rows(out, "out", writable=True)
    k, stride = out.shape
    if not isinstance(lengths_out, np.ndarray) or lengths_out.ndim != 1 or lengths_out.size < k \
            or lengths_out.dtype.kind not in "iu":
        raise NetweaveError(f"recv_batch: lengths_out must be a 1-D integer array of at least {k}")
    if k == 0:
        return 0
    if BACKEND == "python":
        return _py_recv(sock, out, lengths_out, timeout_s)
    direct = lengths_out.dtype == np.uint32 and lengths_out.flags.c_contiguous and lengths_out.flags.writeable
    lengths32 = lengths_out if direct else np.empty(k, np.uint32)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    err = ctypes.c_int(0)
    lib = _load()
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        got = lib.nw_recv_batch(sock.fileno(), out.ctypes.data, k, stride, lengths32.ctypes.data, _timeout_ms(left),
                                ctypes.byref(err))
        if got < 0 or err.value:
            code = err.value or -got
            raise OSError(code, f"recv_batch: {os.strerror(code)}")
        if got or (deadline is not None and time.monotonic() >= deadline):
            break  # (0 with time left: poll woke up but the datagram was taken elsewhere; wait again)
    if not direct and got:
        lengths_out[:got] = lengths32[:got]
    return int(got)


# -- the slow path: one system call per datagram ------------------------------------------------
def _py_send(sock, buffer, lengths, address, timeout_s) -> int:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    flags = socket.MSG_DONTWAIT
    for i in range(buffer.shape[0]):
        data = memoryview(buffer[i, :lengths[i]])
        while True:
            try:
                if address is None:
                    sock.send(data, flags)
                else:
                    sock.sendto(data, flags, address)
                break
            except (BlockingIOError, InterruptedError):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return i
                select.select([], [sock], [], left)
            except OSError as e:
                if e.errno != errno.ENOBUFS:
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    return i
                time.sleep(50e-6)
    return buffer.shape[0]


def _py_recv(sock, out, lengths_out, timeout_s) -> int:
    if not select.select([sock], [], [], timeout_s)[0]:
        return 0
    got = 0
    for i in range(out.shape[0]):
        try:
            n, flags, _, _ = sock.recvmsg_into([memoryview(out[i])], 0, socket.MSG_DONTWAIT | socket.MSG_TRUNC)
        except (BlockingIOError, InterruptedError):
            break
        lengths_out[i] = n
        got += 1
    return got


set_backend(os.environ.get(ENV, "auto") or "auto")
