"""GCN training through the emulated SwitchGNN switch against the peer-to-peer (BNS-GCN) exchange
on the same emulated star (switchgnn.txt §5, issues 19 and 32).

For each dataset and link rate, 8 workers train GCN (``--layers`` layers, ``--hidden`` units,
METIS) on ``star:n=8`` with every link at ``--gbps`` (HTB on the veths, scale 1), in one
invocation with ``--exchange ina`` through the switch's kernel data plane (``--dataplane xdp``:
tc-BPF, gnn/bpf/gnn_switch.bpf.c; ``--memory``, §3.3 blocks) and with ``p2p``; at the rates of
``--user-gbps`` also through the userspace agent (``--dataplane user``, the reference). Per run:
the epoch time (the slowest worker; median over the epochs after the first), the exchange time,
the exchange bytes the workers sent and received (headers included), the veths' byte counters,
the switch's counters, per epoch what bound it (the testbed's CPU-vs-link accounting:
``network`` when the busiest link was busy >= 80 % of the epoch less its compute), the time the
exchanges waited for the last worker to begin them (``straggler_s``: other workers' compute), the
largest difference of the final logits from single-process training, and the simulator's predicted
exchange per epoch for the same plans, star and rate (:mod:`netweave.testbed.gnn.predict`, computed
after the timed runs), beside the measured exchange with and without those waits.
The data plane's own ceiling: the kernel's BPF run-time statistics of ``gnn_switch`` (ns of CPU per
packet, packets per second on one core) beside the userspace agent's aggregation CPU time (its
thread's; its wall time beside it, which also counts the waits for a CPU the workers held) per
equivalent packet (a chunk of 512 values). ``uptime`` before and after every run. INA's
shortest epoch these CPUs allow (``ina_epoch_cpu_floor_s``: its measured CPU work an epoch over the
cores that did it, :func:`netweave.testbed.net.accounting.cpu_floor_s`) beside the bound: where it
lies above (``bound_within_cpus`` false), no schedule meets the bound on this machine unless INA's
work an epoch shrinks by ``cpu_work_to_shed``.

    sudo .venv/bin/python benchmarks/bench_testbed_gnn.py            # results/testbed_gnn_kernel.json + .png
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

from netweave.errors import NetweaveError

from testbed_datasets import DATASETS

RESULTS = Path(__file__).parent / "results"


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def uptime() -> str:
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def ceiling(switch: dict) -> dict:
    """The data plane's cost per packet: the kernel's (BPF run-time statistics) or the userspace
    agent's (its aggregation CPU time per chunk of 512 values, the kernel plane's packet; its wall
    time beside it)."""
    if switch.get("bpf_run_cnt"):  # a unit handed to shards runs the program again on each: one packet
        packets = switch["bpf_run_cnt"] - switch.get("kernel_sharded", 0)
        ns = switch["bpf_run_time_ns"] / packets
        return {"dataplane": "kernel (tc-BPF)", "packets": packets, "ns_per_packet": ns,
                "packets_per_s_one_core": 1e9 / ns, "cpu_s": switch["bpf_run_time_ns"] / 1e9}
    if switch.get("unit_values"):
        packets = switch["unit_values"] / 512
        ns = switch["aggregate_s"] * 1e9 / packets
        wall = {"wall_ns_per_packet": switch["aggregate_wall_s"] * 1e9 / packets} if "aggregate_wall_s" in switch else {}
        return {"dataplane": "userspace agent", "packet_equivalents": packets, "ns_per_packet": ns,
                "packets_per_s_one_core": 1e9 / ns, "cpu_s": switch["aggregate_s"], **wall}
    return {}


def run_one(spec: str, exchange: str, args, dataplane: str = "xdp", **options) -> dict:
    """One run of ``train_gnn_on_testbed`` (``options``: its other keywords) and what it measured."""
    from netweave.testbed.gnn import train_gnn_on_testbed

    before, up_before, t0 = load(), uptime(), time.perf_counter()
    r = train_gnn_on_testbed(spec, workers=args.workers, exchange=exchange, memory_bytes=args.memory, gbps=args.gbps,
                             epochs=args.epochs, hidden=args.hidden, layers=args.layers, blocking=args.blocking,
                             seed=args.seed, timeout_s=300, dataplane=dataplane, overlap=args.overlap,
                             transform_first=not args.aggregate_first, grad_chunk=args.grad_chunk,
                             pin_switch=not args.no_pin_switch, switch_cpus=args.switch_cpus,
                             isolate_switch=not args.share_switch_cpus, overlap_local=not args.no_overlap_local,
                             column_slices=args.column_slices, **options)
    s = r.summary()
    return {"exchange": exchange, "dataplane": r.dataplane, "switch_cpu": r.switch_cpu, "switch_cpus": r.switch_cpus,
            "shard_cpus": r.shard_cpus, "host_cpus": r.host_cpus,
            "load_before": before, "load_after": load(),
            "uptime_before": up_before, "uptime_after": uptime(), "scale": 1.0, "wall_s": time.perf_counter() - t0,
            "bound": s["bound"], "ceiling": ceiling(r.switch),
            "transport": r.transport, "background": r.background,
            "median_epoch_s": s["median_epoch_s"], "median_exchange_s": s["median_exchange_s"],
            "median_straggler_s": s["median_straggler_s"], "median_compute_s": s["median_compute_s"],
            "median_exchange_sent_bytes": s["median_exchange_bytes"],
            "median_exchange_received_bytes": s["median_exchange_received_bytes"],
            "max_logit_diff": s["max_logit_diff"], "veth_run_bytes": r.veth, "switch": r.switch,
            "planned": r.planned, "epochs": r.epochs}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rates = list(results["rates"])
    agent = any("ceiling" in d for rate in rates for d in results["rates"][rate]["datasets"].values())
    fig, axes = plt.subplots(len(rates), 4 if agent else 3, figsize=(17 if agent else 13, 3.6 * len(rates)),
                             squeeze=False)
    labels = {"p2p": "p2p (BNS-GCN)", "ina": "INA (SwitchGNN switch in the kernel)",
              "ina_user": "INA (the userspace agent, the reference)"}
    colors = dict(zip(labels, ("C0", "C1", "C2")))
    for row, rate in zip(axes, rates):
        data = results["rates"][rate]["datasets"]
        names = list(data)
        x = np.arange(len(names))
        series = [ex for ex in labels if all(ex in data[n] for n in names)]  # the agent: at --user-gbps only
        width = 0.76 / len(series)
        offset = {ex: (i - (len(series) - 1) / 2) * width for i, ex in enumerate(series)}  # a bar's, from its tick
        for ex in series:
            runs = [data[n][ex] for n in names]
            label, color, at_x = labels[ex], colors[ex], x + offset[ex]
            row[0].bar(at_x, [r["median_epoch_s"] for r in runs], width, label=label, color=color)
            row[1].bar(at_x, [r["median_exchange_s"] for r in runs], width, label=label, color=color)
            waits = [r.get("median_straggler_s") or 0.0 for r in runs]  # the exchange's wait for the last worker
            row[1].bar(at_x, waits, width, fill=False, hatch="//", edgecolor="k", linewidth=0,
                       label="of it: waiting for the last worker" if ex == "ina" and any(waits) else None)
            at = [(j, w + r["predicted_exchange_s"]) for j, (r, w) in enumerate(zip(runs, waits))
                  if r.get("predicted_exchange_s")]
            for k, (j, y) in enumerate(at):  # the simulator's exchange begins when the last worker's does
                row[1].hlines(y, at_x[j] - 0.5 * width, at_x[j] + 0.5 * width, colors="k",
                              label=("the wait + " if any(waits) else "") + "the simulator's exchange"
                              if ex == "ina" and k == 0 else None)
            row[2].bar(at_x, [(r["median_exchange_sent_bytes"] + r["median_exchange_received_bytes"]) / 1e6
                              for r in runs], width, label=label, color=color)
        if all("ceiling" in data[n] for n in names):  # the data plane's ceiling: CPU an aggregated edge, both planes
            for i, (key, ex) in enumerate((("kernel_ns_per_edge", "ina"), ("agent_ns_per_edge", "ina_user"))):
                bars = row[3].bar(x + (i - 0.5) * 0.38, [data[n]["ceiling"][key] for n in names], 0.38,
                                  label=labels[ex], color=colors[ex])
                row[3].bar_label(bars, fmt="%.0f", fontsize=7)
        elif agent:
            row[3].set_axis_off()  # no agent at this rate (or results from before 2026-12-08)
        for key, style, label in (("bound_epoch_s", "-", "bound: p2p × (bytes + 0.15)"),
                                  ("ina_epoch_floor_s", "--", "INA at best: rest + sim. exchange"),
                                  ("ina_epoch_cpu_floor_s", ":", "INA at best on these CPUs: its CPU work over them")):
            at = [(j, data[n][key]) for j, n in enumerate(names) if key in data[n]]
            for k, (j, y) in enumerate(at):  # a mark over INA's bar, as wide as 0.46 of a tick
                row[0].hlines(y, j + offset["ina"] - 0.23, j + offset["ina"] + 0.23, colors="k", linestyles=style,
                              label=label if k == 0 else None)
        for ax, title in zip(row, ("epoch time (s, median)", "exchange s per worker (median)",
                                   "exchange MB per epoch (up + down)", "switch CPU ns per aggregated edge")):
            if not ax.axison:
                continue
            ax.set_xticks(x, names)
            ax.set_title(f"{float(rate):g} Gb/s links: {title}", fontsize=9)
            ax.set_ylim(top=ax.get_ylim()[1] * (1.8 if ax is row[0] else 1.4))  # room for the legend above the bars
            ax.legend(fontsize=7, loc="upper left")
    wire = "h W on the wire" if results.get("transform_first") else "layer inputs h on the wire"
    if "pin_switch" in results:
        cpus = results.get("switch_cpus", 1)
        where = (f"{cpus} CPUs (sharded)" if cpus > 1 else "one CPU") if results["pin_switch"] else "any CPU"
        wire += (f", switch on {where}, gradients "
                 f"{'streamed' if results.get('grad_chunk') else 'in one message'}")
    k = results.get("column_slices", 1)
    wire += {1: "", 0: ", INA's rows in column slices where the model says"}.get(k, f", INA's rows in {k} column slices")
    fig.suptitle(f"GCN ({results['layers']} layers, {results['hidden']} hidden), {results['workers']} workers on an "
                 f"emulated star (netns + HTB), switch memory {results['memory_bytes'] / 1e6:g} MB "
                 f"({results['blocking']} blocks)\n{wire}\n{results.get('machine', '')}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))  # the title (three lines) above the top row's
    fig.savefig(path, dpi=100)


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the architecture: a cell's cost differs by 1.7x
    between two VMs of this project (BENCHMARKS.md issue 32)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS))
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--gbps", type=float, nargs="*", default=[0.025, 0.1, 0.25])
    ap.add_argument("--user-gbps", type=float, nargs="*", default=[0.25],
                    help="rates at which the userspace agent runs too (the data plane's ceiling beside the kernel's)")
    ap.add_argument("--overlap", action="store_true", help="double-buffered blocks (plan.overlap)")
    ap.add_argument("--aggregate-first", action="store_true",
                    help="exchange each layer's input h (d_in values a row) instead of h W where the layer narrows")
    ap.add_argument("--grad-chunk", type=int, default=None,
                    help="gradient values a message to the switch agent (0: the whole gradient in one message; "
                         "default: netweave.testbed.gnn.wire.GRAD_CHUNK)")
    ap.add_argument("--no-pin-switch", action="store_true",
                    help="the kernel data plane on whichever CPU a packet arrives (default: on one CPU, the last)")
    ap.add_argument("--switch-cpus", type=int, default=0,
                    help="CPUs the switch's aggregators are spread over (0: one for each CPU the workers leave free)")
    ap.add_argument("--share-switch-cpus", action="store_true",
                    help="the workers and the agent on any CPU (default: on those the switch's shards leave free, "
                         "where they are at least one a worker)")
    ap.add_argument("--no-overlap-local", action="store_true",
                    help="each worker sums its own neighbours' rows after its exchange (default: while it is on the wire)")
    ap.add_argument("--column-slices", type=int, default=0,
                    help="INA sends each row as this many column slices, slice by slice (1: whole rows; 0: where "
                         "the model says the sums come down sooner)")
    ap.add_argument("--no-predict", action="store_true", help="skip the simulator's predictions")
    ap.add_argument("--predict-budget-s", type=float, default=900,
                    help="stop predicting (what is left is marked skipped) after this many seconds")
    ap.add_argument("--memory", type=int, default=10_000_000)
    ap.add_argument("--blocking", default="paper")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS / "testbed_gnn_kernel.json"))
    ap.add_argument("--predict-into", nargs="*", metavar="JSON", default=[],
                    help="run nothing: add the simulator's predictions (and the floor) to these results, measured "
                         "with --no-predict (e.g. on another machine), with the settings they record")
    args = ap.parse_args()
    for path in args.predict_into:
        predict_into(Path(path), args)
    if args.predict_into:
        return
    if args.grad_chunk is None:
        from netweave.testbed.gnn.wire import GRAD_CHUNK

        args.grad_chunk = GRAD_CHUNK
    if args.switch_cpus == 0:  # what the runs will take, recorded (and given to the simulator) as such
        from netweave.testbed.gnn.launch import auto_switch_cpus

        args.switch_cpus = auto_switch_cpus(len(os.sched_getaffinity(0)), args.workers, not args.no_pin_switch)
    results = {"machine": f"{platform.node()} {platform.machine()}, {_cpu_model()}, {os.cpu_count()} cores",
               "workers": args.workers,
               "memory_bytes": args.memory, "blocking": args.blocking, "epochs": args.epochs,
               "hidden": args.hidden, "layers": args.layers, "overlap": args.overlap,
               "transform_first": not args.aggregate_first, "grad_chunk": args.grad_chunk,
               "pin_switch": not args.no_pin_switch, "switch_cpus": args.switch_cpus,
               "isolate_switch": not args.share_switch_cpus, "overlap_local": not args.no_overlap_local,
               "column_slices": args.column_slices, "scale": 1.0, "cpus": os.cpu_count(),
               "packets": {"units": "several a packet", "sums": "held" if not args.no_pin_switch else "one a packet"},
               "rates": {}}
    rates = args.gbps
    for gbps in rates:
        args.gbps = gbps
        results["rates"][str(gbps)] = run_rate(args)
        Path(args.out).write_text(json.dumps(results, indent=1))  # what is done so far
    if not args.no_predict:
        predict_all(results, args, rates)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    plot(results, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


def predict_into(path: Path, args) -> None:
    """:func:`predict_all` for results already measured: the simulator's exchange depends on the
    plan, the star and the rate only, not on the machine that ran the workers."""
    results = json.loads(path.read_text())
    args.workers, args.memory, args.blocking = results["workers"], results["memory_bytes"], results["blocking"]
    args.hidden, args.layers, args.overlap = results["hidden"], results["layers"], results["overlap"]
    args.aggregate_first, args.out = not results["transform_first"], str(path)
    args.no_pin_switch, args.switch_cpus = not results.get("pin_switch", True), results.get("switch_cpus", 1)
    args.packets = results.get("packets")  # absent: measured a row a packet (before 2026-11-26)
    args.column_slices = results.get("column_slices", 1)
    rates = [float(r) for r in results["rates"]]
    args.datasets = list(results["rates"][str(rates[0])]["datasets"])
    cores = results.get("cpus") or int(re.search(r"(\d+) cores", results["machine"]).group(1))
    for gbps, rate in results["rates"].items():  # needs no simulator: what the run's own accounting recorded
        for name, entry in rate["datasets"].items():
            if "ina" in entry and "bound_epoch_s" in entry:
                print(f"{float(gbps):g} Gb/s {name}: {cpu_floor(entry, cores)}", flush=True)
    predict_all(results, args, rates)
    path.write_text(json.dumps(results, indent=1))  # the floors too, where every prediction was skipped
    plot(results, path.with_suffix(".png"))
    print(f"wrote {path} and {path.with_suffix('.png')}")


def busiest_share(ina: dict) -> float:
    """The share of a pinned switch's work its busiest CPU did (the program's timed parts, per CPU:
    ``kernel_busiest_cpu_ns``, recorded since 2026-11-27), else an even share of its CPUs: the
    busiest shard, not the average, bounds the exchange."""
    from netweave.testbed.gnn.kswitch import TIMED

    sw = ina.get("switch", {})
    timed = sum(sw.get(f"kernel_{k}", 0) for k in TIMED)
    busiest = sw.get("kernel_busiest_cpu_ns", 0)
    ina["switch_busiest_share"] = busiest / timed if busiest and timed else 1 / ina.get("switch_cpus", 1)
    return ina["switch_busiest_share"]


def predict_all(results: dict, args, rates) -> None:
    """The simulator's exchange per epoch beside each measured one (after every timed run)."""
    import tempfile

    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.predict import predict_epoch_exchange_s

    start = time.perf_counter()
    for name in args.datasets:
        spec = results["rates"][str(rates[0])]["datasets"][name]["spec"]
        if time.perf_counter() - start > args.predict_budget_s:
            print(f"prediction of {name} skipped (budget)", flush=True)
            continue
        with tempfile.TemporaryDirectory() as d:
            job = prepare_gnn_job(spec, args.workers, args.memory, d, hidden=args.hidden, layers=args.layers,
                                  seed=args.seed, blocking=args.blocking, overlap=args.overlap,
                                  transform_first=not args.aggregate_first, column_slices=args.column_slices)
            for gbps in rates:
                if time.perf_counter() - start > args.predict_budget_s:
                    print(f"prediction of {name} at {gbps:g} Gb/s skipped (budget)", flush=True)
                    continue
                t0 = time.perf_counter()
                packing = getattr(args, "packets", True)  # what the run's data plane packed (predict_into: recorded)
                pred = predict_epoch_exchange_s(job, args.workers, gbps, memory_bytes=args.memory if packing else None,
                                                overlap=args.overlap, shards=args.switch_cpus,
                                                held=not args.no_pin_switch)
                pred["simulator_s"] = time.perf_counter() - t0
                entry = results["rates"][str(gbps)]["datasets"][name]
                entry["predicted"] = pred
                for ex, key in (("ina", "ina_s"), ("p2p", "p2p_s")):
                    m = entry[ex]["median_exchange_s"]
                    entry[ex]["predicted_exchange_s"] = pred[key]
                    entry[ex]["measured_over_predicted"] = m / pred[key] if pred[key] else None
                    # ... and what began once every worker had begun (the simulator starts them together)
                    waited = m - (entry[ex].get("median_straggler_s") or 0.0)
                    entry[ex]["after_stragglers_over_predicted"] = waited / pred[key] if pred[key] else None
                # the fastest INA epoch these workers could have: their own time outside the exchange
                # (compute, gradient sum, synchronisation) plus the simulator's exchange, a perfect data plane
                ina = entry["ina"]
                entry["ina_epoch_floor_s"] = ina["median_epoch_s"] - ina["median_exchange_s"] + pred["ina_s"]
                entry["bound_attainable"] = entry["ina_epoch_floor_s"] <= entry["bound_epoch_s"]
                # the simulator's links, or the switch's busiest CPU (pinned: its programs' run time an
                # epoch, the kernel's accounting, times that CPU's share), whichever is longer: what the
                # switch alone allows
                dp = sorted(e["accounting_data_plane_cpu_s_per_step"] for e in ina["epochs"][1:])
                if ina.get("switch_cpu") is not None and dp:
                    cpu = dp[len(dp) // 2] * busiest_share(ina)
                    ina["switch_limited_exchange_s"] = max(pred["ina_s"], cpu)
                    ina["measured_over_switch_limited"] = ina["median_exchange_s"] / ina["switch_limited_exchange_s"]
                    # ... and the two one after the other (the switch's CPU shares the cores with the
                    # workers, so its work need not overlap the links'): the exchange lies between
                    ina["network_plus_switch_s"] = pred["ina_s"] + cpu
                    ina["measured_over_network_plus_switch"] = ina["median_exchange_s"] / ina["network_plus_switch_s"]
                print(f"{gbps:g} Gb/s {name}: predicted exchange ina {pred['ina_s']:.3f} s "
                      f"(measured {entry['ina']['median_exchange_s']:.3f}, of which waiting for the last worker "
                      f"{entry['ina'].get('median_straggler_s') or 0.0:.3f}), p2p {pred['p2p_s']:.3f} s "
                      f"(measured {entry['p2p']['median_exchange_s']:.3f}, waiting "
                      f"{entry['p2p'].get('median_straggler_s') or 0.0:.3f}); INA epoch at best "
                      f"{entry['ina_epoch_floor_s']:.3f} s against the bound's {entry['bound_epoch_s']:.3f} s; the "
                      f"switch's CPUs allow {ina.get('switch_limited_exchange_s', float('nan')):.3f} s, the links and "
                      f"then the switch {ina.get('network_plus_switch_s', float('nan')):.3f} s", flush=True)
        Path(args.out).write_text(json.dumps(results, indent=1))


def run_rate(args) -> dict:
    results = {"gbps": args.gbps, "datasets": {}}
    for name in args.datasets:
        spec = DATASETS.get(name, name)
        results["datasets"][name] = {"spec": spec}
        runs = [("p2p", "xdp"), ("ina", "xdp")] + ([("ina", "user")] if args.gbps in args.user_gbps else [])
        for exchange, dataplane in runs:
            r = run_one(spec, exchange, args, dataplane)
            results["datasets"][name][exchange if dataplane == "xdp" else "ina_user"] = r
            print(f"{args.gbps:g} Gb/s {name} {exchange}: epoch {r['median_epoch_s']:.3f} s, exchange {r['median_exchange_s']:.3f} s, "
                  f"sent {r['median_exchange_sent_bytes'] / 1e6:.1f} MB, received "
                  f"{r['median_exchange_received_bytes'] / 1e6:.1f} MB, logits {r['max_logit_diff']:.1e}, "
                  f"bound {r['bound']}, {r['dataplane']} plane {r['ceiling'].get('ns_per_packet', 0):.0f} ns/packet, "
                  f"load {r['load_before']} -> {r['load_after']}", flush=True)
        p, i = results["datasets"][name]["p2p"], results["datasets"][name]["ina"]
        results["datasets"][name]["speedup"] = p["median_epoch_s"] / i["median_epoch_s"]
        ratio = ((i["median_exchange_sent_bytes"] + i["median_exchange_received_bytes"])
                 / (p["median_exchange_sent_bytes"] + p["median_exchange_received_bytes"]))
        results["datasets"][name]["byte_ratio"] = ratio
        results["datasets"][name]["epoch_ratio"] = i["median_epoch_s"] / p["median_epoch_s"]
        results["datasets"][name]["bound_epoch_s"] = p["median_epoch_s"] * (ratio + 0.15)
        results["datasets"][name]["target_met"] = i["median_epoch_s"] <= results["datasets"][name]["bound_epoch_s"]
        print(f"{args.gbps:g} Gb/s {name}: {cpu_floor(results['datasets'][name], os.cpu_count() or 1)}", flush=True)
        if "ina_user" in results["datasets"][name]:
            results["datasets"][name]["ceiling"] = c = per_edge(i, results["datasets"][name]["ina_user"])
            print(f"{args.gbps:g} Gb/s {name}: the data plane's CPU an aggregated edge, kernel "
                  f"{c['kernel_ns_per_edge']:.0f} ns, userspace agent {c['agent_ns_per_edge']:.0f} ns "
                  f"({c['edges'] / 1e6:.2f} M edges a run)", flush=True)
    return results


def per_edge(kernel: dict, agent: dict) -> dict:
    """The two planes' CPU (:func:`ceiling`'s ``cpu_s``) per aggregated edge of the same run: the
    agent's count (``aggregated_edges``: a cross edge's row added once an exchange), which the
    kernel's ``kernel_aggregated`` exceeds where it adds a row in column slices, a slice at a time."""
    edges = agent["switch"]["aggregated_edges"]
    return {"edges": edges, "kernel_ns_per_edge": kernel["ceiling"]["cpu_s"] * 1e9 / edges,
            "agent_ns_per_edge": agent["ceiling"]["cpu_s"] * 1e9 / edges}


def cpu_floor(entry: dict, cores: int) -> str:
    """INA's shortest epoch on the CPUs that ran it (:func:`~netweave.testbed.net.accounting.cpu_floor_s`
    of the median over the epochs after the first of its CPU seconds an epoch: the accounting's
    ``cpu_s_per_step``, or before 2026-12-08 its busy share times the epoch and the CPUs counted),
    and whether the bound lies within it. ``cores``: the machine's, the CPUs counted where the run
    kept no CPUs apart for its switch (``host_cpus``: those counted). A pinned switch's programs
    ran on its ``switch_cpus`` alone: their seconds over those bound the epoch too. Returns a line
    saying so."""
    from netweave.testbed.net.accounting import cpu_floor_s

    ina = entry["ina"]
    later = ina["epochs"][1:] or ina["epochs"]
    counted = later[-1].get("accounting_cpu_count") or len(ina.get("host_cpus") or []) or cores
    work = statistics.median(e.get("accounting_cpu_s_per_step", e["accounting_cpu_busy"] * e["epoch_s"] * counted)
                             for e in later)
    pinned, cpus = ina.get("switch_cpu") is not None, ina.get("switch_cpus", 1)
    plane = statistics.median(e["accounting_data_plane_cpu_s_per_step"] for e in later) if pinned else 0.0
    ina["cpu_work_s_per_epoch"], ina["cpus_counted"] = work, counted
    floor = cpu_floor_s(work, counted, plane, cpus if pinned else 0)
    entry["ina_epoch_cpu_floor_s"] = floor
    entry["bound_within_cpus"] = floor <= entry["bound_epoch_s"]
    entry["cpu_work_to_shed"] = max(0.0, 1 - entry["bound_epoch_s"] / floor) if floor > 0 else 0.0
    by = (f"its switch's program, {plane:.3f} CPU-s on its {cpus} CPU{'s' * (cpus > 1)}" if floor > work / counted
          else f"its CPU work, {work:.3f} CPU-s on {counted} CPUs")
    return (f"INA's epoch at best {floor:.3f} s ({by}), the bound {entry['bound_epoch_s']:.3f} s: " +
            ("within reach" if entry["bound_within_cpus"] else f"beyond it by {entry['cpu_work_to_shed']:.0%} of that work"))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # the testbed has removed what it made; the rates done are in --out
        print("bench_testbed_gnn: interrupted (the rates measured so far are in --out)", file=sys.stderr)
        sys.exit(130)
    except NetweaveError as e:  # a dataset, a rate or the machine: one line, as netweave's own commands
        print(f"bench_testbed_gnn: error: {e}", file=sys.stderr)
        sys.exit(2)
