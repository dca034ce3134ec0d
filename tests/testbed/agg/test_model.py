"""The testbed's step model (agg/model.py) against frames counted by hand on a star: every number
below is written out from the packet formats, not taken from the code under test."""

import pytest

from netweave.testbed.agg.model import predict_step_s, stream_loads, stream_rates
from netweave.testbed.agg.plan import plan_training
from netweave.testbed.net.cluster import plan_cluster
from netweave.topology import load_topology_spec

SIZE, SCALE, GBPS = 100_000, 0.01, 10
RATE = GBPS * 1e9 * SCALE  # bits/s of every shaped link
TOPO = load_topology_spec(f"star:n=5,gbps={GBPS}")  # H0 is the PS, H1..H4 the workers, S0 aggregates
PER_PACKET = 22 + 8 + 20 + 14  # netweave's header, UDP, IPv4, Ethernet


def _plan(precisions, scheme):
    plan = plan_training(TOPO, precisions, scheme, scale=SCALE)
    return plan, plan_cluster(TOPO, scale=SCALE, routes=plan.routes or None, prefix="nwtx")


def test_stream_sends_each_value_once_up_and_once_down_at_its_width():
    plan, cluster = _plan(["fp16"] * 4, "pahina")
    frames = 2 * SIZE + PER_PACKET * -(-SIZE // 1024)  # 1,024 fp16 values a packet, 2 bytes each
    loads = stream_loads(plan, cluster, SIZE)
    assert {k: v for k, v in loads.items()} == {**{(f"H{i}", "S0"): frames for i in range(1, 5)},
                                                 **{("S0", f"H{i}"): frames for i in range(1, 5)}}
    p = predict_step_s(plan, cluster, SIZE, SCALE, "stream", compute_s=0.003)
    assert p["network_s"] == pytest.approx(frames * 8 / RATE)
    assert p["step_s"] == pytest.approx(0.003 + frames * 8 / RATE / 0.9)  # the senders keep to 90 % of it


def test_a_streaming_step_sends_from_its_first_bucket_unless_the_compute_is_longer():
    plan, cluster = _plan(["fp16"] * 4, "pahina")
    transfer = (2 * SIZE + PER_PACKET * -(-SIZE // 1024)) * 8 / RATE / 0.9  # 18.1 ms
    overlapped = predict_step_s(plan, cluster, SIZE, SCALE, "stream", compute_s=0.003, first_s=0.001, update_s=0.002)
    assert overlapped["step_s"] == pytest.approx(0.001 + transfer + 0.002)
    compute_bound = predict_step_s(plan, cluster, SIZE, SCALE, "stream", compute_s=0.050, first_s=0.001)
    assert compute_bound["step_s"] == pytest.approx(0.050)


def test_stream_rates_finish_every_worker_together_within_every_links_rate():
    """Two fp8 and two fp16 workers on a star: the busiest links are the down links, which carry
    both streams' sums (fp8 + fp16 frames); each worker sends its own stream's frames in that time."""
    plan, cluster = _plan(["fp8", "fp8", "fp16", "fp16"], "pahina")
    fp8 = SIZE + PER_PACKET * -(-SIZE // 2048)
    fp16 = 2 * SIZE + PER_PACKET * -(-SIZE // 1024)
    network, rates = stream_rates(plan, cluster, SIZE, SCALE)
    assert network == pytest.approx((fp8 + fp16) * 8 / RATE)
    assert rates == pytest.approx({1: 0.9 * fp8 * 8 / network, 2: 0.9 * fp8 * 8 / network,
                                   3: 0.9 * fp16 * 8 / network, 4: 0.9 * fp16 * 8 / network})
    assert max(rates.values()) < RATE  # an up link is never the limit here


def test_two_precisions_come_down_as_two_streams():
    plan, cluster = _plan(["fp8", "fp8", "fp16", "fp16"], "pahina")
    fp8 = SIZE + PER_PACKET * -(-SIZE // 2048)
    fp16 = 2 * SIZE + PER_PACKET * -(-SIZE // 1024)
    loads = stream_loads(plan, cluster, SIZE)
    assert loads["H1", "S0"] == fp8 and loads["H3", "S0"] == fp16
    assert all(loads["S0", f"H{i}"] == fp8 + fp16 for i in range(1, 5))


def test_ring_is_gloos_two_n_minus_one_over_n_in_tcp_segments():
    plan, cluster = _plan(["fp32"] * 4, "ring")
    payload = 2 * 3 / 4 * 4 * SIZE  # Patarasuk and Yuan: every rank sends 2 (N − 1) / N · S
    segment = 3000 - 20 - 32  # MTU less IPv4 and TCP (with timestamps)
    frames = payload * (1 + (14 + 20 + 32) / segment)
    p = predict_step_s(plan, cluster, SIZE, SCALE, "stream", compute_s=0.0)
    assert p["network_s"] == pytest.approx(frames * 8 / RATE)


def test_the_papers_ps_path_adds_the_two_phases():
    plan, cluster = _plan(["fp16"] * 4, "pahina")
    up = 4 * SIZE + PER_PACKET * -(-SIZE // 256)  # fp16 in int32 containers, 256 values a packet
    floats = (3000 - 20 - 8 - 20) // 4  # a parameter datagram: MTU less IPv4, UDP and its 20-byte header
    down = 4 * SIZE + (20 + 8 + 20 + 14) * -(-SIZE // floats)  # fp32 parameters, multicast
    p = predict_step_s(plan, cluster, SIZE, SCALE, "ps", compute_s=0.0)
    assert p["network_s"] == pytest.approx((up + down) * 8 / RATE)
    assert p["busiest_link"] == "H1->S0 then S0->H1"
    stream = predict_step_s(plan, cluster, SIZE, SCALE, "stream", compute_s=0.0)
    assert stream["network_s"] < p["network_s"] / 3  # half the bytes each way, both ways at once
