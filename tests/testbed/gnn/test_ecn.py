"""ECN marking at the switch's ports (testbed/gnn/bpf/ecn_mark.bpf.c, switchgnn.txt §3.4/§4)
against a closed form: a burst of SwitchGNN packets through a port whose emulated queue does not
drain (its rate set to 1 kbit/s) is marked from the first packet that finds more than the
threshold queued; through a port that drains faster than anything arrives, none is. Needs root,
clang and libbpf."""

import shutil
import subprocess
import sys
import textwrap

import pytest

from netweave.testbed.net import netns

missing = netns.missing_requirements("clang")
needs_root = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                reason="ECN marking needs " + "; ".join(missing or ["clang"]))

MARKER = textwrap.dedent("""
    import json, sys
    from netweave.testbed.gnn.ecn import EcnMarker
    marker = EcnMarker({sys.argv[1]: int(sys.argv[2])}, int(sys.argv[3]))
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps(marker.counters()), flush=True)
    marker.close()
""")
SENDER = textwrap.dedent("""
    import socket, sys
    import numpy as np
    from netweave.testbed.gnn.packet import COPY, build
    from netweave.testbed.net import batchio
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, 11, 1)  # SO_NO_CHECK: no UDP checksum, as the switch sends
    rows, lengths = build(COPY, layer=0, direction=0, seq=1, block=0, sender=0, unit=np.arange(int(sys.argv[3])),
                          chunk=0, values=np.ones((int(sys.argv[3]), 250), np.float32))
    batchio.send_batch(sock, rows, lengths, (sys.argv[1], int(sys.argv[2])))
""")
RECEIVER = textwrap.dedent("""
    import json, socket, sys
    import numpy as np
    from netweave.testbed.gnn.packet import ECN, parse
    from netweave.testbed.net import batchio
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((sys.argv[1], int(sys.argv[2])))
    print("ready", flush=True)
    rows, lengths = np.zeros((256, 1100), np.uint8), np.zeros(256, np.int64)
    units, flags = [], []
    while len(units) < int(sys.argv[3]):
        k = batchio.recv_batch(sock, rows, lengths, 20.0)
        if k <= 0:
            break
        head, _ = parse(rows, lengths, k)
        units += head["unit"].tolist()
        flags += head["flags"].tolist()
    print(json.dumps({"marked": sorted(u for u, f in zip(units, flags) if f & ECN), "got": len(units)}), flush=True)
""")


def _python(namespace, script, *args):
    return subprocess.Popen(["ip", "netns", "exec", namespace, sys.executable, "-c", script, *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _burst(rate_kbit: int, threshold: int, n: int) -> tuple[dict, dict]:
    import json

    from netweave.testbed.net.cluster import plan_cluster
    from netweave.testbed.net.lifecycle import Testbed
    from netweave.topology import load_topology_spec

    with Testbed(plan_cluster(load_topology_spec("star:n=2,gbps=1"))) as cluster:
        sw, (h0, h1) = cluster.switches[0], cluster.hosts
        marker = _python(cluster.namespace[sw], MARKER, cluster.interface[sw, h1], rate_kbit, threshold)
        receiver = _python(cluster.namespace[h1], RECEIVER, cluster.address[h1], 47399, n)
        try:
            for p in (marker, receiver):
                assert p.stdout.readline().strip() == "ready", p.stderr.read()
            sender = _python(cluster.namespace[h0], SENDER, cluster.address[h1], 47399, n)
            assert sender.wait(timeout=60) == 0, sender.stderr.read()
            got = json.loads(receiver.communicate(timeout=60)[0])
            counters = json.loads(marker.communicate("\n", timeout=60)[0])
        finally:
            for p in (marker, receiver):
                if p.poll() is None:
                    p.kill()
                    p.wait()
    return got, counters


@needs_root
@pytest.mark.slow
def test_a_queue_over_the_threshold_marks_every_packet_that_joins_it():
    n, threshold = 60, 20_000
    got, counters = _burst(1, threshold, n)
    size = 14 + 20 + 8 + 28 + 4 * 250  # a frame at the port: Ethernet, IPv4, UDP, the header, 250 values
    first = threshold // size + 1  # packet i finds i * size bytes queued (nothing drains at 1 kbit/s)
    assert got["got"] == n
    assert got["marked"] == list(range(first, n))  # units 19 … 59
    assert counters["marked"] == n - first and counters["unmarkable"] == 0


@needs_root
@pytest.mark.slow
def test_a_queue_that_drains_marks_nothing():
    got, counters = _burst(100_000_000, 20_000, 60)  # 100 Gb/s: 1,070 bytes drain in 86 ns
    assert got["got"] == 60 and got["marked"] == [] and counters["marked"] == 0 and counters["seen"] >= 60
