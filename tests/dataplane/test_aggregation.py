"""PAHInA's aggregation service: packets, fixed point, the two-map state machine, and the UDP service
end to end under loss, duplication and reordering."""

import asyncio

import numpy as np
import pytest

from netweave.dataplane import DATA, AggregationState, Faults, Packet, PacketError, decode, run_service
from netweave.dataplane import fixedpoint
from netweave.dataplane.demo import demo
from netweave.errors import NetweaveError


def test_packet_round_trip_and_malformed_datagrams():
    p = Packet(DATA, 3, 17, "fp16", 5, 9, np.array([1, -2, 2 ** 31 - 1], dtype=np.int32))
    q = decode(p.encode())
    assert (q.kind, q.agg_id, q.wor_id, q.precision, q.epoch_id, q.tensor_id) == (DATA, 3, 17, "fp16", 5, 9)
    assert np.array_equal(q.values, p.values)
    raw = p.encode()
    for bad, message in [(raw[:10], "shorter"), (b"XXXX" + raw[4:], "magic"), (raw[:-4], "announced"),
                         (raw[:4] + bytes([9]) + raw[5:], "kind"), (raw[:9] + bytes([7]) + raw[10:], "precision")]:
        with pytest.raises(PacketError, match=message):
            decode(bad)


def test_fixed_point_scales_and_saturation_is_reported():
    v = np.array([0.5, -1.25, 3.0])
    for p in ("fp8", "fp16", "fp32"):
        q, sat = fixedpoint.encode(v, p)
        assert sat == 0 and np.allclose(fixedpoint.decode(q, p), v)
    q, sat = fixedpoint.encode(np.array([1e6, -1e6, 1.0]), "fp32")  # beyond ±32768 at 2^16
    assert sat == 2 and q[0] == fixedpoint.INT32_MAX and q[1] == fixedpoint.INT32_MIN
    total, sat = fixedpoint.saturate(fixedpoint.accumulate(np.array([2 ** 31 - 10], np.int32), np.array([20], np.int32)))
    assert sat == 1 and total[0] == fixedpoint.INT32_MAX


def test_a_sum_saturates_once_so_the_order_of_arrival_does_not_matter():
    """MAX + 1 - 1: saturating after every addition gives MAX - 1 in this order and MAX in
    another; the exact int64 sum saturated at the end is MAX in every order (XDP adds atomically,
    in any order)."""
    parts = [np.array([fixedpoint.INT32_MAX], np.int32), np.array([1], np.int32), np.array([-1], np.int32)]
    for order in ((0, 1, 2), (0, 2, 1), (2, 1, 0)):
        state = AggregationState({1: "fp32", 2: "fp32", 3: "fp32"})
        results = [state.accept(w + 1, 0, 0, "fp32", parts[w], now=0.0) for w in order]
        total, saturated = results[-1]
        assert total[0] == fixedpoint.INT32_MAX and not saturated  # the exact sum fits int32


def test_state_machine_first_packet_seeds_last_packet_frees_duplicates_rejected():
    state = AggregationState({1: "fp8", 2: "fp8", 3: "fp16"}, timeout_s=1.0)
    a, b, c = (np.array([k, 2 * k], np.int32) for k in (1, 10, 100))
    assert state.accept(1, 0, 0, "fp8", a, now=0.0) is None
    assert state.accept(1, 0, 0, "fp8", a, now=0.1) is None and state.counters.duplicates == 1
    total, saturated = state.accept(2, 0, 0, "fp8", b, now=0.2)
    assert np.array_equal(total, a + b) and not saturated
    assert (0, 0, "fp8") not in state.state and (0, 0, "fp8") not in state.data  # both maps freed
    assert state.accept(2, 0, 0, "fp8", b, now=0.3) is None  # a late resend does not restart the task
    assert np.array_equal(state.accept(3, 0, 0, "fp16", c, now=0.3)[0], c)  # precisions never mix
    assert state.accept(3, 0, 1, "fp8", c, now=0.3) is None and state.counters.unknown_workers == 1


def test_timer_names_the_missing_workers_and_rearms():
    state = AggregationState({w: "fp16" for w in (4, 5, 6, 7)}, timeout_s=0.5)
    state.accept(5, 2, 1, "fp16", np.zeros(3, np.int32), now=0.0)
    state.accept(7, 2, 1, "fp16", np.zeros(3, np.int32), now=0.1)
    assert state.expired(0.4) == []
    assert state.expired(0.5) == [((2, 1, "fp16"), [4, 6])]
    assert state.expired(0.6) == [] and state.expired(1.0) == [((2, 1, "fp16"), [4, 6])]


def test_saturating_sums_are_flagged():
    state = AggregationState({1: "fp32", 2: "fp32"})
    big = np.array([2 ** 30 + 2 ** 29], np.int32)
    state.accept(1, 0, 0, "fp32", big, now=0.0)
    total, saturated = state.accept(2, 0, 0, "fp32", big, now=0.0)
    assert saturated and total[0] == fixedpoint.INT32_MAX and state.counters.saturated == 1


@pytest.mark.parametrize("seed", range(3))
def test_service_is_exact_under_loss_duplication_and_reordering(seed):
    r = demo(workers=14, aggregators=3, values=500, faults=Faults(loss=0.15, dup=0.15, reorder=0.3), seed=seed)
    assert r["exact"] and r["leftover_state"] == 0 and r["dropped"] > 0 and r["resent"] > 0
    assert r["result_streams"] > 0 and r["saturated_results"] == 0


def test_malformed_packets_are_counted_and_do_not_disturb_other_tasks():
    from netweave.dataplane.service import _Endpoint

    state = AggregationState({1: "fp8", 2: "fp8"})
    results = []
    endpoint = _Endpoint(lambda p, addr: results.append(state.accept(p.wor_id, p.epoch_id, p.tensor_id, p.precision,
                                                                      p.values, now=0.0)))
    good = [Packet(DATA, 1, w, "fp8", 0, 0, np.full(3, w, np.int32)).encode() for w in (1, 2)]
    endpoint.datagram_received(good[0], None)
    for junk in (b"", b"garbage", good[1][:-2], b"NWAG" + bytes(40)):
        endpoint.datagram_received(junk, None)
    endpoint.datagram_received(good[1], None)
    assert endpoint.malformed == 4 and np.array_equal(results[-1][0], np.full(3, 3))


def test_a_run_that_cannot_finish_fails_in_one_line():
    sent = {1: {(0, 0): np.zeros(2, np.int32)}}
    with pytest.raises(NetweaveError, match="did not complete"):
        asyncio.run(run_service({1: 1}, {1: "fp8"}, sent, Faults(loss=0.99), deadline_s=0.3))
