"""The cluster comes up, carries traffic at the scaled rate along pinned paths, and leaves nothing
behind on any exit path (needs root: skipped otherwise, with the reason)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from netweave.errors import NetweaveError
from netweave.testbed import Testbed, down, plan_cluster
from netweave.testbed.net import lifecycle
from netweave.testbed.net import netns
from netweave.topology import load_topology_spec

LEAFSPINE = "leafspine:leaves=2,spines=2,hosts=2,gbps=10,latency_us=5"
missing = netns.missing_requirements()
needs_root = pytest.mark.skipif(bool(missing), reason="the testbed needs " + "; ".join(missing))


def in_ns(ns: str, code: str, timeout: float = 30) -> str:
    done = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_missing_tools_are_named_in_one_line(monkeypatch):
    monkeypatch.setattr(netns.shutil, "which", lambda tool: None)
    with pytest.raises(NetweaveError, match=r"the `ip` command; install it with apt-get install iproute2") as e:
        netns.require()
    assert "\n" not in str(e.value)


@needs_root
def test_traffic_runs_at_the_scaled_rate_on_the_pinned_path(tmp_path):
    routes = {"T": {"ps": "H0", "paths": {"H3": ["H3", "L1", "S1", "L0", "H0"]}}}
    plan = plan_cluster(load_topology_spec(LEAFSPINE), scale=0.01, routes=routes)  # 100 Mb/s links
    with Testbed(plan) as p:
        h0, h3 = p.address["H0"], p.address["H3"]
        got = subprocess.run(["ip", "-n", p.namespace["S1"], "route", "get", h0, "from", h3, "iif", "lo"],
                             capture_output=True, text=True).stdout
        assert f"via {p.address['L0']}" in got  # S1 forwards H3's flow to the PS as pinned
        server = subprocess.Popen(["ip", "netns", "exec", p.namespace["H0"], sys.executable, "-c", textwrap.dedent(f"""
            import socket, time
            s = socket.socket(); s.bind(("{h0}", 5001)); s.listen(1); c, peer = s.accept(); n, t0 = 0, None
            while b := c.recv(1 << 16):
                t0 = t0 or time.perf_counter(); n += len(b)
            print(peer[0], n, n * 8 / (time.perf_counter() - t0) / 1e6)""")], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        in_ns(p.namespace["H3"], f"""
            import socket; c = socket.create_connection(("{h0}", 5001)); c.sendall(b"x" * 6_000_000); c.close()""")
        peer, n, mbit = server.communicate(timeout=30)[0].split()
        assert peer == h3 and int(n) == 6_000_000
        assert 75 < float(mbit) <= 105  # HTB at 100 Mb/s (TCP/IP headers take a few %)
    assert not netns.namespaces(p.prefix)


@needs_root
def test_an_error_inside_removes_everything():
    plan = plan_cluster(load_topology_spec("star:n=3"))
    with pytest.raises(RuntimeError):
        with Testbed(plan):
            assert len(netns.namespaces(plan.prefix + "-")) == 4
            raise RuntimeError("boom")
    assert not netns.namespaces(plan.prefix + "-")


@needs_root
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_terminated_or_killed_owner_leaves_nothing_after_down(tmp_path, how):
    """SIGTERM: the owner removes its cluster itself; SIGKILL: ``down`` removes the orphan."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import time
        from netweave.testbed import Testbed, plan_cluster
        from netweave.topology import load_topology_spec
        with Testbed(plan_cluster(load_topology_spec("star:n=2"))) as p:
            print(p.prefix, flush=True)
            time.sleep(60)""")], stdout=subprocess.PIPE, text=True)
    prefix = child.stdout.readline().strip()
    assert len(netns.namespaces(prefix + "-")) == 3
    child.send_signal(getattr(signal, how))
    child.wait(timeout=30)
    if how == "SIGKILL":
        assert netns.namespaces(prefix + "-")  # nobody was left to clean up …
        assert prefix in down().removed  # … until `testbed down`
    assert not netns.namespaces(prefix + "-")


@needs_root
def test_cli_up_stays_until_down(capsys):
    from netweave.cli import main

    with pytest.raises(SystemExit) as e:
        main(["testbed", "up", "star:n=2", "--json"])
    up = json.loads(capsys.readouterr().out)
    assert e.value.code == 0 and len(netns.namespaces(up["prefix"] + "-")) == 3 and up["scale"] == 0.01
    with pytest.raises(SystemExit):
        main(["testbed", "down", "--json"])
    assert up["prefix"] in json.loads(capsys.readouterr().out)["removed"]
    assert not netns.namespaces(up["prefix"] + "-")


@needs_root
@pytest.mark.skipif(shutil.which("clang") is None, reason="impairments compile a BPF program with clang")
def test_impairments_lose_duplicate_and_reorder_at_their_rates():
    from netweave.testbed import Impairment

    plan = plan_cluster(load_topology_spec("star:n=2"), scale=0.1,
                        impairment=Impairment(loss=0.1, duplicate=0.1, reorder=0.2))
    with Testbed(plan) as p:
        h0 = p.address["H0"]
        receiver = subprocess.Popen(["ip", "netns", "exec", p.namespace["H0"], sys.executable, "-c", textwrap.dedent(f"""
            import socket, json
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("{h0}", 5000)); s.settimeout(1.5)
            got = []
            try:
                while True: got.append(int(s.recv(100)))
            except socket.timeout: print(json.dumps(got))""")], stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        in_ns(p.namespace["H1"], f"""
            import socket, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(2000):
                s.sendto(str(i).encode(), ("{h0}", 5000))
                if i % 50 == 0: time.sleep(0.001)""")
        got = json.loads(receiver.communicate(timeout=20)[0])
    unique = set(got)
    lost = 1 - len(unique) / 2000  # two impaired hops: 1 - 0.9^2 = 0.19
    duplicates = len(got) - len(unique)
    inversions = sum(b < a for a, b in zip(got, got[1:]))
    assert 0.15 < lost < 0.23 and 250 < duplicates < 420 and inversions > 50


# -- `down` removes only what netweave recorded making (issue 29) ------------------------------------

def _record(directory, prefix, namespaces, pid=2**22 - 1, **extra):
    directory.mkdir(mode=0o700, exist_ok=True)
    (directory / f"{prefix}.json").write_text(json.dumps(
        {"prefix": prefix, "namespaces": namespaces, "owner_pid": pid, "owner_start": 1, "keep": False} | extra))


def test_records_that_are_not_netweaves_are_ignored(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setattr(lifecycle, "STATE_DIR", state)
    _record(state, "nwtzz", ["nwtzz-n0", "nwtzz-n1"])
    _record(state, "nwtyy", ["nwtest-db"])  # a namespace that is not this prefix's
    _record(state, "nwtxx", ["nwtxx-n0"], pid="1")  # not a PID
    _record(state, "nwtww", ["nwtww-n0\nnwtest-db"])
    (state / "notes.json").write_text("{}")
    found, ignored = lifecycle.records()
    assert [r.prefix for r in found] == ["nwtzz"] and found[0].namespaces == ("nwtzz-n0", "nwtzz-n1")
    assert ignored == ["notes.json", "nwtww.json", "nwtxx.json", "nwtyy.json"]
    assert not found[0].owner_alive  # PID 2**22 - 1 is above any pid_max here


def test_a_state_directory_others_may_write_is_refused(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    monkeypatch.setattr(lifecycle, "STATE_DIR", state)
    with pytest.raises(NetweaveError, match=r"writable by no one else; fix it with chown"):
        lifecycle.records()


def test_a_reused_owner_pid_is_not_the_owner():
    import os

    me = lifecycle.ClusterRecord("nwtzz", (), os.getpid(), lifecycle._start_time(os.getpid()), False)
    assert me.owner_alive
    assert not lifecycle.ClusterRecord("nwtzz", (), os.getpid(), me.owner_start + 1, False).owner_alive


def _only_marked(monkeypatch, keep) -> None:
    """``down --all`` in a test sees only the marked namespaces ``keep(ns, prefix)`` admits, so that
    it cannot remove the clusters of runs beside the test suite (a benchmark, another checkout's tests)."""
    real = lifecycle.marked_namespaces
    monkeypatch.setattr(lifecycle, "marked_namespaces",
                        lambda: {ns: prefix for ns, prefix in real().items() if keep(ns, prefix)})


@needs_root
def test_down_never_touches_a_namespace_it_did_not_make(tmp_path, monkeypatch):
    """``ip netns add nwtest-db; ip netns exec nwtest-db sleep 600 & netweave testbed down`` once
    removed the namespace and killed the sleep; neither ``down`` nor ``down --all`` may, even with
    a stale record beside it."""
    import os

    monkeypatch.setattr(lifecycle, "STATE_DIR", tmp_path / "state")
    _only_marked(monkeypatch, lambda ns, prefix: ns.startswith("nwtest"))
    foreign = f"nwtest{os.getpid()}-db"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", foreign, "sleep", "600"])
    try:
        time.sleep(0.2)
        _record(tmp_path / "state", "nwtzz", ["nwtzz-n0"])  # its owner is gone and nothing of it is left
        for all_clusters in (False, True):
            result = down(all_clusters)
            assert foreign in netns.namespaces(foreign) and sleeper.poll() is None
            assert not any(p.startswith("nwtest") for p in result.removed)
        assert result.removed == [] and not (tmp_path / "state" / "nwtzz.json").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run(["ip", "netns", "del", foreign])


@needs_root
def test_down_all_removes_a_marked_namespace_without_a_record(tmp_path, monkeypatch):
    monkeypatch.setattr(lifecycle, "STATE_DIR", tmp_path / "state")
    plan = plan_cluster(load_topology_spec("star:n=2"))
    _only_marked(monkeypatch, lambda ns, prefix: prefix == plan.prefix)
    lifecycle.up(plan)  # made and marked, but never recorded
    try:
        assert all(netns.marker(ns) == plan.prefix for ns in plan.namespace.values())
        assert down().removed == []  # no record: plain `down` leaves it
        result = down(all_clusters=True)
        assert result.removed == [plan.prefix] and result.namespaces == 3
        assert not netns.namespaces(plan.prefix + "-")
    finally:
        netns.delete(plan.namespace.values())


@needs_root
def test_a_signal_during_the_removal_waits_for_it(monkeypatch):
    """``timeout`` signals a whole process group: the workers die, their owner starts removing the
    cluster, and the same SIGTERM reaches it in the middle (it left namespaces behind)."""
    plan = plan_cluster(load_topology_spec("star:n=3"))
    real = lifecycle.remove

    def remove(prefix, namespaces):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(prefix, namespaces)

    monkeypatch.setattr(lifecycle, "remove", remove)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as raised:
        with Testbed(plan):
            assert len(netns.namespaces(plan.prefix + "-")) == 4
    assert raised.value.code == 128 + signal.SIGTERM
    assert not netns.namespaces(plan.prefix + "-")
    assert signal.getsignal(signal.SIGTERM) == before
