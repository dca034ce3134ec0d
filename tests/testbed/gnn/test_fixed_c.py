"""The kernel data plane's fixed-point conversions (``bpf/gnn_switch.bpf.c``, between its "fixed
point: begin" and "end" markers), compiled for this host and run against gnn/fixed.py, bit for bit,
on every float32 exponent, both signs, zeros, subnormals, infinities and NaN (in), and on sums of
every magnitude, exact ties, carries into the next power of two and zero (out)."""

import ctypes
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest

from netweave.testbed.gnn.fixed import FRAC, LIMIT, SHIFT_MAX, from_fixed, to_fixed

clang = shutil.which("clang")
pytestmark = pytest.mark.skipif(clang is None, reason="compiles the BPF source's conversions with clang")

HARNESS = """
#include <stdint.h>
typedef uint32_t __u32; typedef int32_t __s32; typedef uint64_t __u64; typedef int64_t __s64;
#define __always_inline inline __attribute__((always_inline))
#define SHIFT_MAX {shift_max}
#define LIMIT {limit}LL
{region}
void to_fixed_n(const __u32 *bits, long n, __u32 frac, __s64 *out, int *sat)
{{ for (long i = 0; i < n; i++) out[i] = to_fixed(bits[i], frac, &sat[i]); }}
void from_fixed_n(const __s64 *s, long n, __u32 frac, __u32 *out)
{{ for (long i = 0; i < n; i++) out[i] = from_fixed(s[i], frac); }}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    source = resources.files("netweave.testbed").joinpath("gnn/bpf/gnn_switch.bpf.c").read_text()
    begin, end = source.index("/* fixed point: begin"), source.index("/* fixed point: end */")
    path = tmp_path_factory.mktemp("fixed_c")
    (path / "fixed.c").write_text(HARNESS.format(shift_max=SHIFT_MAX, limit=LIMIT, region=source[begin:end]))
    subprocess.run([clang, "-O2", "-shared", "-fPIC", "-o", str(path / "fixed.so"), str(path / "fixed.c")],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(path / "fixed.so"))


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _c_to_fixed(lib, bits, frac):
    bits = np.ascontiguousarray(bits, np.uint32)
    out, sat = np.empty(bits.size, np.int64), np.zeros(bits.size, np.intc)
    lib.to_fixed_n(_ptr(bits), ctypes.c_long(bits.size), ctypes.c_uint32(frac), _ptr(out), _ptr(sat))
    return out, sat.astype(bool)


def _c_from_fixed(lib, s, frac):
    s = np.ascontiguousarray(s, np.int64)
    out = np.empty(s.size, np.uint32)
    lib.from_fixed_n(_ptr(s), ctypes.c_long(s.size), ctypes.c_uint32(frac), _ptr(out))
    return out


@pytest.mark.parametrize("frac", FRAC)
def test_to_fixed_in_c_equals_fixed_py_on_every_exponent(lib, frac):
    rng = np.random.default_rng(frac)
    exponent = np.repeat(np.arange(256, dtype=np.uint32), 64)  # 0: zeros and subnormals; 255: inf, NaN
    mantissa = rng.integers(0, 1 << 23, exponent.size, dtype=np.uint32)
    mantissa[::64] = 0  # powers of two, ±0 and ±inf among them
    bits = np.concatenate([exponent << 23 | mantissa, 1 << 31 | exponent << 23 | mantissa])
    got, sat = _c_to_fixed(lib, bits, frac)
    want, _ = to_fixed(bits.view(np.float32), frac)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(sat, np.abs(want) == LIMIT)  # each value's own flag
    assert sat.any() and not sat.all() and (got == 0).any()


@pytest.mark.parametrize("frac", FRAC)
def test_from_fixed_in_c_equals_fixed_py_on_ties_carries_and_every_magnitude(lib, frac):
    rng = np.random.default_rng(frac + 1)
    msb = rng.integers(0, 62, 20_000)
    a = (np.int64(1) << msb) | (rng.integers(0, 1 << 62, msb.size) & ((np.int64(1) << msb) - 1))
    sh = np.arange(1, 40)
    quotient = rng.integers(1 << 23, 1 << 24, sh.size)
    ties = (quotient << sh) | (np.int64(1) << (sh - 1))  # exactly half way: to the even quotient
    carries = (np.int64(1) << (sh + 24)) - 1  # rounds up to 2^24: one more power of two
    small = np.arange(0, 1 << 12)  # below 2^24: shifted left, 0 for 0
    s = np.concatenate([a, ties, ties + 1, ties - 1, carries, small, [LIMIT, (1 << 62) + 5]])
    s = np.concatenate([s, -s])
    got = _c_from_fixed(lib, s, frac)
    want = from_fixed(s, frac).view(np.uint32)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(int(s[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    assert got[s == 0].tolist() == [0, 0]
