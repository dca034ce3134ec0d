"""Batched datagram I/O (sendmmsg/recvmmsg through ctypes, and its pure-Python fallback): round
trips on loopback, a sender that waits instead of dropping when the receiver is full, timeouts,
truncation and errors, the same for both backends. No root needed."""

import errno
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.testbed.net import batchio
from netweave.testbed.net.native import c_compiler

BACKENDS = ["native", "python"] if c_compiler() else ["python"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    before = batchio.BACKEND
    assert batchio.set_backend(request.param) == request.param
    yield request.param
    batchio.set_backend(before)


def udp_pair(rcvbuf: int | None = 8 << 20):
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    if rcvbuf:
        batchio.set_receive_buffer(rx, rcvbuf)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return tx, rx


def numbered(k: int, stride: int, lengths: np.ndarray, seed: int = 0) -> np.ndarray:
    """Rows of random bytes whose first 4 bytes are the row number (where the row is long enough)."""
    buf = np.random.default_rng(seed).integers(0, 256, (k, stride), dtype=np.uint8)
    buf[:, :4] = np.arange(k, dtype="<u4").view(np.uint8).reshape(k, 4)
    return buf


def test_round_trip_with_varied_lengths(backend):
    tx, rx = udp_pair()
    with tx, rx:
        fits = rx.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 4096  # what the receive buffer holds for sure
        k = max(16, min(1500, fits))
        rng = np.random.default_rng(1)
        lengths = rng.integers(4, 1473, k)
        lengths[:3] = [4, 1472, 0]  # the extremes, an empty datagram included
        buf = numbered(k, 1472, lengths)
        assert batchio.send_batch(tx, buf, lengths, rx.getsockname()) == k
        out = np.zeros((k + 10, 1500), np.uint8)
        got_lengths = np.full(k + 10, -1, np.int64)
        got = 0
        while got < k:
            n = batchio.recv_batch(rx, out[got:], got_lengths[got:], timeout_s=2.0)
            assert n > 0, f"only {got} of {k} datagrams arrived"
            got += n
        assert got == k
        assert np.array_equal(got_lengths[:k], lengths)
        assert (got_lengths[k:] == -1).all()  # nothing written past what arrived
        for i in range(k):
            assert np.array_equal(out[i, :lengths[i]], buf[i, :lengths[i]]), i


def test_a_full_receiver_makes_the_sender_wait_not_drop(backend):
    """AF_UNIX datagrams have flow control (the receiver's queue holds ~10), so k far beyond it
    must all arrive, in order, while a thread drains; on UDP loopback the kernel drops what the
    receiver's buffer cannot hold, which no sender can prevent (see the next test)."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 10)
    k, stride = 4000, 1024
    lengths = np.random.default_rng(2).integers(4, stride + 1, k)
    buf = numbered(k, stride, lengths, seed=3)
    out = np.zeros((k, stride), np.uint8)
    got_lengths = np.zeros(k, np.uint32)
    got = [0]

    def drain():
        while got[0] < k:
            n = batchio.recv_batch(b, out[got[0]:], got_lengths[got[0]:], timeout_s=5.0)
            if n == 0:
                return
            got[0] += n

    with a, b:
        t = threading.Thread(target=drain)
        t.start()
        sent = batchio.send_batch(a, buf, lengths)  # connected: no address
        t.join(timeout=60)
    assert sent == k and got[0] == k
    assert np.array_equal(got_lengths, lengths)
    assert np.array_equal(out[:, :4].copy().view("<u4").ravel(), np.arange(k))  # in order
    assert all(np.array_equal(out[i, :lengths[i]], buf[i, :lengths[i]]) for i in range(k))


def test_udp_beyond_the_receive_buffer_sends_everything_and_what_arrives_is_intact(backend):
    tx, rx = udp_pair(rcvbuf=None)  # the default buffer: a few hundred KB
    k, stride = 20000, 1024
    lengths = np.full(k, stride)
    buf = numbered(k, stride, lengths, seed=4)
    out = np.zeros((k, stride + 8), np.uint8)
    got_lengths = np.zeros(k, np.int64)
    got = [0]

    def drain():
        while got[0] < k:
            n = batchio.recv_batch(rx, out[got[0]:], got_lengths[got[0]:], timeout_s=0.5)
            if n == 0:
                return
            got[0] += n

    with tx, rx:
        assert k * stride > rx.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        t = threading.Thread(target=drain)
        t.start()
        assert batchio.send_batch(tx, buf, lengths, rx.getsockname()) == k
        t.join(timeout=60)
    n = got[0]
    assert n > 0 and (got_lengths[:n] == stride).all()
    seq = out[:n, :4].copy().view("<u4").ravel().astype(np.int64)
    assert (np.diff(seq) > 0).all()  # loopback keeps the order; losses only leave gaps
    assert np.array_equal(out[:n, :stride], buf[seq])


def test_recv_timeout_returns_zero_after_about_the_timeout(backend):
    tx, rx = udp_pair(rcvbuf=None)
    out, lengths = np.zeros((8, 64), np.uint8), np.zeros(8, np.uint32)
    with tx, rx:
        for timeout in (0.1, 0.3):
            t0 = time.monotonic()
            assert batchio.recv_batch(rx, out, lengths, timeout_s=timeout) == 0
            elapsed = time.monotonic() - t0
            assert timeout * 0.9 <= elapsed <= timeout * 4, (timeout, elapsed)
        assert batchio.recv_batch(rx, out, lengths, timeout_s=0) == 0


def test_recv_takes_what_is_queued_and_returns_without_waiting_for_more(backend):
    tx, rx = udp_pair()
    with tx, rx:
        buf = numbered(5, 100, np.full(5, 100))
        batchio.send_batch(tx, buf, np.full(5, 100), rx.getsockname())
        time.sleep(0.05)
        out, lengths = np.zeros((50, 100), np.uint8), np.zeros(50, np.uint32)
        t0 = time.monotonic()
        assert batchio.recv_batch(rx, out, lengths, timeout_s=5.0) == 5  # not 50, and not after 5 s
        assert time.monotonic() - t0 < 2.5
        assert np.array_equal(out[:5], buf)


def test_a_datagram_longer_than_the_stride_is_cut_and_reports_its_length(backend):
    tx, rx = udp_pair()
    with tx, rx:
        buf = numbered(3, 500, np.full(3, 500))
        batchio.send_batch(tx, buf, [500, 100, 300], rx.getsockname())
        out, lengths = np.zeros((3, 200), np.uint8), np.zeros(3, np.int32)
        got = 0
        while got < 3:
            n = batchio.recv_batch(rx, out[got:], lengths[got:], timeout_s=2.0)
            assert n
            got += n
        assert lengths.tolist() == [500, 100, 300]
        assert np.array_equal(out[0], buf[0, :200]) and np.array_equal(out[1, :100], buf[1, :100])


def test_errors(backend):
    tx, rx = udp_pair(rcvbuf=None)
    with tx, rx:
        big = np.zeros((2, 70000), np.uint8)
        with pytest.raises(OSError) as e:
            batchio.send_batch(tx, big, [70000, 70000], rx.getsockname())  # over UDP's 65507
        assert e.value.errno == errno.EMSGSIZE
        with pytest.raises(NetweaveError):
            batchio.send_batch(tx, np.zeros((2, 10), np.uint8), [11, 1], rx.getsockname())
        with pytest.raises(NetweaveError):
            batchio.send_batch(tx, np.zeros((2, 10), np.int32), [1, 1], rx.getsockname())
        with pytest.raises(NetweaveError):
            batchio.recv_batch(rx, np.zeros((4, 10), np.uint8), np.zeros(3, np.uint32), 0.0)
        assert batchio.send_batch(tx, np.zeros((0, 10), np.uint8), [], rx.getsockname()) == 0


def test_both_backends_give_the_same_datagrams():
    if len(BACKENDS) < 2:
        pytest.skip("no C compiler: only the Python backend")
    before = batchio.BACKEND
    results = {}
    try:
        for name in BACKENDS:
            batchio.set_backend(name)
            tx, rx = udp_pair()
            with tx, rx:
                lengths = np.random.default_rng(5).integers(0, 1400, 64)
                buf = numbered(64, 1400, lengths, seed=6)
                batchio.send_batch(tx, buf, lengths, rx.getsockname())
                out, got_lengths = np.zeros((64, 1400), np.uint8), np.zeros(64, np.uint32)
                got = 0
                while got < 64:
                    n = batchio.recv_batch(rx, out[got:], got_lengths[got:], 2.0)
                    assert n
                    got += n
                mask = np.arange(1400) < got_lengths[:, None]
                results[name] = (got_lengths.copy(), np.where(mask, out, 0))
    finally:
        batchio.set_backend(before)
    (la, oa), (lb, ob) = results.values()
    assert np.array_equal(la, lb) and np.array_equal(oa, ob)


def _backend_in_subprocess(env: dict) -> str:
    code = "from netweave.testbed.net import batchio; print(batchio.BACKEND, '|', batchio.FALLBACK_REASON)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_environment_forces_the_fallback_and_no_compiler_falls_back(tmp_path):
    env = {**os.environ, "NETWEAVE_BATCHIO": "python"}
    assert _backend_in_subprocess(env).startswith("python")
    bare = {k: v for k, v in os.environ.items() if k != "CC"}
    bare.update(PATH=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))  # no compiler, empty cache
    out = _backend_in_subprocess(bare)
    assert out.startswith("python") and "C compiler" in out
    assert not (tmp_path / "cache" / "netweave" / "native").exists() or \
        not list((tmp_path / "cache" / "netweave" / "native").glob("*.so"))


def test_an_unusable_cache_falls_back_instead_of_failing(tmp_path):
    if not c_compiler():
        pytest.skip("no C compiler: the fallback is the only path anyway")
    (tmp_path / "file").write_text("")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "file" / "cache")}  # below a file: cannot be made
    out = _backend_in_subprocess(env)
    assert out.startswith("python |") and len(out) > len("python |")


def test_a_paced_send_keeps_to_its_rate(backend):
    """200 datagrams of 1,000 B at 8 Mb/s take 0.2 s (not less: the pacing; the bound is relative
    to the rate set), all arrive intact and in order."""
    tx, rx = udp_pair()
    lengths = np.full(200, 1000)
    rows = numbered(200, 1000, lengths)
    t0 = time.monotonic()
    assert batchio.send_paced(tx, rows, lengths, rx.getsockname(), rate_bps=8e6, burst=10) == 200
    took = time.monotonic() - t0
    assert took >= 0.95 * 200 * 1000 * 8 / 8e6
    out, got_lengths = np.zeros((256, 1000), np.uint8), np.zeros(256, np.int64)
    got = batchio.recv_batch(rx, out, got_lengths, 1.0)
    assert got == 200 and np.array_equal(out[:200], rows)
