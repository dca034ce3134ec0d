"""One CPU for the switch's packets: the RPS masks written in the kernel's bitmap format, bad
interface names refused, and the input queue raised for a run and put back. No root: a
directory stands in for ``/sys/class/net`` and a file for the sysctl."""

from __future__ import annotations

import os

import pytest

from netweave.errors import NetweaveError
from netweave.testbed.net.steering import backlog_at_least, host_cpus, steer_receive, switch_cpus


def _sysfs(tmp_path, names, queues=2):
    for name in names:
        for q in range(queues):
            d = tmp_path / name / "queues" / f"rx-{q}"
            d.mkdir(parents=True)
            (d / "rps_cpus").write_text("00000000\n")
        (tmp_path / name / "queues" / "tx-0").mkdir()
    return tmp_path


@pytest.mark.parametrize("cpu, text", [(0, "00000001"), (1, "00000002"), (31, "80000000"), (33, "00000002,00000000")])
def test_every_receive_queue_gets_the_cpu(tmp_path, cpu, text):
    sysfs = _sysfs(tmp_path, ["e0", "e1"])
    steer_receive(["e0", "e1"], cpu, sysfs)
    for name in ("e0", "e1"):
        for q in (0, 1):
            assert (sysfs / name / "queues" / f"rx-{q}" / "rps_cpus").read_text() == text
            # the kernel reads the same mask back: bit `cpu` of the comma-separated 32-bit words
            assert int(text.replace(",", ""), 16) == 1 << cpu
    assert not (sysfs / "e0" / "queues" / "tx-0" / "rps_cpus").exists()


@pytest.mark.parametrize("name", ["../e0", "", "..", "e0/queues"])
def test_an_interface_name_that_is_a_path_is_refused(tmp_path, name):
    sysfs = _sysfs(tmp_path, ["e0"])
    with pytest.raises(NetweaveError):
        steer_receive([name], 0, sysfs)


def test_an_interface_without_queues_or_a_bad_cpu_is_refused(tmp_path):
    with pytest.raises(NetweaveError, match="no receive queues"):
        steer_receive(["e9"], 0, _sysfs(tmp_path, ["e0"]))
    with pytest.raises(NetweaveError, match="CPU -1"):
        steer_receive(["e0"], -1, tmp_path)


def test_the_switch_takes_the_highest_cpus_this_process_may_use():
    mine = os.sched_getaffinity(0)
    assert switch_cpus(1) == [max(mine)] and set(switch_cpus(len(mine))) == mine
    assert switch_cpus(8, set(range(16))) == list(range(8, 16))  # shard s on the s-th
    assert switch_cpus(3, {0, 2, 4, 6, 9}) == [4, 6, 9]  # a cpuset need not be contiguous: only its CPUs
    for bad in (0, len(mine) + 1):
        with pytest.raises(NetweaveError, match=f"--switch-cpus {bad}"):
            switch_cpus(bad)


def test_the_backlog_is_raised_for_the_block_and_put_back(tmp_path):
    f = tmp_path / "netdev_max_backlog"
    f.write_text("1000\n")
    with backlog_at_least(65536, f):
        assert f.read_text() == "65536"
    assert f.read_text() == "1000"
    f.write_text("200000\n")  # already larger: left alone
    with backlog_at_least(65536, f):
        assert f.read_text() == "200000\n"
    assert f.read_text() == "200000\n"


def test_a_backlog_someone_else_changed_meanwhile_stays(tmp_path):
    f = tmp_path / "netdev_max_backlog"
    f.write_text("1000\n")
    with backlog_at_least(65536, f):
        f.write_text("5000")
    assert f.read_text() == "5000"
    missing = tmp_path / "nothing"
    with backlog_at_least(65536, missing):  # no such sysctl (or no right to it): nothing happens
        pass
    assert not missing.exists()


def test_the_hosts_get_the_cpus_the_switch_leaves_free_when_each_worker_can_have_one():
    sixteen = set(range(16))
    assert host_cpus(list(range(8, 16)), 8, sixteen) == frozenset(range(8))  # 8 shards, 8 workers: apart
    assert host_cpus([15], 8, sixteen) == frozenset(range(15))
    assert host_cpus(list(range(8, 16)), 9, sixteen) is None  # fewer free CPUs than workers: share them all
    assert host_cpus([0, 1], 8, {0, 1}) is None and host_cpus([1], 2, {0, 1}) is None  # 2 cores
    assert host_cpus([], 2, sixteen) is None  # no switch CPU of its own: nothing to keep apart
    assert host_cpus([3], 2, {2, 3, 5}) == frozenset({2, 5})  # only the CPUs this process may use
    odd = {0, 2, 4, 6, 9, 11, 13, 15}  # a cpuset of 8, not contiguous: 4 shards on its highest, 4 hosts
    assert host_cpus(switch_cpus(4, odd), 4, odd) == frozenset({0, 2, 4, 6})
    mine = os.sched_getaffinity(0)
    assert host_cpus([max(mine)], 1) == (frozenset(mine - {max(mine)}) or None)
