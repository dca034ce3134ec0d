"""Worker sender and PS collector on loopback, without a switch (no root needed): the PS sums the
workers' DATA itself, exactly as the switch would, drops duplicates, and NACKs a worker whose chunk
is missing until it arrives."""

import socket
import threading

import numpy as np

from netweave.dataplane import fixedpoint
from netweave.dataplane.packet import decode
from netweave.dataplane.packet import HEADER
from netweave.testbed.endpoints import Collector, WorkerSender, chunks, packet_bytes
from netweave.testbed.xdp import MAX_SLOTS


class LossyUDP(socket.socket):
    """A UDP socket that loses the first send of chunk ``lose`` and sends chunk ``twice`` twice."""

    def __init__(self, lose=None, twice=None):
        super().__init__(socket.AF_INET, socket.SOCK_DGRAM)
        self.bind(("127.0.0.1", 0))
        self.lose, self.twice = lose, twice

    def sendto(self, data, address):
        tensor = decode(data).tensor_id
        if tensor == self.lose:
            self.lose = None
            return len(data)
        if tensor == self.twice:
            super().sendto(data, address)
        return super().sendto(data, address)


def test_chunks_cover_the_tensor_in_packets_of_max_slots():
    v = np.arange(2 * MAX_SLOTS + 3, dtype=np.int64)
    parts = chunks(v)
    assert [p.size for p in parts] == [MAX_SLOTS, MAX_SLOTS, 3] and np.array_equal(np.concatenate(parts), v)


def test_a_sender_puts_each_precisions_container_on_the_wire():
    ps = LossyUDP()
    for precision, width in (("fp8", 2), ("fp16", 4), ("fp32", 8)):
        sender = WorkerSender(LossyUDP(), 1, precision, 1, ps.getsockname())
        lo, hi = fixedpoint.container_range(precision)
        v = np.concatenate([[lo, hi, -1], np.arange(MAX_SLOTS + 2)]).astype(fixedpoint.container_dtype(precision))
        assert sender.send(0, v) == 2
        got = [ps.recv(65536) for _ in range(2)]
        assert [len(d) for d in got] == [HEADER.size + MAX_SLOTS * width, HEADER.size + 5 * width]  # 22 + 512 for fp8
        assert sum(len(d) for d in got) == packet_bytes(precision, v.size)
        assert np.array_equal(np.concatenate([decode(d).values for d in got]), v)
    assert packet_bytes("fp8", 0) == HEADER.size and packet_bytes("fp32", 2 * MAX_SLOTS) == 2 * (HEADER.size + 2048)


def test_the_ps_sums_raw_data_exactly_drops_duplicates_and_recovers_a_lost_chunk():
    workers = {1: "fp16", 2: "fp16", 3: "fp8", 4: "fp8", 5: "fp32", 6: "fp32"}
    rng = np.random.default_rng(0)
    values = {}
    for w, p in workers.items():  # sums that saturate, at the bounds and beyond, and sums that do not
        lo, hi = fixedpoint.value_range(p)
        values[w] = rng.integers(lo // 2 - lo // 4, hi // 2 + hi // 4, size=3 * MAX_SLOTS, endpoint=True)
        values[w][:2] = [hi, lo]
        values[w] = values[w].astype(fixedpoint.container_dtype(p))
    ps = LossyUDP()
    socks = {1: LossyUDP(twice=1), 2: LossyUDP(lose=2), 3: LossyUDP(), 4: LossyUDP(lose=0), 5: LossyUDP(twice=2),
             6: LossyUDP()}
    senders = {w: WorkerSender(socks[w], w, p, 1, ps.getsockname()) for w, p in workers.items()}
    collector = Collector(ps, workers, {w: s.getsockname() for w, s in socks.items()})
    for w, sender in senders.items():
        sender.send(0, values[w])
    serving = [threading.Thread(target=s.serve, args=(1.0, 10.0)) for s in senders.values()]
    for t in serving:
        t.start()
    got = collector.collect([(0, t, p) for t in range(3) for p in ("fp8", "fp16", "fp32")], retry_s=0.1, timeout_s=10)
    for t in serving:
        t.join()
    for (_, tensor, precision), (total, saturated) in got.items():
        part = slice(MAX_SLOTS * tensor, MAX_SLOTS * (tensor + 1))
        expect = sum(values[w][part].astype(np.int64) for w in workers if workers[w] == precision)
        lo, hi = fixedpoint.container_range(precision)
        assert total.dtype == fixedpoint.container_dtype(precision)
        assert np.array_equal(total, np.clip(expect, lo, hi)) and saturated == bool(((expect < lo) | (expect > hi)).any())
        assert saturated == (precision != "fp32")  # int16/int32 sums left their container; int64 ones cannot
        if tensor == 0:
            vlo, vhi = fixedpoint.value_range(precision)
            assert total[:2].tolist() == ([hi, lo] if precision != "fp32" else [2 * vhi, 2 * vlo])
    assert senders[2].resent >= 1 and collector.counters["asked"] >= 1 and collector.counters["duplicates"] >= 1
