"""SwitchGNN's rate control (testbed/gnn/rate.py, switchgnn.txt §3.4): halved on a CNP, once per
hold window; grown additively without one; paced at the rate; numbers worked out by hand."""

import pytest

from netweave.testbed.gnn.rate import RateControl


def test_a_cnp_halves_the_rate_once_per_hold_window():
    r = RateControl(100e6, hold_s=0.005, increase_s=0.005)
    r.on_cnp(1.000)
    assert r.rate_bps == 50e6 and r.cuts == 1
    r.on_cnp(1.004)  # the same congestion: the queue has not seen the cut yet
    assert r.rate_bps == 50e6 and r.cuts == 1 and r.cnps == 2
    r.on_cnp(1.0051)  # a 5 ms step of growth (+3.125 Mb/s) is due first, then the cut
    assert r.rate_bps == pytest.approx((50e6 + 3.125e6) / 2) and r.cuts == 2
    assert r.lowest_bps == r.rate_bps


def test_without_cnps_the_rate_grows_additively_up_to_the_line():
    r = RateControl(100e6, hold_s=0.005, increase_s=0.005)  # step: a 32nd of the line, 3.125 Mb/s
    r.on_cnp(0.0)
    r.pace(0.0124, 0)  # two whole periods since the cut: +6.25 Mb/s, the partial third not yet
    assert r.rate_bps == pytest.approx(56.25e6)
    r.pace(0.0151, 0)
    assert r.rate_bps == pytest.approx(59.375e6)
    r.pace(10.0, 0)
    assert r.rate_bps == 100e6  # never above the line


def test_the_rate_never_falls_below_its_floor():
    r = RateControl(64e6, hold_s=0.001)
    for i in range(20):
        r.on_cnp(i * 0.002)
    assert r.rate_bps >= 1e6 and r.lowest_bps == pytest.approx(1e6)  # a 64th of the line


def test_pace_spaces_packets_at_the_rate():
    r = RateControl(8e6)  # 1 MB/s
    assert r.pace(5.0, 8_000) == 0.0  # idle: at once; the next 1,000 bytes after 1 ms
    assert r.pace(5.0, 8_000) == pytest.approx(0.001)
    assert r.pace(5.0, 8_000) == pytest.approx(0.002)
    assert r.pace(7.0, 8_000) == 0.0  # idle again: no credit saved up, no debt


def test_a_line_rate_must_be_positive():
    with pytest.raises(ValueError):
        RateControl(0.0)
