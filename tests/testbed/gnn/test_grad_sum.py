"""The parameter gradients' sum through the switch agent (GRAD → GRADSUM, streamed in chunks):
the same bits as one float64 sum of the whole vectors rounded once, each chunk's sum down as soon
as every worker's chunk came, and malformed chunks refused. No root: loopback TCP."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from netweave.testbed.gnn.switch import Switch, SwitchConfig, _serve
from netweave.testbed.gnn.wire import BYE, GRAD, GRADSUM, HELLO, Conn, Message, ProtocolError, pump
from netweave.testbed.gnn.worker import grad_sum


class _Recorder:
    """A connection that keeps what the agent queues."""

    def __init__(self):
        self.queued = []

    def queue(self, kind, *arrays, **fields):
        self.queued.append((kind, [np.array(a) for a in arrays], fields))


def _grad(sender: int, values: np.ndarray, offset: int, total: int, seq: int = 1) -> Message:
    v = np.ascontiguousarray(values, np.float32)
    return Message(GRAD, 0, 0, 0, sender, v.size, total, offset, seq, v.tobytes())


def _gradients(workers: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [(rng.standard_normal(n) * 10.0 ** rng.integers(-6, 3, n)).astype(np.float32) for _ in range(workers)]


def test_a_chunk_comes_down_as_soon_as_every_worker_sent_it():
    workers, n, chunk = 3, 20_000, 8192
    grads = _gradients(workers, n)
    switch = Switch([], 0, workers)
    switch.conns = {w: _Recorder() for w in range(workers)}
    for w in range(workers):  # chunk 0 only
        switch.on_message(None, _grad(w, grads[w][:chunk], 0, n))
    first = switch.conns[0].queued
    assert [(k, f["offset"], f["count"]) for k, _, f in first] == [(GRADSUM, 0, chunk)]
    for at in range(chunk, n, chunk):
        for w in reversed(range(workers)):
            switch.on_message(None, _grad(w, grads[w][at:at + chunk], at, n))
    for w in range(workers):
        got = switch.conns[w].queued
        assert [f["offset"] for _, _, f in got] == [0, 8192, 16384] and all(f["dim"] == n for _, _, f in got)
        whole = np.concatenate([a[0] for _, a, _ in got])
        # the reference: one float64 sum of the whole vectors, rounded once
        np.testing.assert_array_equal(whole, np.sum(np.stack(grads).astype(np.float64), axis=0).astype(np.float32))
    assert switch.counters["grad_steps"] == 1 and not switch._grads


@pytest.mark.parametrize("bad", ["other size", "twice", "past the end", "unknown worker"])
def test_a_chunk_that_does_not_fit_is_refused(bad):
    switch = Switch([], 0, 2)
    switch.conns = {w: _Recorder() for w in range(2)}
    switch.on_message(None, _grad(0, np.ones(4), 0, 8))
    message = {"other size": _grad(1, np.ones(3), 0, 8), "twice": _grad(0, np.ones(4), 0, 8),
               "past the end": _grad(1, np.ones(4), 6, 8), "unknown worker": _grad(5, np.ones(4), 0, 8)}[bad]
    with pytest.raises(ProtocolError):
        switch.on_message(None, message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("chunk", [0, 1000, 8192])
def test_workers_get_the_sum_through_the_agent(chunk, capsys):
    """The agent (``_serve``) and three workers' ``grad_sum`` over loopback TCP, two steps: every
    worker gets the bits of the whole vectors' float64 sum, whether in one message or in chunks."""
    workers, n = 3, 10_001
    port = _free_port()
    config = SwitchConfig(address="127.0.0.1", port=port, workers=workers, memory_bytes=0, timeout_s=20)
    agent = {}
    server = threading.Thread(target=lambda: agent.update(_serve(config, [])), daemon=True)
    server.start()
    steps = [_gradients(workers, n), [g * 3 for g in _gradients(workers, n)]]
    got: dict[tuple[int, int], np.ndarray] = {}
    errors = []

    def worker(rank):
        try:
            for _ in range(100):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    break
                except ConnectionRefusedError:
                    threading.Event().wait(0.05)
            c = Conn(sock, -1)
            c.queue(HELLO, sender=rank)
            for seq, grads in enumerate(steps, 1):
                got[rank, seq] = grad_sum(c, rank, grads[rank], seq, 20, chunk=chunk)
            c.queue(BYE, sender=rank)
            pump([c], lambda: True, lambda c, m: None, 20, "the BYE")
            pump([c], lambda: c.closed, lambda c, m: None, 20, "the agent's close")
            sock.close()
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(r,), daemon=True) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads + [server]:
        t.join(60)
    assert not errors and not server.is_alive()
    for seq, grads in enumerate(steps, 1):
        want = np.sum(np.stack(grads).astype(np.float64), axis=0).astype(np.float32)
        for r in range(workers):
            np.testing.assert_array_equal(got[r, seq], want)
    assert agent["grad_steps"] == 2
