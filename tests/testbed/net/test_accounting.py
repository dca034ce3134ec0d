"""What bound an interval: the Accountant's link busy time against bytes this test sent itself at
a known shaped rate, and the rules that name the bound (needs root for the cluster test)."""

import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from netweave.testbed import Testbed, plan_cluster
from netweave.testbed.net import netns
from netweave.testbed.net.accounting import CPU_BUSY, NETWORK_BUSY, Accountant, Snapshot, bound, cpu_busy_s, \
    cpu_floor_s, residents, scale_to_bind, tx_bytes
from netweave.topology import load_topology_spec

missing = netns.missing_requirements()
needs_root = pytest.mark.skipif(bool(missing), reason="the testbed needs " + "; ".join(missing))


def test_the_bound_is_the_links_when_busy_else_the_cpus_when_busy_else_neither():
    assert bound(NETWORK_BUSY, 1.0) == "network"  # a busy link wins even on busy CPUs
    assert bound(NETWORK_BUSY - 0.01, CPU_BUSY) == "cpu"
    assert bound(0.5, CPU_BUSY - 0.01) == "neither"
    assert bound(0.5, 0.2, CPU_BUSY) == "data-plane"  # one pinned CPU saturated, the others idle
    assert bound(0.5, CPU_BUSY, CPU_BUSY) == "cpu" and bound(NETWORK_BUSY, 0.2, 2.0) == "network"


def test_the_links_share_is_of_the_time_the_steps_were_not_computing():
    """A link sent 62,500 bytes at 1 Mb/s (0.5 s) in 1 s of steps on 2 CPUs busy 0.2 s: half the
    steps, so not network-bound; of which 0.4 s were compute: 0.5 of the 0.6 s of exchange is."""
    cluster = SimpleNamespace(shaping={("A", "B"): SimpleNamespace(rate_kbit=1000)})
    a, b = Snapshot(0.0, {("A", "B"): 0}, 0.0, {}), Snapshot(1.0, {("A", "B"): 62_500}, 0.2, {})
    plain = Accountant(cluster).interval(a, b, steps=10)
    assert plain["busiest_link_busy"] == pytest.approx(0.5) and plain["bound"] == "neither"
    computing = Accountant(cluster).interval(a, b, steps=10, compute_s=0.4)
    assert computing["busiest_link_busy_exchanging"] == pytest.approx(0.5 / 0.6) and computing["bound"] == "network"
    assert computing["busiest_link_s_per_step"] == pytest.approx(0.05)


def test_the_data_plane_is_the_bound_when_it_ran_through_the_exchange_on_idle_cpus():
    """The switch's program ran 0.57 s (kernel accounting) in a 1 s step whose exchange took 0.6 s:
    95 % of the exchange on one pinned CPU, on a machine 20 % busy (16 cores), links 10 % busy."""
    cluster = SimpleNamespace(shaping={("A", "B"): SimpleNamespace(rate_kbit=1000)})
    a = Snapshot(0.0, {("A", "B"): 0}, 0.0, {"gnn_switch": (0, 0)})
    b = Snapshot(1.0, {("A", "B"): 12_500}, 0.2, {"gnn_switch": (570_000_000, 1000)})
    interval = Accountant(cluster).interval(a, b, steps=1, exchange_s=0.6)
    assert interval["data_plane_busy"] == pytest.approx(0.95) and interval["data_plane_cpu_s_per_step"] == pytest.approx(0.57)
    assert interval["data_plane_ns_per_packet"] == {"gnn_switch": pytest.approx(570_000)}
    assert interval["cpu_busy"] <= 0.2 and interval["bound"] == "data-plane"
    slower = Accountant(cluster).interval(a, b, steps=1, exchange_s=1.0)  # the same work over a longer exchange
    assert slower["data_plane_busy"] == pytest.approx(0.57) and slower["bound"] != "data-plane"


def test_the_cpus_busy_are_those_of_the_hosts_where_a_run_keeps_them_apart(monkeypatch):
    """``/proc/stat``: all CPUs from its first line, or the hosts' from their own lines (user, nice,
    system, idle, iowait, irq, softirq, steal ticks); a share of those CPUs only: on 16 CPUs, the
    hosts' two saturated while the switch's idled is CPU-bound, not an eighth busy."""
    import os

    stat = ("cpu  400 0 200 1000 0 0 100 0 0 0\ncpu0 100 0 50 100 0 0 0 0 0 0\ncpu1 100 0 50 100 0 0 0 0 0 0\n"
            "cpu2 100 0 50 400 0 0 50 0 0 0\ncpu3 100 0 50 400 0 0 50 0 0 0\nintr 5\n")
    tick = os.sysconf("SC_CLK_TCK")
    assert cpu_busy_s(stat=stat) == pytest.approx(700 / tick)
    assert cpu_busy_s(frozenset({0, 1}), stat=stat) == pytest.approx(300 / tick)
    assert cpu_busy_s(frozenset({2, 3}), stat=stat) == pytest.approx(400 / tick)
    assert cpu_busy_s(frozenset({0})) <= cpu_busy_s()  # this machine's
    cluster = SimpleNamespace(shaping={("A", "B"): SimpleNamespace(rate_kbit=1000)})
    a, b = Snapshot(0.0, {("A", "B"): 0}, 0.0, {}), Snapshot(1.0, {("A", "B"): 0}, 1.9, {})
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert Accountant(cluster).interval(a, b, steps=1)["cpu_busy"] == pytest.approx(1.9 / 16)
    hosts = Accountant(cluster, cpus=frozenset({0, 1})).interval(a, b, steps=1)
    assert hosts["cpu_busy"] == pytest.approx(0.95) and hosts["bound"] == "cpu"  # 1.9 of the hosts' 2 CPU-s
    assert hosts["cpu_count"] == 2 and hosts["cpu_s_per_step"] == pytest.approx(1.9)
    assert Accountant(cluster).interval(a, b, steps=2)["cpu_s_per_step"] == pytest.approx(0.95)


def test_the_cpus_floor_is_the_work_of_a_step_over_the_cpus_that_did_it():
    """1.4 CPU-s a step on 2 CPUs take at least 0.7 s: a bound of 0.6 s is out of reach there at
    that work. Kept apart on 2 CPUs of its own, a data plane of 1.6 CPU-s a step takes
    0.8 s however idle the hosts' CPUs are; of 0.2 CPU-s, the hosts' work binds."""
    assert cpu_floor_s(1.4, 2) == pytest.approx(0.7) and cpu_floor_s(1.4, 2) > 0.6
    assert cpu_floor_s(1.4, 14, data_plane_s_per_step=1.6, data_plane_cpus=2) == pytest.approx(0.8)
    assert cpu_floor_s(1.4, 14, data_plane_s_per_step=0.2, data_plane_cpus=2) == pytest.approx(0.1)
    assert cpu_floor_s(1.4, 2, data_plane_s_per_step=1.6) == pytest.approx(0.7)  # on the hosts' CPUs: in 1.4 already


def test_a_cpu_bound_run_is_told_a_scale_at_which_its_links_would_bind():
    # at scale 0.01 the busiest link was busy 40 % of a CPU-bound step; links take 1/scale as long,
    # so at 0.004 it alone would fill the step, and NETWORK_BUSY of that gives the margin
    assert scale_to_bind(0.01, 0.4) == pytest.approx(0.01 * 0.4 * NETWORK_BUSY)
    assert scale_to_bind(0.01, 0.0) > 0


@needs_root
def test_busy_time_is_the_bytes_sent_at_the_shaped_rate():
    plan = plan_cluster(load_topology_spec("star:n=2,gbps=10"), scale=0.01)  # 100 Mb/s
    total = 4_000_000
    with Testbed(plan) as p:
        h0 = p.address["H0"]
        server = subprocess.Popen(["ip", "netns", "exec", p.namespace["H0"], sys.executable, "-c", textwrap.dedent(f"""
            import socket
            s = socket.socket(); s.bind(("{h0}", 5001)); s.listen(1); c, _ = s.accept(); n = 0
            while b := c.recv(1 << 16):
                n += len(b)
            print(n)""")], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        accountant = Accountant(p)
        a = accountant.snapshot()
        subprocess.run(["ip", "netns", "exec", p.namespace["H1"], sys.executable, "-c",
                        f"import socket; c = socket.create_connection(('{h0}', 5001)); "
                        f"c.sendall(b'x' * {total}); c.close()"], check=True, timeout=30)
        assert int(server.communicate(timeout=30)[0]) == total
        b = accountant.snapshot()
        interval = accountant.interval(a, b, steps=1)
    # the payload plus TCP/IP/Ethernet headers (about 3 % at a 3,000-byte MTU), at 100 Mb/s
    assert interval["busiest_link"] in ("H1->S0", "S0->H0")
    assert total * 8 / 1e8 <= interval["busiest_link_s_per_step"] <= 1.06 * total * 8 / 1e8
    assert 0 < interval["busiest_link_busy"] <= 1.05  # of the interval's wall time (python's start included)
    assert interval["busiest_link_busy_exchanging"] == min(1.0, interval["busiest_link_busy"])  # no compute given
    assert interval["bound"] == bound(interval["busiest_link_busy"], interval["cpu_busy"], interval["data_plane_busy"])  # the machine's load decides


NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 3002707653007 1234    0    0    0     0          0         0 3002707653007 1234    0    0    0     0       0          0
h0-s0:   17 2 0 0 0 0 0 0 18446744073709551615 9 0 0 0 0 0 0
"""


def test_bytes_sent_are_read_from_proc_net_dev():
    assert tx_bytes(NET_DEV) == {"lo": 3002707653007, "h0-s0": 2 ** 64 - 1}
    assert tx_bytes("") == {} and tx_bytes(NET_DEV.replace("h0-s0:", "h0-s0 ")) == {"lo": 3002707653007}


@needs_root
def test_a_namespace_with_a_process_is_read_without_starting_one():
    """The counters through a process living in the namespace equal ``ip -s link``'s; once it is
    gone, the accountant reads them with ``ip`` again."""
    plan = plan_cluster(load_topology_spec("star:n=2,gbps=10"), scale=0.01)
    with Testbed(plan) as p:
        ns = p.namespace["H0"]
        sleeper = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "30"])
        try:
            for _ in range(50):  # until ip netns exec has entered the namespace
                if residents([ns]).get(ns) == sleeper.pid:
                    break
                time.sleep(0.1)
            subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", "import socket; socket.socket(socket.AF_INET, "
                            f"socket.SOCK_DGRAM).sendto(b'x' * 1000, ('{p.address['H1']}', 9))"],
                           check=True, timeout=30)  # some bytes on the uplink
            accountant = Accountant(p)
            accountant.snapshot()
            assert accountant.resident[ns] == sleeper.pid and p.namespace["S0"] not in accountant.resident
            assert netns.pids_in(ns) == [sleeper.pid] and netns.pids_in(p.namespace["S0"]) == []  # as ip netns pids
            assert netns.pids_in(ns) == [int(q) for q in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                                                        text=True).stdout.split()]
            via_ip = Accountant(p, resident={}).sent_in(ns)
            assert accountant.sent_in(ns) == via_ip and via_ip[p.interface["H0", "S0"]] > 0
        finally:
            sleeper.kill()
            sleeper.wait()
        assert accountant.sent_in(ns) == via_ip and ns not in accountant.resident
