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
    assert np.array_equal(q.values, p.values) and q.values.dtype == np.int64
    raw = p.encode()
    for bad, message in [(raw[:10], "shorter"), (b"XXXX" + raw[4:], "magic"), (raw[:-4], "announced"),
                         (raw[:-2], "announced"), (raw[:4] + bytes([9]) + raw[5:], "kind"),
                         (raw[:9] + bytes([7]) + raw[10:], "precision"),
                         (raw[:9] + bytes([1]) + raw[10:], "announced"),  # the same bytes read as fp8 (int16)
                         (raw[:9] + bytes([3]) + raw[10:], "announced")]:  # or as fp32 (int64)
        with pytest.raises(PacketError, match=message):
            decode(bad)


def test_the_container_table_is_twice_each_floats_width():
    assert fixedpoint.CONTAINER_BITS == {"fp8": 16, "fp16": 32, "fp32": 64}
    assert [fixedpoint.value_bytes(p) for p in ("fp8", "fp16", "fp32")] == [2, 4, 8]  # PAHInA's 1 : 2 : 4
    assert [fixedpoint.container_dtype(p) for p in ("fp8", "fp16", "fp32")] == [np.int16, np.int32, np.int64]
    assert fixedpoint.value_range("fp32") == (-2 ** 56, 2 ** 56 - 1)  # 64 of them cannot wrap int64
    assert fixedpoint.MAX_WORKERS * 2 ** 56 < 2 ** 63


@pytest.mark.parametrize("precision, beyond, bounds", [
    ("fp8", 1e4, (-2 ** 15, 2 ** 15 - 1)),  # beyond ±2048 at 2^4: int16
    ("fp16", 1e7, (-2 ** 31, 2 ** 31 - 1)),  # beyond ±2^21 at 2^10: int32
    ("fp32", 1e13, (-2 ** 56, 2 ** 56 - 1)),  # beyond ±2^40 at 2^16: the int57 value limit
])
def test_fixed_point_scales_and_saturation_is_reported(precision, beyond, bounds):
    v = np.array([0.5, -1.25, 3.0])
    q, sat = fixedpoint.encode(v, precision)
    assert sat == 0 and q.dtype == fixedpoint.container_dtype(precision) and np.allclose(fixedpoint.decode(q, precision), v)
    q, sat = fixedpoint.encode(np.array([beyond, -beyond, 1.0]), precision)
    assert sat == 2 and (q[0], q[1]) == (bounds[1], bounds[0]) and q.dtype == fixedpoint.container_dtype(precision)
    q, sat = fixedpoint.encode(np.array([beyond / 1e3]), precision)
    assert sat == 0


@pytest.mark.parametrize("precision", ["fp8", "fp16", "fp32"])
def test_a_complete_sum_saturates_to_its_container_exactly_at_the_bounds(precision):
    lo, hi = fixedpoint.container_range(precision)
    total = np.array([hi, hi + 1, lo, lo - 1, -1, 0], np.int64) if precision != "fp32" else np.array([hi, lo, -1, 0])
    clipped, sat = fixedpoint.saturate(total, precision)
    assert clipped.dtype == fixedpoint.container_dtype(precision)
    if precision == "fp32":  # an int64 sum is its own result
        assert sat == 0 and clipped.tolist() == total.tolist()
    else:
        assert sat == 2 and clipped.tolist() == [hi, hi, lo, lo, -1, 0]


def test_a_sum_saturates_once_so_the_order_of_arrival_does_not_matter():
    """MAX + 1 - 1: saturating after every addition gives MAX - 1 in this order and MAX in
    another; the exact int64 sum saturated at the end is MAX in every order (XDP adds atomically,
    in any order)."""
    for precision in ("fp8", "fp16"):
        hi = fixedpoint.container_range(precision)[1]
        parts = [np.array([hi]), np.array([1]), np.array([-1])]
        for order in ((0, 1, 2), (0, 2, 1), (2, 1, 0)):
            state = AggregationState({1: precision, 2: precision, 3: precision})
            results = [state.accept(w + 1, 0, 0, precision, parts[w], now=0.0) for w in order]
            total, saturated = results[-1]
            assert total[0] == hi and not saturated  # the exact sum fits the container


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


@pytest.mark.parametrize("precision, big", [("fp8", 2 ** 14 + 2 ** 13), ("fp16", 2 ** 30 + 2 ** 29)])
def test_saturating_sums_are_flagged(precision, big):
    state = AggregationState({1: precision, 2: precision})
    state.accept(1, 0, 0, precision, np.array([big, -big, 5]), now=0.0)
    total, saturated = state.accept(2, 0, 0, precision, np.array([big, -big, -7]), now=0.0)
    lo, hi = fixedpoint.container_range(precision)
    assert saturated and total.tolist() == [hi, lo, -2] and state.counters.saturated == 2


def test_fp32_sums_of_64_extreme_values_neither_wrap_nor_saturate():
    workers = {w: "fp32" for w in range(1, fixedpoint.MAX_WORKERS + 1)}
    state = AggregationState(workers)
    lo, hi = fixedpoint.value_range("fp32")
    for w in workers:
        done = state.accept(w, 0, 0, "fp32", np.array([hi, lo]), now=0.0)
    total, saturated = done
    assert not saturated and total.tolist() == [64 * hi, 64 * lo]


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
