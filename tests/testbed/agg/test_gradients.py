"""Gradients on the wire: each precision's rounding bound, the shared fixed-point exponent and its
containers (int16, int32, int64), up-casting, and the PS's mean against numpy's mean of the cast
gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netweave.dataplane import fixedpoint  # noqa: E402
from netweave.testbed.agg.gradients import (MAX_EXPONENT, MIN_EXPONENT, cast, container_exponent, decode_mean,  # noqa: E402
                                        encode, step_exponent, upcast)

PRECISIONS = ("fp8", "fp16", "fp32")


@pytest.mark.parametrize("precision, bound", [("fp32", 0.0), ("fp16", 2.0 ** -11), ("fp8", 2.0 ** -4)])
def test_each_precision_rounds_within_its_relative_bound(precision, bound):
    g = np.random.default_rng(0).normal(0, 1e-3, 10_000).astype(np.float32)
    c = cast(g, precision)
    normal = np.abs(g) > max(6.2e-5, np.abs(g).max() / 64)  # above fp16's and (scaled) E4M3's subnormals
    assert np.all(np.abs(c - g)[normal] <= bound * np.abs(g)[normal] * (1 + 1e-6))
    if precision == "fp8":  # E4M3 keeps 3 mantissa bits: 8 magnitudes per binade (and its top rounds up)
        octave = (np.abs(g) >= 2.0 ** -10) & (np.abs(g) < 2.0 ** -9)
        assert np.array_equal(np.unique(np.abs(c[octave])) * 2 ** 10, 1 + np.arange(9) / 8)


def test_the_exponent_keeps_the_sum_of_all_workers_under_every_containers_limit():
    peak, workers = 37.0, 8
    e = step_exponent(peak, workers)
    assert workers * peak * 2.0 ** e <= 2 ** 61 < workers * peak * 2.0 ** (e + 1)  # int64 scale, 4x headroom
    for p in PRECISIONS:  # the same relative headroom in every container
        limit = fixedpoint.value_range(p)[1] + 1
        assert workers * peak * 2.0 ** container_exponent(p, e) * 4 <= limit < workers * peak * 2.0 ** container_exponent(p, e + 1) * 4
    assert [e - container_exponent(p, e) for p in PRECISIONS] == [48, 32, 7]
    assert step_exponent(0.0, 4) == step_exponent(float("nan"), 4) == step_exponent(1.0, 4) == 59
    assert step_exponent(1e-30, 2) == MAX_EXPONENT and step_exponent(1e30, 2) == MIN_EXPONENT


@pytest.mark.parametrize("workers", [2, 8, 64])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_worker_within_the_headroom_never_saturates_and_the_sum_of_all_fits(precision, workers):
    rng = np.random.default_rng(workers)
    peak = 0.37
    e = step_exponent(peak, workers)
    g = rng.uniform(-4 * workers * peak, 4 * workers * peak, 10_000).astype(np.float32)  # a single worker's margin
    g[:2] = [peak, -peak]
    q, saturated = encode(g, precision, e)
    assert saturated == 0 and q.dtype == fixedpoint.container_dtype(precision)
    lo, hi = fixedpoint.value_range(precision)
    total = workers * encode(np.array([peak], np.float32), precision, e)[0].astype(np.int64)[0]
    assert total * 4 <= hi + 1  # the sum of every worker's peak: a quarter of the container


def test_the_ps_mean_equals_the_mean_of_the_cast_gradients_within_the_fixed_point_step():
    rng = np.random.default_rng(1)
    precisions = {1: "fp8", 2: "fp8", 3: "fp16", 4: "fp32"}
    grads = {w: rng.normal(0, 1e-2, 5000).astype(np.float32) for w in precisions}
    e = step_exponent(max(float(np.abs(g).max()) for g in grads.values()), len(grads))
    sums = {}
    for w, p in precisions.items():  # what the switches compute: exact int sums per precision
        q, saturated = encode(grads[w], p, e)
        assert saturated == 0 and q.dtype == fixedpoint.container_dtype(p)
        sums[p] = fixedpoint.accumulate(sums.get(p, np.zeros(q.size, np.int64)), q)
    sums = {p: fixedpoint.saturate(v, p)[0] for p, v in sums.items()}
    mean = decode_mean(sums, e, len(precisions))
    reference = np.mean([cast(grads[w], p) for w, p in precisions.items()], axis=0)
    bound = sum(2.0 ** -(container_exponent(p, e) + 1) for p in precisions.values()) / len(precisions)
    assert np.max(np.abs(mean - reference)) <= bound + 2.0 ** -24 * np.abs(reference).max()
    assert np.max(np.abs(mean - reference)) > 2.0 ** -(container_exponent("fp16", e) + 1) / 4  # fp8's step shows


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # 1e30 as fp16
@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_value_beyond_the_range_saturates_at_the_containers_value_bound_and_is_counted(precision):
    exponent = 60
    lo, hi = fixedpoint.value_range(precision)
    step = 2.0 ** -container_exponent(precision, exponent)
    g = np.array([4 * hi * step, -4 * hi * step, 0.5 * hi * step], np.float32)
    q, saturated = encode(g, precision, exponent)
    assert saturated == 2 and q.tolist()[:2] == [hi, lo] and 0 < q[2] < hi
    if precision != "fp8":  # (fp8's per-tensor scale leaves no room beside 1e30)
        step = 2.0 ** -container_exponent(precision, 40)  # a step fp16 represents
        q, saturated = encode(np.array([1e30, -np.inf, step, -step], np.float32), precision, 40)
        assert saturated == 2 and q.tolist() == [hi, lo, 1, -1]


def test_upcast_is_a_shift_that_commutes_with_encoding_and_keeps_saturated_sums_in_range():
    e = step_exponent(0.5, 4)
    g = np.random.default_rng(2).uniform(-0.5, 0.5, 1000).astype(np.float32)
    for p, q in (("fp8", "fp16"), ("fp16", "fp32"), ("fp8", "fp32")):
        ints = encode(cast(g, p), p, e)[0]
        up = upcast(ints, p, q)
        assert up.dtype == fixedpoint.container_dtype(q)
        assert np.array_equal(up, encode(cast(g, p), q, e)[0])  # the same values at the wider container's scale
        assert np.array_equal(decode_mean({q: up}, e, 1), decode_mean({p: ints}, e, 1))
        lo, hi = fixedpoint.container_range(p)
        extreme = upcast(np.array([lo, hi]), p, q)
        qlo, qhi = fixedpoint.value_range(q)
        assert qlo <= extreme.min() and extreme.max() <= qhi  # 64 of them still cannot wrap int64
    assert upcast(np.array([3]), "fp16", "fp16").tolist() == [3]
    with pytest.raises(ValueError, match="narrower"):
        upcast(np.array([1]), "fp32", "fp16")
    with pytest.raises(ValueError, match="container"):
        upcast(np.array([2 ** 15]), "fp8", "fp16")
