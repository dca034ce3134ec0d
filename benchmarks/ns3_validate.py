"""Validate netweave's switch simulator against ns-3 (issue 5): host-based exchange on a 16-host star.

Two scenarios at 100 Gb/s with 2 µs links, 1500-byte messages (a 1472-byte UDP payload in a
1500-byte IP packet, which is what ns-3's point-to-point device serialises):
* ``incast`` — 15 hosts each send ``K`` messages to host 0 (the down port of host 0 is the bottleneck);
* ``all-to-all`` — every host sends ``K`` messages to every other host.
netweave runs the ``host`` strategy of :mod:`netweave.ina.plan` on a boundary relation that makes
exactly these copies; ns-3 (the PyPI ``ns3`` package, optional) runs UDP clients paced at line rate
through a store-and-forward IPv4 router with drop-tail queues large enough never to drop. The
completion time is the last packet's arrival after the first send.

ns-3 lives in its own environment (it is large and slow to install):
    python3.11 -m venv /tmp/ns3env && /tmp/ns3env/bin/pip install ns3
    python benchmarks/ns3_validate.py --ns3-python /tmp/ns3env/bin/python
Writes ``benchmarks/results/ns3_validation.json`` and prints Markdown rows for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOSTS, GBPS, DELAY_US, WIRE_BYTES, UDP_PAYLOAD = 16, 100.0, 2.0, 1500, 1472
SCENARIOS = {"incast": 2000, "all-to-all": 200}  # messages per (sender, receiver) pair


def pairs(scenario: str) -> list[tuple[int, int]]:
    if scenario == "incast":
        return [(h, 0) for h in range(1, HOSTS)]
    return [(a, b) for a in range(HOSTS) for b in range(HOSTS) if a != b]


def netweave_time(scenario: str, k: int) -> float:
    import numpy as np

    from netweave.ina.boundary import BoundaryRelation
    from netweave.ina.plan import ina_plan
    from netweave.sim import sim_network, simulate
    from netweave.topology import load_topology_spec

    flows = pairs(scenario)
    # sender vertex (flow f, message i) has one neighbour, vertex (f, i) on the receiver: one copy each
    n_send = len(flows) * k
    parts = np.concatenate([np.repeat([a for a, _ in flows], k), np.repeat([b for _, b in flows], k)])
    send_ptr = np.concatenate([np.arange(n_send + 1), np.full(n_send, n_send)])
    need = np.concatenate([np.zeros(n_send, np.int64), np.ones(n_send, np.int64)])
    rel = BoundaryRelation(parts.astype(np.int64), HOSTS, send_ptr, np.arange(n_send) + n_send, need)
    plan = ina_plan(rel, "host", WIRE_BYTES, order="random", seed=0)  # receivers interleaved at random
    net = sim_network(load_topology_spec(f"star:n={HOSTS},gbps={GBPS:g},latency_us={DELAY_US:g}"))
    return simulate(plan, net).completion_time_s


def ns3_time(scenario: str, k: int) -> float:  # runs under the ns-3 interpreter
    from ns import ns

    start = 0.1
    nodes = ns.NodeContainer()
    nodes.Create(HOSTS + 1)
    switch = nodes.Get(HOSTS)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{GBPS:g}Gbps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue(f"{DELAY_US:g}us"))
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1000000p"))
    ns.InternetStackHelper().Install(nodes)
    addresses = ns.Ipv4AddressHelper()
    host_ip = []
    for h in range(HOSTS):
        devices = p2p.Install(nodes.Get(h), switch)
        addresses.SetBase(ns.Ipv4Address(f"10.1.{h}.0"), ns.Ipv4Mask("255.255.255.0"))
        host_ip.append(addresses.Assign(devices).GetAddress(0))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    flows = pairs(scenario)
    per_host = {a: sum(1 for s, _ in flows if s == a) for a, _ in flows}
    packet_s = WIRE_BYTES * 8 / (GBPS * 1e9)
    for f, (a, b) in enumerate(flows):
        port = 9000 + f
        server = ns.UdpServerHelper(port)
        server.Install(nodes.Get(b)).Start(ns.Seconds(0.0))
        client = ns.UdpClientHelper(host_ip[b].ConvertTo(), port)
        client.SetAttribute("MaxPackets", ns.UintegerValue(k))
        client.SetAttribute("Interval", ns.TimeValue(ns.NanoSeconds(packet_s * per_host[a] * 1e9)))
        client.SetAttribute("PacketSize", ns.UintegerValue(UDP_PAYLOAD))
        apps = client.Install(nodes.Get(a))
        apps.Start(ns.Seconds(start))
    monitor_helper = ns.FlowMonitorHelper()
    monitor = monitor_helper.InstallAll()
    ns.Simulator.Stop(ns.Seconds(start + 1.0))
    ns.Simulator.Run()
    last, received = 0.0, 0
    for item in monitor.GetFlowStats():
        last = max(last, item.second.timeLastRxPacket.GetSeconds())
        received += item.second.rxPackets
    ns.Simulator.Destroy()
    if received != len(flows) * k:
        raise SystemExit(f"ns-3 delivered {received} of {len(flows) * k} packets; raise the queue size")
    return last - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3-python", help="interpreter with the `ns3` package (see the module docstring)")
    ap.add_argument("--ns3-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ns3_only:
        print(json.dumps({name: ns3_time(name, k) for name, k in SCENARIOS.items()}))
        return
    ours = {name: netweave_time(name, k) for name, k in SCENARIOS.items()}
    ref = None
    if args.ns3_python:
        run = subprocess.run([args.ns3_python, __file__, "--ns3-only"], capture_output=True, text=True, check=True)
        ref = json.loads(run.stdout.strip().splitlines()[-1])
    rows = []
    for name, k in SCENARIOS.items():
        row = {"scenario": name, "hosts": HOSTS, "messages_per_pair": k, "message_bytes": WIRE_BYTES,
               "netweave_s": ours[name], "ns3_s": None if ref is None else ref[name]}
        if ref is not None:
            row["difference"] = ours[name] / ref[name] - 1
        rows.append(row)
        print(json.dumps(row), flush=True)
    (HERE / "results").mkdir(exist_ok=True)
    command = "python benchmarks/ns3_validate.py" + (f" --ns3-python {args.ns3_python}" if args.ns3_python else "")
    (HERE / "results" / "ns3_validation.json").write_text(json.dumps({"command": command, "rows": rows}, indent=1))
    for r in rows:
        ns3 = "n/a" if r["ns3_s"] is None else f"{r['ns3_s'] * 1e6:.1f}"
        diff = "" if r["ns3_s"] is None else f"{100 * r['difference']:+.1f}%"
        print(f"| {r['scenario']} | {r['messages_per_pair']} × {WIRE_BYTES} B | {r['netweave_s'] * 1e6:.1f} | {ns3} | {diff} |",
              file=sys.stderr)


if __name__ == "__main__":
    main()
