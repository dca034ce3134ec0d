"""The XDP aggregator in a switch namespace: exact sums for each precision in its container (int16,
int32, int64; vs numpy and vs the userspace state machine, bit for bit, saturating exactly at the
containers' bounds), results the size of the packets they replace, duplicates dropped, a lost
packet recovered by the agent's NACK, and a full aggregator memory falling back to the PS (needs
root, clang and libbpf: skipped otherwise)."""

import json
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from netweave.dataplane import fixedpoint
from netweave.dataplane.aggregation import AggregationState
from netweave.dataplane.packet import HEADER
from netweave.testbed import Testbed, plan_cluster
from netweave.testbed.net import netns
from netweave.testbed.agg.agent import AgentConfig
from netweave.testbed.net.ports import AGGREGATION
from netweave.testbed.agg.xdp import MAX_SLOTS, key_bytes
from netweave.topology import load_topology_spec

PORT = AGGREGATION
WORKERS = {1: "fp8", 2: "fp8", 3: "fp16", 4: "fp16", 5: "fp32", 6: "fp32"}
HOSTS = {w: f"H{w}" for w in WORKERS}
PRECISIONS = ("fp8", "fp16", "fp32")
# One worker of each precision sends first, so every key has one first packet. First packets of a
# key from two workers at once race on two CPUs, and ina_agg.bpf.c drops the loser for its timer to
# NACK: the recovery impaired_exchange's workers serve and these tests' workers do not.
SEEDERS = sorted({p: w for w, p in sorted(WORKERS.items(), reverse=True)}.values())
STAR = f"star:n={len(WORKERS) + 1}"
missing = netns.missing_requirements("clang")
pytestmark = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                reason="the XDP data plane needs " + ("; ".join(missing) or "clang"))


def ns_python(ns: str, code: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", textwrap.dedent(code)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def exchange(tmp_path, values, duplicate=False, skip=None, memory_bytes=8 << 20, misfit=False):
    """Workers H1-H6 send ``values[w]`` (T, N) as DATA packets to the PS H0 through the XDP switch S0;
    returns what the PS received ``{(kind, wor_id, tensor, precision): (values, datagram bytes)}`` and
    the agent's report (with ``ps_malformed``: datagrams the PS could not decode). ``skip=(w, t)``:
    worker w first leaves tensor t out and sends it only when NACKed. ``misfit``: worker 1 (fp8) also
    sends tensor 999 with int32-wide values, announced as fp8 (its length is not 22 + count × 2)."""
    plan = plan_cluster(load_topology_spec(STAR), scale=0.1)
    with Testbed(plan) as p:
        config = AgentConfig(agg_id=1, port=PORT, workers=WORKERS, timeout_s=0.2, memory_bytes=memory_bytes,
                             addresses={w: p.address[h] for w, h in HOSTS.items()})
        agent = subprocess.Popen(["ip", "netns", "exec", p.namespace["S0"], sys.executable, "-m",
                                  "netweave.testbed.agg.agent", config.to_json()],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert json.loads(agent.stdout.readline())["ready"], agent.stderr.read()
        ps = ns_python(p.namespace["H0"], f"""
            import json, socket
            from netweave.dataplane.packet import PacketError, decode
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("{p.address['H0']}", {PORT})); s.settimeout(30)
            print("ready", flush=True)
            got, malformed = [], 0
            try:
                while True:
                    raw = s.recv(65536)
                    s.settimeout(2.5)  # the first datagram waits for the senders' start; then 2.5 s of quiet ends it
                    try:
                        d = decode(raw)
                    except PacketError:
                        malformed += 1
                        continue
                    got.append([d.kind, d.wor_id, d.tensor_id, d.precision, d.values.tolist(), len(raw)])
            except socket.timeout:
                print(json.dumps([got, malformed]))""")
        assert ps.stdout.readline() == "ready\n", ps.stderr.read()
        senders = {}
        for w, h in HOSTS.items():
            np.save(tmp_path / f"w{w}.npy", values[w])
            held = skip[1] if skip and skip[0] == w else -1
            senders[w] = ns_python(p.namespace[h], f"""
                import socket, time, numpy as np
                from netweave.dataplane.packet import DATA, NACK, Packet, decode
                v = np.load("{tmp_path / f'w{w}.npy'}")
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("{p.address[h]}", {PORT}))
                print("ready", flush=True)
                input()
                def send(t):
                    s.sendto(Packet(DATA, 1, {w}, "{WORKERS[w]}", 0, t, v[t]).encode(), ("{p.address['H0']}", {PORT}))
                for t in range(v.shape[0]):
                    if t != {held}:
                        send(t)
                        if {duplicate}:
                            send(t)
                if {misfit and w == 1}:
                    raw = bytearray(Packet(DATA, 1, {w}, "fp16", 0, 999, v[0].astype(np.int32)).encode())
                    raw[9] = 1  # announced fp8
                    s.sendto(bytes(raw), ("{p.address['H0']}", {PORT}))
                print("sent", flush=True)
                if {held} >= 0:  # wait for the switch's NACK, then resend
                    s.settimeout(3.0)
                    d = decode(s.recv(65536))
                    assert d.kind == NACK and d.tensor_id == {held}, d
                    send({held})""")
        for s in senders.values():  # under load one worker may start seconds after another
            assert s.stdout.readline() == "ready\n", s.stderr.read()
        for phase in (SEEDERS, sorted(set(WORKERS) - set(SEEDERS))):
            for w in phase:
                senders[w].stdin.write("go\n")
                senders[w].stdin.flush()
            for w in phase:
                assert senders[w].stdout.readline() == "sent\n", senders[w].stderr.read()
            time.sleep(0.1)  # the switch has taken the seeders' packets (microseconds on a veth)
        for s in senders.values():
            assert s.wait(timeout=30) == 0, s.stderr.read()
        got, malformed = json.loads(ps.communicate(timeout=30)[0])
        report = json.loads(agent.communicate(input="", timeout=15)[0].strip().splitlines()[-1])
        report["ps_malformed"] = malformed
    assert not netns.namespaces(plan.prefix + "-")  # the cluster and the agent are gone
    return {(k, w, t, prec): (np.array(v, np.int64), size) for k, w, t, prec, v, size in got}, report


def expected(values, t):
    """The numpy sums per precision of tensor t, and the userspace state machine's, both int64."""
    state = AggregationState(dict(WORKERS))
    user = {}
    for w in sorted(WORKERS):
        r = state.accept(w, 0, t, WORKERS[w], values[w][t], now=0.0)
        if r is not None:
            user[WORKERS[w]] = r[0].astype(np.int64)
    numpy = {prec: sum(values[w][t].astype(np.int64) for w in WORKERS if WORKERS[w] == prec) for prec in PRECISIONS}
    return numpy, user


def values_for(seed, tensors=12, n=200):
    """Random values of each worker's container, within half its value range (so most sums fit)."""
    rng = np.random.default_rng(seed)
    out = {}
    for w, p in WORKERS.items():
        lo, hi = fixedpoint.value_range(p)
        out[w] = rng.integers(lo // 2, hi // 2, size=(tensors, n), endpoint=True).astype(fixedpoint.container_dtype(p))
    return out


def edges(values):
    """Tensor 0 of each precision's two workers: sums exactly at the container's bounds, one past
    them (saturated), far past them, and negative ones; fp32's int64 sums of the int57 value
    bounds neither wrap nor saturate."""
    for p in PRECISIONS:
        a, b = [w for w in WORKERS if WORKERS[w] == p]
        lo, hi = fixedpoint.value_range(p)
        values[a][0, :8] = [hi, hi, lo, lo, hi, -5, hi, lo]
        values[b][0, :8] = [0, 1, 0, -1, lo, -7, hi, lo]


def test_sums_are_exact_and_bit_identical_to_the_userspace_service(tmp_path):
    values = values_for(0)
    edges(values)
    got, report = exchange(tmp_path, values, misfit=True)
    for t in range(12):
        numpy, user = expected(values, t)
        for prec in PRECISIONS:
            xdp, size = got[2, 2, t, prec]
            assert np.array_equal(xdp, user[prec])  # bit-identical to netweave.dataplane
            assert np.array_equal(xdp, fixedpoint.saturate(numpy[prec], prec)[0])  # and to numpy
            assert size == HEADER.size + 200 * fixedpoint.value_bytes(prec)  # the result replaced the packet in place
    for prec in ("fp8", "fp16"):
        lo, hi = fixedpoint.container_range(prec)
        assert got[2, 2, 0, prec][0][:8].tolist() == [hi, hi, lo, lo, -1, -12, hi, lo]
    lo, hi = fixedpoint.value_range("fp32")
    assert got[2, 2, 0, "fp32"][0][:8].tolist() == [hi, hi + 1, lo, lo - 1, -1, -12, 2 * hi, 2 * lo]
    c = report["counters"]
    assert c["accepted"] == 72 and c["results"] == 36 and c["duplicates"] == 0 and len(got) == 36  # only RESULTs reach the PS
    assert c["saturated"] == 2  # tensor 0's fp8 and fp16 results
    assert c["mismatched"] == 1 and report["ps_malformed"] == 1  # the misfit passed the switch untouched


def test_duplicates_are_dropped_and_a_lost_packet_is_nacked_and_resent(tmp_path):
    values = values_for(1, tensors=6)
    got, report = exchange(tmp_path, values, duplicate=True, skip=(3, 4))
    for t in range(6):
        numpy, _ = expected(values, t)
        for prec in PRECISIONS:
            assert np.array_equal(got[2, 2, t, prec][0], numpy[prec])
    c = report["counters"]
    assert c["duplicates"] == 6 * 6 - 1 and c["results"] == 18 and c["timeouts"] >= 1 and report["nacks_sent"] >= 1


def test_a_full_aggregator_memory_passes_packets_to_the_ps(tmp_path):
    values = values_for(2, tensors=4)
    got, report = exchange(tmp_path, values, memory_bytes=key_bytes())  # room for one key at a time
    c = report["counters"]
    assert c["passed_full"] > 0
    for t in range(4):  # every value reached the PS: aggregated by the switch, or as the workers sent it
        numpy, _ = expected(values, t)
        for prec in PRECISIONS:
            result = [v for (k, _, tt, p), (v, _) in got.items() if k == 2 and tt == t and p == prec]
            raw = [v for (k, w, tt, p), (v, _) in got.items() if k == 1 and tt == t and p == prec]
            assert np.array_equal(sum(result + raw), numpy[prec])


def impaired_exchange(tmp_path, values, dataplane):
    """40 packets per worker through S0 (``xdp`` in the kernel, or ``user``: the userspace reference
    that the workers address) with 5 % loss, 5 % duplication and 10 % reordering on every interface.
    Returns the PS's sums ``{"tensor/precision": [...]}``, the workers' resend counts and the agent's report."""
    from netweave.testbed import Impairment

    plan = plan_cluster(load_topology_spec(STAR), scale=0.1,
                        impairment=Impairment(loss=0.05, duplicate=0.05, reorder=0.1))
    with Testbed(plan) as p:
        ps_address = (p.address["H0"], PORT)
        config = AgentConfig(agg_id=1, port=PORT, workers=WORKERS, timeout_s=0.1, address=p.address["S0"],
                             addresses={w: p.address[h] for w, h in HOSTS.items()}, dataplane=dataplane,
                             ps=ps_address)
        agent = subprocess.Popen(["ip", "netns", "exec", p.namespace["S0"], sys.executable, "-m",
                                  "netweave.testbed.agg.agent", config.to_json()],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert json.loads(agent.stdout.readline())["dataplane"] == dataplane, agent.stderr.read()
        addresses = {w: (p.address[h], PORT) for w, h in HOSTS.items()}
        target = ps_address if dataplane == "xdp" else (p.address["S0"], PORT)  # the userspace switch is addressed
        ps = ns_python(p.namespace["H0"], f"""
            import json, socket
            from netweave.testbed.agg.endpoints import Collector
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind({ps_address!r})
            c = Collector(s, {{1: (("{p.address['S0']}", {PORT}), {WORKERS!r})}}, {addresses!r})
            got = c.collect(0, 40, retry_s=0.4, timeout_s=30)
            print(json.dumps({{f"{{t}}/{{k[1]}}": v[t * {MAX_SLOTS}:(t + 1) * {MAX_SLOTS}].tolist()
                              for k, (v, _) in got.items() for t in range(40)}}))""")
        senders = []
        for w, h in HOSTS.items():
            np.save(tmp_path / f"w{w}.npy", values[w][0])
            senders.append(ns_python(p.namespace[h], f"""
                import socket, numpy as np
                from netweave.testbed.agg.endpoints import WorkerSender
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("{p.address[h]}", {PORT}))
                sender = WorkerSender(s, {w}, "{WORKERS[w]}", 1, {target!r})
                sender.send(0, np.load("{tmp_path / f'w{w}.npy'}"))
                sender.serve(quiet_s=4.0)
                print(sender.resent)"""))
        out, err = ps.communicate(timeout=90)
        resent = [int(s.communicate(timeout=60)[0]) for s in senders]
        report = json.loads(agent.communicate(input="", timeout=15)[0].strip().splitlines()[-1])
        assert ps.returncode == 0, (err, report, resent)
    return json.loads(out), resent, report


def test_exact_under_loss_duplication_and_reordering_and_equal_to_the_userspace_plane(tmp_path):
    """Lost DATA is NACKed by the switch's timer, a lost RESULT asked for again by the PS; every sum
    arrives once, equals numpy's, and the XDP and userspace data planes give the same bits."""
    values = values_for(3, tensors=1, n=MAX_SLOTS * 40)  # 40 full packets per worker
    planes = {plane: impaired_exchange(tmp_path, values, plane) for plane in ("xdp", "user")}
    for t in range(40):
        for prec in PRECISIONS:
            part = slice(MAX_SLOTS * t, MAX_SLOTS * (t + 1))
            expect = sum(values[w][0][part].astype(np.int64) for w in WORKERS if WORKERS[w] == prec)
            assert planes["xdp"][0][f"{t}/{prec}"] == planes["user"][0][f"{t}/{prec}"] == expect.tolist()
    for sums, resent, report in planes.values():
        assert sum(resent) > 0 and report["nacks_sent"] > 0  # losses happened and were recovered
        assert report["counters"]["duplicates"] > 0
