"""Gradients on the wire: each precision's rounding bound, the shared fixed-point exponent, and the
PS's mean against numpy's mean of the cast gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netweave.dataplane import fixedpoint  # noqa: E402
from netweave.testbed.gradients import cast, decode_mean, encode, step_exponent  # noqa: E402


@pytest.mark.parametrize("precision, bound", [("fp32", 0.0), ("fp16", 2.0 ** -11), ("fp8", 2.0 ** -4)])
def test_each_precision_rounds_within_its_relative_bound(precision, bound):
    g = np.random.default_rng(0).normal(0, 1e-3, 10_000).astype(np.float32)
    c = cast(g, precision)
    normal = np.abs(g) > max(6.2e-5, np.abs(g).max() / 64)  # above fp16's and (scaled) E4M3's subnormals
    assert np.all(np.abs(c - g)[normal] <= bound * np.abs(g)[normal] * (1 + 1e-6))
    if precision == "fp8":  # E4M3 keeps 3 mantissa bits: 8 magnitudes per binade (and its top rounds up)
        octave = (np.abs(g) >= 2.0 ** -10) & (np.abs(g) < 2.0 ** -9)
        assert np.array_equal(np.unique(np.abs(c[octave])) * 2 ** 10, 1 + np.arange(9) / 8)


def test_the_exponent_keeps_the_sum_of_all_workers_in_int32():
    peak, workers = 37.0, 8
    e = step_exponent(peak, workers)
    assert workers * peak * 2.0 ** e <= 2 ** 29 < workers * peak * 2.0 ** (e + 1)
    assert step_exponent(0.0, 4) == step_exponent(float("nan"), 4) == 24


def test_the_ps_mean_equals_the_mean_of_the_cast_gradients_within_the_fixed_point_step():
    rng = np.random.default_rng(1)
    precisions = {1: "fp8", 2: "fp8", 3: "fp16", 4: "fp32"}
    grads = {w: rng.normal(0, 1e-2, 5000).astype(np.float32) for w in precisions}
    e = step_exponent(max(float(np.abs(g).max()) for g in grads.values()), len(grads))
    sums = {}
    for w, p in precisions.items():  # what the switches compute: exact int sums per precision
        q, saturated = encode(grads[w], p, e)
        assert saturated == 0
        sums[p] = fixedpoint.accumulate(sums.get(p, np.zeros(q.size, np.int64)), q)
    mean = decode_mean(sums, e, len(precisions))
    reference = np.mean([cast(grads[w], p) for w, p in precisions.items()], axis=0)
    assert np.max(np.abs(mean - reference)) <= 2.0 ** -(e + 1) + 1e-9


def test_a_value_beyond_the_range_saturates_and_is_counted():
    q, saturated = encode(np.array([1e9, -1e9, 1.0], np.float32), "fp32", 20)
    assert saturated == 2 and q[0] == fixedpoint.INT32_MAX and q[1] == fixedpoint.INT32_MIN
