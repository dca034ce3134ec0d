"""Streaming aggregation (issue 31): the block floating point of the paper's widths, the packets,
the XDP lanes' arithmetic, and — as root — every complete sum through the XDP data plane and the
userspace one, bit for bit equal to numpy's aggregation of the same values at the same exponents,
also under 5 % loss, 5 % duplication and 10 % reordering on every link."""

import shutil

import numpy as np
import pytest

from netweave.testbed.agg import blockfp
from netweave.testbed.agg import streampacket as sp
from netweave.testbed.net import netns


@pytest.mark.parametrize("precision", ["fp8", "fp16", "fp32"])
def test_sums_of_n_workers_fit_the_width_and_decode_to_the_sum(precision):
    rng = np.random.default_rng(1)
    n = 6
    g = [rng.standard_normal(3000).astype(np.float32) for _ in range(n)]
    e = blockfp.exponents_for(np.max(np.abs(g), axis=0), precision, n)
    qs = [blockfp.quantize(x, precision, n, e) for x in g]
    assert not any(q[2].any() for q in qs)  # the exponents cover every value
    u = np.stack([q[0] for q in qs])
    total = np.stack([blockfp.aggregate(u[:, c], precision) for c in range(u.shape[1])])
    assert total.dtype == blockfp.WIRE[precision]  # the sum is as wide as each worker's values
    q = u.astype(np.int64) - blockfp.BIAS[precision]
    assert np.array_equal(total.astype(np.int64) - blockfp.BIAS[precision], q.sum(axis=0))  # exact integers
    step = np.ldexp(1.0, e.astype(np.int64))[:, None]
    err = np.abs(blockfp.decode(total, precision, e).reshape(-1)[:3000] - np.sum(g, axis=0, dtype=np.float64))
    bound = np.broadcast_to(n * step / 2, total.shape).reshape(-1)[:3000]
    assert (err <= bound * 1.0000001 + 1e-12).all()  # half a step per worker, at most


def test_a_value_beyond_the_exponent_clips_and_says_so():
    g = np.array([0.5, 100.0, -0.25], np.float32)
    e = blockfp.exponents_for(np.array([1.0]), "fp8", 2)
    u, want, clipped = blockfp.quantize(g, "fp8", 2, e)
    assert clipped[0] and want[0] > e[0]
    assert (np.abs(u[0, :3].astype(np.int64) - 128) <= blockfp.q_limit("fp8", 2)).all()
    assert blockfp.quantize(g, "fp8", 2, want)[2][0] == False  # noqa: E712 (the second round's exponent fits)


def test_lanes_add_like_the_xdp_program():
    """bpf/stream_agg.bpf.c adds 8 payload bytes as two masked u64 words (lanes twice the width)
    and takes the sum out as (lane - (k - 1) × bias) packed back: the same numbers as numpy's sum."""
    rng = np.random.default_rng(2)
    for precision, (mask, rep, shift) in {"fp8": (0x00FF00FF00FF00FF, 0x0001000100010001, 8),
                                          "fp16": (0x0000FFFF0000FFFF, 0x0000000100000001, 16),
                                          "fp32": (0xFFFFFFFF, 1, 32)}.items():
        k, q = 5, blockfp.q_limit(precision, 5)
        u = (rng.integers(-q, q + 1, (k, blockfp.values_per_packet(precision))) + blockfp.BIAS[precision]).astype(
            blockfp.WIRE[precision])
        words = u.view(np.uint64)
        lane0 = (words & np.uint64(mask)).sum(axis=0, dtype=np.uint64)
        lane1 = ((words >> np.uint64(shift)) & np.uint64(mask)).sum(axis=0, dtype=np.uint64)
        c = np.uint64((k - 1) * blockfp.BIAS[precision] * rep)
        out = (lane0 - c) | ((lane1 - c) << np.uint64(shift))
        assert np.array_equal(out.view(blockfp.WIRE[precision]), blockfp.aggregate(u, precision)), precision


def test_recovery_waits_follow_slow_peers_but_never_run_away():
    from netweave.testbed.agg.stream_client import PATIENCE, first_wait

    assert first_wait([], 0.1) == 0.1
    assert first_wait([0.01] * 5, 0.1) == 0.1  # fast peers: the floor
    assert first_wait([0.3] * 5, 0.1) == pytest.approx(0.6)  # slow peers are not losses
    assert first_wait([30.0] * 20, 0.1) == pytest.approx(PATIENCE * 0.1)  # a run of long waits cannot inflate it


def test_packets_round_trip():
    u = np.arange(2 * 1024, dtype=np.uint16).reshape(2, 1024)
    rows, lengths = sp.build(sp.DATA, 3, 7, "fp16", 9, 4, u, exponents=np.array([-3, 5], np.int8),
                             want=np.array([1, 2], np.int8), flags=np.array([0, 1], np.uint8), size=4 * 1024 + 1500)
    assert lengths.tolist() == [22 + 2048, 22 + 2 * (1500 - 1024)]
    batch = sp.parse(rows, lengths, 2)
    h = batch.header
    assert h["chunk"].tolist() == [4, 5] and h["exponent"].tolist() == [-3, 5] and h["flags"].tolist() == [0, 1]
    assert np.array_equal(batch.values(1), u[1, :476]) and h["agg_id"][0] == 3 and h["wor_id"][0] == 7
    lengths[0] -= 1  # a length that is not 22 + count × width is no packet
    assert len(sp.parse(rows, lengths, 2).header) == 1


# -- through the testbed (root) ---------------------------------------------------------------------

missing = netns.missing_requirements("clang")
needs_root = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                reason="the testbed needs " + ("; ".join(missing) or "clang"))


def reference_check(out, topology: str, precisions: list[str], routing: str, size: int, steps: int, seed: int):
    """Every stream's sums (as worker 1 received them) equal numpy's aggregation of the members'
    vectors at the exponents the sums came with, bit for bit; every worker holds the same."""
    from netweave.testbed.agg.plan import plan_training
    from netweave.testbed.agg.streamtree import stream_plan
    from netweave.testbed.agg.stream_probe import vector
    from netweave.testbed.net.cluster import plan_cluster
    from netweave.topology import load_topology_spec

    topo = load_topology_spec(topology)
    plan = plan_training(topo, precisions, routing, 0.1, seed, 100.0)
    _, _, streams, own = stream_plan(plan, plan_cluster(topo, scale=0.1, routes=plan.routes or None, prefix="nwtx"))
    runs = {w: np.load(out / f"worker{w}.npz") for w in plan.hosts}
    for w, run in runs.items():
        assert np.array_equal(run["means"], runs[1]["means"]), f"worker {w} stepped on other values"
    for s, spec in enumerate(streams):
        members = [w for w in plan.hosts if own[w] == s]
        assert len(members) == spec.workers
        for t in range(steps):
            e = runs[1][f"e{s}"][t]
            u = np.stack([blockfp.quantize(vector(seed, w, t, size), spec.precision, spec.workers, e)[0]
                          for w in members])
            expected = np.stack([blockfp.aggregate(u[:, c], spec.precision) for c in range(u.shape[1])])
            got = runs[1][f"u{s}"][t]
            assert np.array_equal(got.reshape(-1)[:size], expected.reshape(-1)[:size]), (spec, t)
    return runs


CASES = [  # (topology, precisions, routing): one switch; PAHInA's leaves and the root adding them; ARO's tree
    ("star:n=5", ["fp8", "fp8", "fp16", "fp32"], "pahina"),
    ("tree:leaves=2,hosts=3", ["fp8", "fp8", "fp16", "fp16"], "pahina"),
    ("tree:leaves=2,hosts=3", ["fp16"] * 4, "aro"),
    # no INA: the PS's own (userspace) aggregator sends each worker its sums by unicast through switches
    # whose programs multicast RESULTs down the tree (they once broadcast these too, and no worker took them)
    ("tree:leaves=2,hosts=3", ["fp8", "fp16", "fp16"], "ps"),
]


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("topology, precisions, routing", CASES)
def test_xdp_equals_userspace_equals_numpy(tmp_path, topology, precisions, routing):
    from netweave.testbed.agg.stream_probe import probe_on_testbed
    from netweave.topology import load_topology_spec

    size, steps = 12_345, 5
    means = {}
    for dataplane in ("xdp", "user"):
        out = tmp_path / dataplane
        report = probe_on_testbed(load_topology_spec(topology), precisions, str(out), routing=routing, dataplane=dataplane,
                                  size=size, steps=steps)
        runs = reference_check(out, topology, precisions, routing, size, steps, 0)
        means[dataplane] = runs[1]["means"]
        counters = [a["counters"] for a in report["agents"].values()]
        assert all(c["mismatched"] == 0 and c["unknown"] == 0 for c in counters)
    assert np.array_equal(means["xdp"], means["user"])
    assert report["worker"]["retried"] > 0  # the magnitudes jump: some chunks went a second round


@needs_root
@pytest.mark.slow
def test_sums_stay_exact_under_loss_duplication_and_reordering(tmp_path):
    from netweave.testbed import Impairment
    from netweave.testbed.agg.stream_probe import probe_on_testbed
    from netweave.topology import load_topology_spec

    topology, precisions = "tree:leaves=2,hosts=3", ["fp8", "fp8", "fp16", "fp16"]
    report = probe_on_testbed(load_topology_spec(topology), precisions, str(tmp_path), routing="pahina", dataplane="xdp",
                              size=20_000, steps=4,
                              impairment=Impairment(loss=0.05, duplicate=0.05, reorder=0.1))
    reference_check(tmp_path, topology, precisions, "pahina", 20_000, 4, 0)
    counters = {name: a["counters"] for name, a in report["agents"].items()}
    assert sum(c["duplicates"] for c in counters.values()) > 0  # duplicates came and were dropped
    assert sum(c["resent"] for c in counters.values()) > 0  # and losses were recovered from kept sums
