"""Benchmark: the aggregation data plane's own ceiling, XDP in the kernel vs the userspace service,
in the same run (issue 18, part 4), and the streaming aggregator of issue 31 beside the paper's
(``stream-xdp``, ``stream-user``: its probe, :mod:`netweave.testbed.agg.stream_probe`, 3 fp16
workers, 2 KiB of payload a packet, on ``star:n=4,memory=128MB``: a whole step's keys in flight). Needs root, clang and libbpf.

Three fp16 workers send ``--packets`` DATA packets each (256 values in int32 containers, 1 KiB of payload) through the
INA switch of ``star:n=4`` (scale 1: 100 Gb/s HTB classes, so the CPU is the limit) to the PS,
which collects every sum. Per data plane:

* ``ns_per_packet``: CPU time the aggregator spends per DATA packet. XDP: the kernel's own
  accounting of the program (``kernel.bpf_stats_enabled``: run_time_ns / run_cnt, every packet the
  program saw); userspace: the agent process's CPU time over the packets it aggregated.
* ``ns_per_kib``: the same per KiB of payload (the paper's packets carry 1 KiB, the stream's 2 KiB).
* ``packets_per_s_one_core`` = 1e9 / ns_per_packet and the matching ``gbps_one_core`` (payload bytes).
* ``wall_s`` and ``packets_per_s_end_to_end``: the exchange as a whole, bounded by the Python
  senders and collector, not by the data plane.

Writes ``benchmarks/results/testbed_dataplane.json`` and prints a Markdown table.
Usage: sudo python benchmarks/bench_testbed_dataplane.py [--packets 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path


from netweave.testbed import Testbed, plan_cluster
from netweave.testbed.agg.agent import AgentConfig
from netweave.testbed.agg.xdp import MAX_SLOTS
from netweave.testbed.net.ports import AGGREGATION
from netweave.topology import load_topology_spec

HERE = Path(__file__).resolve().parent
PORT = AGGREGATION
WORKERS = {1: "fp16", 2: "fp16", 3: "fp16"}
HOSTS = {1: "H1", 2: "H2", 3: "H3"}


def ns_python(ns: str, code: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", textwrap.dedent(code)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def prog_stats() -> tuple[int, int]:
    """(run_time_ns, run_cnt) summed over the loaded ina_aggregate programs."""
    out = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout)
    progs = [p for p in out if p.get("name") == "ina_aggregate"]
    return sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs)


def run(dataplane: str, packets: int) -> dict:
    plan = plan_cluster(load_topology_spec("star:n=4"), scale=1.0)
    with Testbed(plan) as p:
        ps_address = (p.address["H0"], PORT)
        config = AgentConfig(agg_id=1, port=PORT, workers=WORKERS, timeout_s=0.5, address=p.address["S0"],
                             addresses={w: p.address[h] for w, h in HOSTS.items()}, dataplane=dataplane,
                             ps=ps_address, memory_bytes=64 << 20)
        agent = subprocess.Popen(["ip", "netns", "exec", p.namespace["S0"], sys.executable, "-m",
                                  "netweave.testbed.agg.agent", config.to_json()],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        json.loads(agent.stdout.readline())
        before = prog_stats()
        addresses = {w: (p.address[h], PORT) for w, h in HOSTS.items()}
        target = ps_address if dataplane == "xdp" else (p.address["S0"], PORT)
        ps = ns_python(p.namespace["H0"], f"""
            import json, socket, time
            from netweave.testbed.net.batchio import set_receive_buffer
            from netweave.testbed.agg.endpoints import Collector
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind({ps_address!r})
            set_receive_buffer(s, 1 << 25)
            c = Collector(s, {{1: (("{p.address['S0']}", {PORT}), {WORKERS!r})}}, {addresses!r})
            print("ready", flush=True)
            c.collect(0, {packets}, retry_s=1.0, timeout_s=120)
            print(json.dumps({{"t": time.monotonic(), "counters": c.counters}}))""")
        ps.stdout.readline()
        t0 = time.monotonic()
        senders = [ns_python(p.namespace[h], f"""
            import socket, numpy as np
            from netweave.testbed.agg.endpoints import WorkerSender
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("{p.address[h]}", {PORT}))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            sender = WorkerSender(s, {w}, "fp16", 1, {target!r})
            sender.send(0, np.random.default_rng({w}).integers(-2**20, 2**20, {packets} * {MAX_SLOTS}, dtype=np.int32))
            sender.serve(quiet_s=2.0)""") for w, h in HOSTS.items()]
        out, err = ps.communicate(timeout=300)
        for s in senders:
            s.wait(timeout=60)
        after = prog_stats()  # while the agent still holds the program
        report = json.loads(agent.communicate(input="", timeout=30)[0].strip().splitlines()[-1])
    if ps.returncode:
        raise SystemExit(f"{dataplane}: the PS failed: {err.strip().splitlines()[-1]}")
    end = json.loads(out.strip().splitlines()[-1])
    wall = end["t"] - t0
    data_packets = len(WORKERS) * packets
    if dataplane == "xdp":
        ns, count = after[0] - before[0], after[1] - before[1]
    else:
        ns, count = report["agent_cpu_s"] * 1e9, report["counters"]["accepted"]
    per = ns / max(count, 1)
    return {"dataplane": dataplane, "packets": data_packets, "wall_s": wall,
            "packets_per_s_end_to_end": data_packets / wall, "ns_per_packet": per, "ns_per_kib": per,
            "packets_per_s_one_core": 1e9 / per, "gbps_one_core": 1e9 / per * MAX_SLOTS * 4 * 8 / 1e9,
            "counted_packets": count, "results": report["counters"]["results"], "nacks": report["nacks_sent"]}


def run_stream(dataplane: str, packets: int) -> dict:
    """The streaming aggregator: 3 fp16 workers, ``packets`` packets each per step, 3 steps."""
    import tempfile

    from netweave.testbed.agg.stream_probe import probe_on_testbed

    size = packets * 1024  # fp16: 1,024 values, 2 KiB, a packet
    with tempfile.TemporaryDirectory() as out:
        t0 = time.monotonic()
        report = probe_on_testbed(load_topology_spec("star:n=4,memory=128MB"), ["fp16"] * 3, out, routing="pahina",
                                  dataplane=dataplane, size=size, steps=3,
                                  scale=1.0, timeout_s=300)
        wall = time.monotonic() - t0
    agent = report["agents"]["S0"]
    data_packets = 3 * 3 * packets
    if dataplane == "xdp":
        ns, count = report["bpf"].get("stream_aggregate", (0, 0))
    else:
        ns, count = agent["agent_cpu_s"] * 1e9, agent["counters"]["accepted"]
    per = ns / max(count, 1)
    return {"dataplane": f"stream-{dataplane}", "packets": data_packets, "wall_s": wall,
            "packets_per_s_end_to_end": data_packets / wall, "ns_per_packet": per, "ns_per_kib": per / 2,
            "packets_per_s_one_core": 1e9 / per, "gbps_one_core": 1e9 / per * 2048 * 8 / 1e9,
            "counted_packets": count, "results": agent["counters"]["results"], "nacks": 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=3000, help="DATA packets per worker")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    previous = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    try:
        runs = {plane: [run(plane, args.packets) for _ in range(args.repeats)] for plane in ("xdp", "user")}
        runs |= {f"stream-{plane}": [run_stream(plane, args.packets) for _ in range(args.repeats)]
                 for plane in ("xdp", "user")}
    finally:
        Path("/proc/sys/kernel/bpf_stats_enabled").write_text(previous)
    rows = []
    for plane, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("ns_per_packet", "ns_per_kib", "packets_per_s_one_core",
                                                                   "gbps_one_core", "wall_s", "packets_per_s_end_to_end")}
        rows.append({"dataplane": plane, **med, "runs": rs})
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
            "command": f"sudo python benchmarks/bench_testbed_dataplane.py --packets {args.packets} --repeats {args.repeats}",
            "load_1min": os.getloadavg()[0]}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "testbed_dataplane.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"\n{meta['command']} — {meta['machine']}, load {meta['load_1min']:.1f}, medians of {args.repeats}\n")
    print("| data plane | ns per packet | ns per KiB | packets/s on one core | Gb/s of payload on one core | end to end (s) | end-to-end packets/s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataplane']} | {r['ns_per_packet']:,.0f} | {r['ns_per_kib']:,.0f} | {r['packets_per_s_one_core']:,.0f} | "
              f"{r['gbps_one_core']:.2f} | {r['wall_s']:.2f} | {r['packets_per_s_end_to_end']:,.0f} |")
    x, u, sx = rows[0], rows[1], rows[2]
    print(f"\nXDP costs {u['ns_per_packet'] / x['ns_per_packet']:.0f}x less CPU per packet than the userspace service; "
          f"the streaming XDP aggregator {x['ns_per_kib'] / sx['ns_per_kib']:.1f}x less per KiB than the paper's.")


if __name__ == "__main__":
    main()
