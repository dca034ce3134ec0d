"""Worker sender and PS collector on loopback, without a switch (no root needed): the PS sums the
workers' DATA itself, exactly as the switch would, drops duplicates, and NACKs a worker whose chunk
is missing until it arrives."""

import socket
import threading

import numpy as np

from netweave.dataplane import fixedpoint
from netweave.dataplane.packet import HEADER, RESULT, decode, encode_chunks
from netweave.testbed.agg.endpoints import Collector, WorkerSender, packet_bytes
from netweave.testbed.agg.xdp import MAX_SLOTS


def udp() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return sock


class LossySender(WorkerSender):
    """A sender whose first send of chunk ``lose`` is lost and whose chunk ``twice`` goes out twice."""

    def __init__(self, *args, lose=None, twice=None):
        super().__init__(*args)
        self.lose, self.twice = lose, twice

    def _transmit(self, buffer, lengths):
        tensors = [decode(buffer[i, :lengths[i]].tobytes()).tensor_id for i in range(len(lengths))]
        rows = [i for i, t in enumerate(tensors) if t != self.lose] + [i for i, t in enumerate(tensors) if t == self.twice]
        if self.lose in tensors:
            self.lose = None
        super()._transmit(np.ascontiguousarray(buffer[rows]), lengths[rows])


def test_a_sender_puts_each_precisions_container_on_the_wire():
    ps = udp()
    for precision, width in (("fp8", 2), ("fp16", 4), ("fp32", 8)):
        sender = WorkerSender(udp(), 1, precision, 1, ps.getsockname())
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
    ps = udp()
    socks = {w: udp() for w in workers}
    faults = {1: {"twice": 1}, 2: {"lose": 2}, 4: {"lose": 0}, 5: {"twice": 2}}
    senders = {w: LossySender(socks[w], w, p, 0, ps.getsockname(), **faults.get(w, {})) for w, p in workers.items()}
    collector = Collector(ps, {0: (None, workers)}, {w: s.getsockname() for w, s in socks.items()})
    for w, sender in senders.items():
        sender.send(0, values[w])
    serving = [threading.Thread(target=s.serve, args=(1.0, 10.0)) for s in senders.values()]
    for t in serving:
        t.start()
    got = collector.collect(0, 3, retry_s=0.1, timeout_s=10)
    for t in serving:
        t.join()
    assert sorted(got) == [(0, "fp16"), (0, "fp32"), (0, "fp8")]
    for (_, precision), (total, saturated) in got.items():
        expect = sum(values[w].astype(np.int64) for w in workers if workers[w] == precision)
        lo, hi = fixedpoint.container_range(precision)
        assert total.dtype == fixedpoint.container_dtype(precision)
        assert np.array_equal(total, np.clip(expect, lo, hi)) and saturated == bool(((expect < lo) | (expect > hi)).any())
        assert saturated == (precision != "fp32")  # int16/int32 sums left their container; int64 ones cannot
        vlo, vhi = fixedpoint.value_range(precision)
        assert total[:2].tolist() == ([hi, lo] if precision != "fp32" else [2 * vhi, 2 * vlo])
    assert senders[2].resent >= 1 and collector.counters["asked"] >= 1 and collector.counters["duplicates"] >= 1


def test_switch_results_and_raw_data_of_several_aggregators_and_a_lost_result_asked_again():
    """Aggregator 1 is a "switch" that answers with RESULTs (the first of tensor 1 lost, sent again
    when the PS NACKs it with wor_id 0); aggregator 0's two workers send DATA to the PS."""
    ps, switch = udp(), udp()
    socks = {3: udp(), 4: udp()}
    collector = Collector(ps, {1: (switch.getsockname(), {1: "fp16", 2: "fp16"}), 0: (None, {3: "fp8", 4: "fp8"})},
                          {3: socks[3].getsockname(), 4: socks[4].getsockname()})
    rng = np.random.default_rng(1)
    result = rng.integers(-2**20, 2**20, size=2 * MAX_SLOTS + 7)
    data = {w: rng.integers(-2**10, 2**10, size=2 * MAX_SLOTS + 7).astype(np.int16) for w in (3, 4)}
    buffer, lengths = encode_chunks(RESULT, 1, 2, "fp16", 5, 0, result, MAX_SLOTS)
    for i in (0, 2):
        switch.sendto(buffer[i, :lengths[i]].tobytes(), ps.getsockname())
    for w in (3, 4):
        WorkerSender(socks[w], w, "fp8", 0, ps.getsockname()).send(5, data[w])

    def switch_agent():  # answers the PS's NACK for tensor 1
        switch.settimeout(5)
        nack = decode(switch.recv(100))
        assert (nack.kind, nack.wor_id, nack.agg_id, nack.epoch_id, nack.tensor_id) == (3, 0, 1, 5, 1)
        switch.sendto(buffer[1, :lengths[1]].tobytes(), ps.getsockname())

    agent = threading.Thread(target=switch_agent)
    agent.start()
    got = collector.collect(5, 3, retry_s=0.2, timeout_s=10)
    agent.join()
    assert np.array_equal(got[1, "fp16"][0][:result.size], result) and not got[1, "fp16"][1]
    assert np.array_equal(got[0, "fp8"][0][:result.size], data[3].astype(np.int64) + data[4])
    assert collector.counters["results"] == 3 and collector.counters["raw"] == 6 and collector.counters["asked"] >= 1
    assert collector.counters["bytes"] == lengths.sum() + 2 * packet_bytes("fp8", result.size)
