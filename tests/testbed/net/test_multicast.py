"""Parameter multicast: the distribution tree (pure), the chunked datagrams and their receiver
(loopback, no root), and the kernel's multicast forwarding in the switch namespaces (root): every
receiver gets the vector bit for bit, the PS's uplink carries one copy, a late receiver names
exactly the chunks it missed, and the routers leave nothing behind."""

import json
import socket
import struct
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.testbed import Testbed, plan_cluster
from netweave.testbed.net import batchio, netns
from netweave.testbed.net import multicast as mc
from netweave.testbed.net.ports import datagram_payload
from netweave.testbed.net.supervisor import Supervisor
from netweave.topology import load_topology_spec

missing = netns.missing_requirements()
needs_root = pytest.mark.skipif(bool(missing), reason="multicast routing needs " + "; ".join(missing))
no_mroute = mc.multicast_routing_missing()
no_clang = netns.missing_requirements("clang")
FORWARDERS = [pytest.param("kernel", marks=pytest.mark.skipif(bool(no_mroute), reason=no_mroute or "")),
              pytest.param("tc", marks=pytest.mark.skipif(bool(no_clang), reason="; ".join(no_clang)))]


def left_behind(p, switch: str, forwarder: str) -> list[str]:
    """What a switch's router left when it ended: VIFs (the kernel's), or tc filters at its ports."""
    if forwarder == "kernel":
        return netns.run(["ip", "netns", "exec", p.namespace[switch], "cat", "/proc/net/ip_mr_vif"]).splitlines()[1:]
    return [line for peer in p.neighbours(switch)
            for line in netns.run(["tc", "-n", p.namespace[switch], "filter", "show", "dev", p.interface[switch, peer],
                                   "ingress"]).splitlines()]


# -- the tree (pure) -----------------------------------------------------------------------------
def check_tree(plan, source, receivers, tree):
    """Every receiver hangs below the source through switches whose upstream leads to the source;
    each node has one parent; every switch in the tree serves some receiver."""
    parent = {}
    for s, (up, downs) in tree.items():
        assert up == plan.next_hop[s, source]
        assert downs, s
        for d in downs:
            assert (s, d) in plan.interface and d not in parent, (s, d)
            parent[d] = s
    for r in receivers:
        node, hops = r, 0
        while node != source:
            node = parent[node] if node in parent else tree[node][0] if node in tree else None
            assert node is not None and hops < 50, r
            hops += 1
    leaves = {d for _, downs in tree.values() for d in downs if d not in tree}
    assert leaves == set(receivers) - {source}


def test_tree_on_a_star():
    plan = plan_cluster(load_topology_spec("star:n=4"), scale=0.1)
    tree = mc.multicast_tree(plan, "H0", ["H1", "H2", "H3"])
    assert tree == {"S0": ("H0", ["H1", "H2", "H3"])}
    assert mc.multicast_tree(plan, "H2", ["H0"]) == {"S0": ("H2", ["H0"])}
    configs = mc.router_configs(plan, "H0", ["H1", "H3"], ["239.78.0.1", "239.78.0.2"])
    assert configs == {"S0": mc.RouterConfig(routes=tuple(
        mc.Route(plan.address["H0"], g, plan.interface["S0", "H0"], (plan.interface["S0", "H1"], plan.interface["S0", "H3"]))
        for g in ("239.78.0.1", "239.78.0.2")))}
    assert mc.RouterConfig.from_json(configs["S0"].to_json()) == configs["S0"]  # what the router process reads


def test_tree_on_a_leaf_spine():
    plan = plan_cluster(load_topology_spec("leafspine:leaves=2,spines=1,hosts=3"), scale=0.1)
    receivers = ["H1", "H2", "H3", "H4", "H5"]
    tree = mc.multicast_tree(plan, "H0", receivers)
    assert tree == {"L0": ("H0", ["S0", "H1", "H2"]), "L1": ("S0", ["H3", "H4", "H5"]), "S0": ("L0", ["L1"])}
    check_tree(plan, "H0", receivers, tree)
    assert mc.multicast_tree(plan, "H0", ["H1"]) == {"L0": ("H0", ["H1"])}  # only the switches that serve
    assert mc.multicast_tree(plan, "H4", ["H0"]) == {"L1": ("H4", ["S0"]), "S0": ("L1", ["L0"]), "L0": ("S0", ["H0"])}


def test_tree_on_a_fat_tree():
    plan = plan_cluster(load_topology_spec("fattree:k=4"), scale=0.1)
    hosts = plan.hosts
    tree = mc.multicast_tree(plan, hosts[0], hosts[1:])
    check_tree(plan, hosts[0], hosts[1:], tree)
    kinds = {n.name: n.kind for n in plan.topology.nodes}
    assert {kinds[s] for s in tree} == {kinds[s] for s in plan.switches}  # all three levels take part
    few = [hosts[1], hosts[5], hosts[-1]]
    small = mc.multicast_tree(plan, hosts[0], few)
    check_tree(plan, hosts[0], few, small)
    assert set(small) < set(tree)
    with pytest.raises(NetweaveError):
        mc.multicast_tree(plan, hosts[0], ["nope"])


def test_kernel_struct_layouts():
    assert mc.VIFCTL.size == 16 and mc.MFCCTL.size == 60 and mc.IP_MREQN.size == 12  # linux/mroute.h, in.h
    mfc = mc.MFCCTL.pack(socket.inet_aton("10.78.0.2"), socket.inet_aton("239.78.0.1"), 3, bytes([0, 1, 0, 1]) + bytes(28),
                         0, 0, 0, 0)
    assert mfc[8:10] == struct.pack("=H", 3) and mfc[10:14] == bytes([0, 1, 0, 1]) and len(mfc) == 60
    assert mc.group_address(1) == "239.78.0.1"
    with pytest.raises(NetweaveError):
        mc.group_address(255)


# -- datagrams and the receiver on loopback (no root) --------------------------------------------
def loopback_pair():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    batchio.set_receive_buffer(rx, 32 << 20)
    rx.bind(("127.0.0.1", 0))
    return socket.socket(socket.AF_INET, socket.SOCK_DGRAM), rx


def floats_that_fit(rx, datagram_bytes=mc.DATAGRAM_BYTES) -> int:
    """As many floats as the receive buffer surely holds (all of 1 MiB as root), minus a partial chunk."""
    chunks = min(723, rx.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 4096)
    return max(1, chunks - 1) * mc.floats_per_chunk(datagram_bytes) + 77


def test_datagrams_layout():
    flat = np.arange(1000, dtype=np.float32)
    rows, lengths = mc.datagrams(7, flat, datagram_bytes=420)  # 100 floats per chunk
    assert rows.shape == (10, 420) and lengths.tolist() == [420] * 10
    head = rows[:, :20].copy().view(">u4")
    assert head[:, 0].tolist() == [mc.MAGIC] * 10 and (head[:, 1] == 7).all() and head[:, 2].tolist() == list(range(10))
    assert (head[:, 3] == 10).all() and (head[:, 4] == 100).all()
    assert np.array_equal(rows[:, 20:].copy().view("<f4").ravel(), flat)
    rows, lengths = mc.datagrams(7, flat[:950], datagram_bytes=420, only=[9, 2])
    assert lengths.tolist() == [20 + 4 * 50, 420] and rows[0, 20:220].copy().view("<f4")[0] == 900
    with pytest.raises(NetweaveError):
        mc.datagrams(0, flat, datagram_bytes=420, only=[10])


@pytest.mark.parametrize("datagram_bytes", [datagram_payload(1500), mc.DATAGRAM_BYTES])  # MTU 1500 and the testbed's 3000
def test_round_trip_on_loopback(datagram_bytes):
    tx, rx = loopback_pair()
    with tx, rx:
        size = floats_that_fit(rx, datagram_bytes)
        flat = np.random.default_rng(0).standard_normal(size).astype(np.float32)
        flat[:4] = [np.nan, np.inf, -0.0, 1e-45]  # bit patterns, not just values
        sent = mc.publish(tx, 3, flat, rx.getsockname(), datagram_bytes=datagram_bytes)
        assert sent == mc.chunk_count(size, mc.floats_per_chunk(datagram_bytes))
        got, missed = mc.ParameterReceiver(rx, datagram_bytes=datagram_bytes).receive(3, size, timeout_s=5.0)
    assert missed.size == 0 and got.dtype == np.float32 and np.array_equal(got.view(np.uint32), flat.view(np.uint32))


def test_stale_steps_are_ignored_duplicates_are_harmless_newer_steps_wait():
    tx, rx = loopback_pair()
    with tx, rx:
        size = min(floats_that_fit(rx) // 4, 20000)
        v = {s: np.random.default_rng(s).standard_normal(size).astype(np.float32) for s in (1, 2, 3)}
        to = rx.getsockname()
        receiver = mc.ParameterReceiver(rx)
        mc.publish(tx, 1, v[1], to)  # stale when step 2 is asked for
        n = mc.publish(tx, 2, v[2], to, only=range(0, 3))
        mc.publish(tx, 2, v[2], to)  # chunks 0..2 twice
        mc.publish(tx, 3, v[3], to, only=[1])  # a newer step: kept
        tx.sendto(b"not ours at all", to)
        got, missed = receiver.receive(2, size, timeout_s=1.0)
        c = receiver.counters
        assert missed.size == 0 and np.array_equal(got, v[2])
        assert c.stale == mc.chunk_count(size, receiver.per) and c.duplicates == n and c.foreign == 1 and c.ahead == 1
        mc.publish(tx, 3, v[3], to, only=[i for i in range(mc.chunk_count(size, receiver.per)) if i != 1])
        got, missed = receiver.receive(3, size, timeout_s=2.0)
        assert missed.size == 0 and np.array_equal(got, v[3])  # chunk 1 came while step 2 was received


def test_missing_chunks_are_reported_exactly_and_the_rest_is_right():
    tx, rx = loopback_pair()
    with tx, rx:
        size = min(floats_that_fit(rx), 30000)
        flat = np.random.default_rng(9).standard_normal(size).astype(np.float32)
        receiver = mc.ParameterReceiver(rx)
        n = mc.chunk_count(size, receiver.per)
        skipped = [0, 5, n - 1]
        mc.publish(tx, 1, flat, rx.getsockname(), only=[i for i in range(n) if i not in skipped])
        t0 = time.monotonic()
        got, missed = receiver.receive(1, size, timeout_s=0.3)
        assert time.monotonic() - t0 >= 0.25  # waited for the rest until the timeout
    assert missed.tolist() == skipped
    per = receiver.per
    mask = np.ones(size, bool)
    for i in skipped:
        mask[i * per:(i + 1) * per] = False
    assert np.array_equal(got[mask], flat[mask]) and not got[~mask].any()


# -- through the switches (root) -----------------------------------------------------------------
def ns_python(ns: str, code: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", textwrap.dedent(code)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stat(plan, node, peer, name) -> int:
    dev = plan.interface[node, peer]
    return int(netns.run(["ip", "netns", "exec", plan.namespace[node], "cat",
                          f"/sys/class/net/{dev}/statistics/{name}"]).strip())


def ask(proc: subprocess.Popen, line: str | None = None) -> str:
    if line is not None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
    out = proc.stdout.readline()
    assert out, proc.stderr.read() if proc.poll() is not None else "no answer"
    return out.strip()


def exchange(tmp_path, spec, ps, receivers, late=None, size=262144, port=47100, forwarder="auto"):
    """The PS publishes ``size`` float32 (1 MiB) as step 1 through the switches' multicast routes
    to ``receivers``; ``late`` joins after the first half of the chunks was sent. Returns what
    each receiver got and measured, the PS's counters and the routers' reports."""
    plan = plan_cluster(load_topology_spec(spec), scale=0.1)
    group = mc.group_address(1)
    flat = np.random.default_rng(1).standard_normal(size).astype(np.float32)
    np.save(tmp_path / "flat.npy", flat)
    with Testbed(plan) as p:
        uplink = {h: next(peer for peer in p.neighbours(h)) for h in [ps, *receivers]}
        with Supervisor(15.0) as supervisor:
            routers = mc.start_routers(supervisor, p, ps, receivers, [group], forwarder)
            procs = {}
            for r in receivers:
                procs[r] = ns_python(p.namespace[r], f"""
                    import json, sys, numpy as np
                    from netweave.testbed.net import multicast as mc
                    print("started", flush=True)
                    if {r == late}:
                        sys.stdin.readline()
                    sock = mc.receiver_socket("{group}", {port}, "{p.interface[r, uplink[r]]}")
                    rx = mc.ParameterReceiver(sock)
                    print("joined", flush=True)
                    sys.stdin.readline()
                    flat, missing = rx.receive(1, {size}, timeout_s=float(sys.stdin.readline()))
                    np.save("{tmp_path}/{r}.npy", flat)
                    print(json.dumps({{"missing": missing.tolist(), "counters": rx.counters.__dict__}}), flush=True)""")
            for r, proc in procs.items():
                assert ask(proc) == "started"
                if r != late:
                    assert ask(proc) == "joined"
            sender = ns_python(p.namespace[ps], f"""
                import json, sys, numpy as np
                from netweave.testbed.net import multicast as mc
                flat = np.load("{tmp_path}/flat.npy")
                sock = mc.publisher_socket("{p.address[ps]}", "{p.interface[ps, uplink[ps]]}")
                n = mc.chunk_count(flat.size, mc.floats_per_chunk())
                for line in sys.stdin:
                    a, b = map(int, line.split())
                    rows, lengths = mc.datagrams(1, flat, only=range(a, min(b, n)))
                    sent = mc.publish(sock, 1, flat, ("{group}", {port}), only=range(a, min(b, n)))
                    print(json.dumps({{"chunks": n, "sent": sent, "bytes": int(lengths.sum())}}), flush=True)""")
            before = {"ps_tx": stat(p, ps, uplink[ps], "tx_bytes"),
                      **{r: stat(p, r, uplink[r], "rx_bytes") for r in receivers}}
            n = mc.chunk_count(size, mc.floats_per_chunk())
            half = n // 2 if late else n
            first = json.loads(ask(sender, f"0 {half}"))
            second = {"sent": 0, "bytes": 0}
            if late:
                time.sleep(0.3)  # the first half has passed the late receiver's link
                assert ask(procs[late], "") == "joined"
                second = json.loads(ask(sender, f"{half} {n}"))
            time.sleep(0.3)
            after = {"ps_tx": stat(p, ps, uplink[ps], "tx_bytes"),
                     **{r: stat(p, r, uplink[r], "rx_bytes") for r in receivers}}
            results = {}
            for r, proc in procs.items():
                proc.stdin.write("go\n" + ("1.0" if r == late else "10.0") + "\n")
                proc.stdin.flush()
            for r, proc in procs.items():
                out, err = proc.communicate(timeout=60)
                assert proc.returncode == 0, err
                results[r] = json.loads(out.strip().splitlines()[-1])
                results[r]["flat"] = np.load(tmp_path / f"{r}.npy")
            sender.communicate(input="", timeout=30)
            assert sender.returncode == 0
            reports = {switch: supervisor.finish(role) for switch, role in routers.items()}
        procs_ended = all(proc.returncode == 0 for proc in [*procs.values(), sender])
        router_rcs = {s: role.proc.returncode for s, role in routers.items()}
        left = {s: left_behind(p, s, forwarder) for s in routers}
    assert not netns.namespaces(plan.prefix + "-")  # the Testbed removed everything
    delta = {k: after[k] - before[k] for k in after}
    copy = first["bytes"] + second["bytes"] + (first["sent"] + second["sent"]) * (20 + 8 + 14)  # IP, UDP, Ethernet
    return {"plan": plan, "flat": flat, "results": results, "delta": delta, "copy": copy, "chunks": n, "half": half,
            "sent": first["sent"] + second["sent"], "reports": reports, "router_rcs": router_rcs,
            "left": left, "procs_ended": procs_ended, "tree": mc.multicast_tree(plan, ps, receivers)}


def assert_one_copy(measured: int, copy: int):
    assert copy <= measured <= copy * 1.01 + 2000, (measured, copy)  # + the odd IGMP report


@needs_root
@pytest.mark.parametrize("forwarder", FORWARDERS)
def test_star_every_worker_gets_it_bit_identical_and_the_ps_link_carries_one_copy(tmp_path, forwarder):
    """Through the kernel's multicast routing, and through the tc-BPF forwarder that stands in for
    it on a kernel built without it: the same counters, the same copies."""
    out = exchange(tmp_path, "star:n=4", "H0", ["H1", "H2", "H3"], forwarder=forwarder)
    n, flat = out["chunks"], out["flat"]
    assert out["sent"] == n == 356  # 1 MiB in datagrams of 738 floats (the testbed's MTU)
    for r, res in out["results"].items():
        assert res["missing"] == [], r
        assert np.array_equal(res["flat"].view(np.uint32), flat.view(np.uint32)), r
        assert_one_copy(out["delta"][r], out["copy"])  # each worker's downlink: one copy
    assert_one_copy(out["delta"]["ps_tx"], out["copy"])  # the PS's uplink: one copy, not three
    vifs = out["reports"]["S0"]["vifs"]
    plan = out["plan"]
    assert vifs[plan.interface["S0", "H0"]]["pkts_in"] == n
    for r in ("H1", "H2", "H3"):
        assert vifs[plan.interface["S0", r]]["pkts_out"] == n
    (entry,) = out["reports"]["S0"]["cache"]
    assert entry["group"] == "239.78.0.1" and entry["origin"] == plan.address["H0"] and entry["pkts"] == n
    assert entry["wrong_if"] == 0
    assert entry["bytes"] == out["copy"] - 14 * n  # IP datagrams (no Ethernet header), as the kernel counts them
    assert out["router_rcs"] == {"S0": 0} and out["procs_ended"]
    assert out["left"]["S0"] == []  # MRT_DONE removed the VIFs; or the forwarder its filters


@needs_root
@pytest.mark.parametrize("forwarder", FORWARDERS)
def test_two_level_tree_and_a_late_receiver_names_exactly_what_it_missed(tmp_path, forwarder):
    receivers = ["H1", "H2", "H3", "H4", "H5"]
    out = exchange(tmp_path, "leafspine:leaves=2,spines=1,hosts=3", "H0", receivers, late="H5", forwarder=forwarder)
    n, half, flat, plan = out["chunks"], out["half"], out["flat"], out["plan"]
    per = mc.floats_per_chunk()
    for r in receivers[:-1]:
        res = out["results"][r]
        assert res["missing"] == [] and np.array_equal(res["flat"].view(np.uint32), flat.view(np.uint32)), r
    late = out["results"]["H5"]
    assert late["missing"] == list(range(half))
    assert np.array_equal(late["flat"][half * per:], flat[half * per:]) and not late["flat"][:half * per].any()
    assert_one_copy(out["delta"]["ps_tx"], out["copy"])
    for r in receivers:
        assert_one_copy(out["delta"][r], out["copy"])  # the switch forwards to H5 before it joins too
    assert set(out["reports"]) == {"L0", "S0", "L1"}
    for switch, (up, downs) in out["tree"].items():
        vifs = out["reports"][switch]["vifs"]
        assert vifs[plan.interface[switch, up]]["pkts_in"] == n and vifs[plan.interface[switch, up]]["pkts_out"] == 0
        for d in downs:
            assert vifs[plan.interface[switch, d]]["pkts_out"] == n, (switch, d)
    assert all(rc == 0 for rc in out["router_rcs"].values()) and out["procs_ended"]
    assert all(lines == [] for lines in out["left"].values())  # no VIF or filter left in any switch


@needs_root
@pytest.mark.parametrize("forwarder", FORWARDERS)
def test_a_router_ends_on_sigterm_with_its_counters_and_refuses_a_bad_config(forwarder):
    import os
    import signal

    plan = plan_cluster(load_topology_spec("star:n=4"), scale=0.1)
    with Testbed(plan) as p:
        config = mc.router_configs(p, "H0", ["H1"], [mc.group_address(2)], forwarder)["S0"]
        proc = subprocess.Popen(["ip", "netns", "exec", p.namespace["S0"], sys.executable, "-m",
                                 "netweave.testbed.net.multicast", config.to_json()],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = json.loads(proc.stdout.readline())
        assert ready["ready"] and ready["routes"] == 1 and set(ready["vifs"]) == {"e0", "e1", "e2", "e3"}
        assert ready["forwarder"] == forwarder
        os.kill(proc.pid, signal.SIGTERM)  # our own process, by its PID
        out, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        (entry,) = report["cache"]
        assert entry["group"] == "239.78.0.2" and set(entry["oifs"]) == {str(ready["vifs"][p.interface["S0", "H1"]])}
        bad = mc.RouterConfig(routes=(replace(config.routes[0], oifs=("nope0",)),))
        done = subprocess.run(["ip", "netns", "exec", p.namespace["S0"], sys.executable, "-m",
                               "netweave.testbed.net.multicast", bad.to_json()], capture_output=True, text=True, timeout=30)
        assert done.returncode != 0 and "nope0" in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert left_behind(p, "S0", forwarder) == []


def test_a_kernel_without_multicast_routing_is_told_apart(tmp_path):
    """A kernel built without CONFIG_IP_MROUTE has no multicast routing table: the routers then
    forward in tc-BPF (``forwarder="auto"``); a bad forwarder is one line."""
    assert mc.multicast_routing_missing(str(tmp_path / "ip_mr_vif")) == mc.NO_MROUTE
    (tmp_path / "ip_mr_vif").write_text("Interface      BytesIn  PktsIn  BytesOut PktsOut Flags Local    Remote\n")
    assert mc.multicast_routing_missing(str(tmp_path / "ip_mr_vif")) is None
    with pytest.raises(NetweaveError, match="multicast forwarder 'xdp': use auto, kernel or tc"):
        mc.router([], [], "xdp")
