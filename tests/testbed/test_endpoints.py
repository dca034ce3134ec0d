"""Worker sender and PS collector on loopback, without a switch (no root needed): the PS sums the
workers' DATA itself, exactly as the switch would, drops duplicates, and NACKs a worker whose chunk
is missing until it arrives."""

import socket
import threading

import numpy as np

from netweave.dataplane import fixedpoint
from netweave.dataplane.packet import decode
from netweave.testbed.endpoints import Collector, WorkerSender, chunks
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
    v = np.arange(2 * MAX_SLOTS + 3, dtype=np.int32)
    parts = chunks(v)
    assert [p.size for p in parts] == [MAX_SLOTS, MAX_SLOTS, 3] and np.array_equal(np.concatenate(parts), v)


def test_the_ps_sums_raw_data_exactly_drops_duplicates_and_recovers_a_lost_chunk():
    workers = {1: "fp16", 2: "fp16", 3: "fp8"}
    rng = np.random.default_rng(0)
    values = {w: rng.integers(-2 ** 30, 2 ** 30, size=3 * MAX_SLOTS, dtype=np.int32) for w in workers}
    ps = LossyUDP()
    socks = {1: LossyUDP(twice=1), 2: LossyUDP(lose=2), 3: LossyUDP()}
    senders = {w: WorkerSender(socks[w], w, p, 1, ps.getsockname()) for w, p in workers.items()}
    collector = Collector(ps, workers, {w: s.getsockname() for w, s in socks.items()})
    for w, sender in senders.items():
        sender.send(0, values[w])
    serving = [threading.Thread(target=s.serve, args=(1.0, 10.0)) for s in senders.values()]
    for t in serving:
        t.start()
    got = collector.collect([(0, t, p) for t in range(3) for p in ("fp8", "fp16")], retry_s=0.1, timeout_s=10)
    for t in serving:
        t.join()
    for (_, tensor, precision), (total, saturated) in got.items():
        part = slice(MAX_SLOTS * tensor, MAX_SLOTS * (tensor + 1))
        expect = sum(values[w][part].astype(np.int64) for w in workers if workers[w] == precision)
        clipped, n = fixedpoint.saturate(expect)
        assert np.array_equal(total, clipped) and saturated == (n > 0)
    assert senders[2].resent >= 1 and collector.counters["asked"] >= 1 and collector.counters["duplicates"] >= 1
