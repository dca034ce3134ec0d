"""The emulated cluster: ``testbed up`` (namespaces, shaped links, routes), ``testbed down`` and
``testbed train`` (data-parallel training through its in-network aggregation), ``testbed gnn`` (GCN through
the SwitchGNN exchange): parse → scenario (:mod:`netweave.scenarios.testbed`) → run → render."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..report.console import show
from .app import testbed_app
from .options import TOPOLOGY_HELP, JsonOpt, path_str


@testbed_app.command("up")
def testbed_up(
    topology: str = typer.Argument(..., help=TOPOLOGY_HELP),
    scale: float = typer.Option(0.01, "--scale", help="Factor on every link rate (this machine cannot push 100 Gb/s per link); recorded in every output."),
    routes: Optional[Path] = typer.Option(None, "--routes", help="A routes JSON (`netweave route --out`) whose per-worker paths are pinned."),
    as_json: bool = JsonOpt,
):
    """Instantiate TOPOLOGY as network namespaces with shaped veth links; it stays until `testbed down`."""
    from ..scenarios.testbed import ClusterScenario

    r = ClusterScenario(topology=topology, scale=scale, routes_file=path_str(routes)).up()
    show(r.summary(), as_json, f"testbed {r.prefix}: {topology} at {scale:g} of its link rates", hidden=("addresses",))


@testbed_app.command("down")
def testbed_down(all_: bool = typer.Option(False, "--all", help="Also recorded clusters whose owner still runs, and every namespace that carries netweave's marker."),
                 as_json: bool = JsonOpt):
    """Remove the clusters `testbed up` left and those of runs that died (namespaces, links, processes).

    Only what netweave recorded making is removed (SECURITY.md); namespaces of other tools are never touched."""
    from ..testbed import down

    show(down(all_).summary(), as_json, "testbed down")


@testbed_app.command("train")
def testbed_train(
    workers_n: Optional[int] = typer.Option(None, "--workers", help="Number of workers: two fp8, the rest fp16 (PAHInA §VI-B), unless --precisions says otherwise."),
    precisions: Optional[str] = typer.Option(None, "--precisions", help="Workers per precision, e.g. fp8:2,fp16:2 (the default; with --workers N: fp8:2,fp16:N-2)."),
    routing: str = typer.Option("pahina", "--routing", help="pahina, atp or grid (their control plane picks the aggregating switches), aro or ecmp (flows merge at every switch they share: multi-level; one precision), ps (every gradient to the PS, no INA) or ring (gloo's ring all-reduce, fp32, no PS)."),
    dataplane: str = typer.Option("xdp", "--dataplane", help="xdp (in the kernel) or user (the reference, in each switch's agent)."),
    mode: str = typer.Option("stream", "--mode", help="stream (every chunk's sum multicast down by the switches as it completes, the optimizer on every worker; beyond the paper) or ps (PAHInA §IV-C: sums to the PS, which steps and multicasts the parameters)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="The cluster (default star:n=WORKERS+1); its first host is the PS. " + TOPOLOGY_HELP),
    model: str = typer.Option("lenet5", "--model", help="lenet5, resnet18 or resnet50."),
    data: str = typer.Option("digits", "--data", help="digits (scikit-learn's, real) or cifar-synthetic (CIFAR-10-shaped, for throughput)."),
    epochs: int = typer.Option(5, "--epochs"),
    steps: Optional[int] = typer.Option(None, "--steps", help="At most this many global batches per epoch (throughput runs)."),
    scale: float = typer.Option(0.1, "--scale", help="Factor on every link rate; recorded in the output."),
    batch: int = typer.Option(64, "--batch", help="Global batch, split evenly over the workers."),
    switch_gbps: float = typer.Option(100.0, "--switch-gbps", help="INA capacity (Gb/s per precision) of switches whose topology gives none, before --scale."),
    lr: float = typer.Option(0.05, "--lr"), seed: int = typer.Option(0, "--seed"),
    as_json: bool = JsonOpt,
):
    """Train a model data-parallel through in-network aggregation on an emulated cluster."""
    from ..progress import epoch_bar, warn
    from ..report.console import emit_json, out, table
    from ..scenarios.testbed import TestbedTrainScenario

    scenario = TestbedTrainScenario(workers=workers_n, precisions=precisions, routing=routing, dataplane=dataplane,
                                    topology=topology, model=model, data=data, epochs=epochs, steps=steps, scale=scale,
                                    batch=batch, switch_gbps=switch_gbps, lr=lr, seed=seed, mode=mode)
    scenario.prepare()  # every bad value in one line before the progress bar
    with epoch_bar(epochs, f"{routing} on the testbed", enabled=not as_json) as advance:
        def on_epoch(e: dict) -> None:
            out.print(f"epoch {e['epoch']}: loss {e['loss']:.4f}, test accuracy {e['test_acc']:.3f}, "
                      f"{e['epoch_s']:.2f} s (compute {e['compute_s']:.2f} s, upload {e['upload_s']:.2f} s), "
                      f"{e['samples_per_s']:,.0f} samples/s; {e.get('bound', '?')}-bound (busiest link "
                      f"{e.get('busiest_link', '?')} {100 * e.get('busiest_link_busy', 0):.0f} % busy, CPUs "
                      f"{100 * e.get('cpu_busy', 0):.0f} %)")
            advance(f"loss {e['loss']:.3f}")

        result = scenario.run(on_epoch=None if as_json else on_epoch)
        summary = result.summary()
    if result.cpu_bound_epochs():
        warn(f"epochs {', '.join(map(str, result.cpu_bound_epochs()))} were CPU-bound (the CPUs busy, the links "
             f"not): the step times measure this machine, not the network; use --scale "
             f"{result.network_bound_scale():g} or lower (from this run's counters) for the links to bind")
    if as_json:
        return emit_json(summary)
    out.print(table("summary", {k: v for k, v in summary.items() if k not in ("epochs", "done", "switches")}))


@testbed_app.command("gnn")
def testbed_gnn(
    dataset: str = typer.Argument(..., help="A dataset spec (cora, an .npz path, reddit-like:scale=0.02, ...)."),
    workers: int = typer.Option(4, "--workers", help="Workers, one per host of star:n=WORKERS."),
    exchange: str = typer.Option("ina", "--exchange", help="ina (through the emulated SwitchGNN switch: multicast, aggregation, blocks) or p2p (BNS-GCN: each boundary row once per remote worker)."),
    memory: str = typer.Option("2MB", "--memory", help="The switch's aggregator memory (128 B aggregators); the plan's blocks are sized to it."),
    gbps: float = typer.Option(1.0, "--gbps", help="Every link's rate in Gb/s (HTB on the veths, not scaled)."),
    epochs: int = typer.Option(3, "--epochs"),
    hidden: int = typer.Option(16, "--hidden"), layers: int = typer.Option(2, "--layers"),
    blocking: str = typer.Option("paper", "--blocking", help="How the plan cuts blocks: paper (§3.3), multilevel, destination, hybrid or single."),
    dataplane: str = typer.Option("auto", "--dataplane", help="The switch's data plane: auto (the kernel's where libbpf is and its programs are compiled or clang can compile them), xdp (tc-BPF in the kernel) or user (the userspace agent)."),
    overlap: bool = typer.Option(False, "--overlap", help="Double-buffered blocks: block b+1 goes up while block b comes down (kernel data plane)."),
    check: bool = typer.Option(True, "--check/--no-check", help="Also train in one process and report the largest logit difference."),
    seed: int = typer.Option(0, "--seed"),
    congestion_control: bool = typer.Option(False, "--congestion-control", help="SwitchGNN §3.4: the switch ECN-marks packets that join a queue longer than --ecn-kb; a CNP halves the sender's rate, which grows back additively (kernel data plane)."),
    ecn_kb: float = typer.Option(64.0, "--ecn-kb", help="The ECN marking threshold: KB of queue at a switch port."),
    background: float = typer.Option(0.0, "--background", help="Background flows between the hosts (Poisson arrivals, Hadoop sizes) at this fraction of the link rate, 0 to below 1."),
    switch_buffer_kb: float = typer.Option(0.0, "--switch-buffer-kb", help="Every switch port's queue in KB (a packet that finds it full is dropped); 0: 10,000 packets."),
    fast_pull: bool = typer.Option(True, "--fast-pull/--timeout-only", help="Pull a block's missing cells as soon as every worker's END came (each port is a FIFO: they were lost), or only after §3.4's timeout (the paper)."),
    transform_first: bool = typer.Option(True, "--transform-first/--aggregate-first", help="Where a layer narrows, exchange h·W (PyG GCNConv's order: transform, then aggregate; d_out values a row, and a backward exchange for W) or the layer's input h (d_in values a row)."),
    pin_switch: bool = typer.Option(True, "--pin-switch/--no-pin-switch", help="Run the kernel data plane on one CPU, the last (Receive Packet Steering on the switch's ports: no aggregator shared by two cores, the same cost a cell every run), or on whichever CPU a packet arrives (two cores, but where the senders run on both, a cell costs about twice as much)."),
    switch_cpus: int = typer.Option(0, "--switch-cpus", help="Spread the kernel data plane's aggregators over this many CPUs, the last ones, each adding into its own (beyond the paper; 1: one CPU does it all; 0: one for each CPU the workers leave free, 2 to 8, 1 on one CPU)."),
    isolate_switch: bool = typer.Option(True, "--isolate-switch/--share-switch-cpus", help="Run the workers and the switch agent on the CPUs the pinned switch's shards leave free, where those are at least one a worker (each host and the switch on CPUs of their own, as in a cluster), or on any CPU."),
    overlap_local: bool = typer.Option(True, "--overlap-local/--no-overlap-local", help="With --transform-first, each worker sums its own neighbours' rows while its exchange is on the wire (both exchanges; beyond the papers), or after it."),
    column_slices: int = typer.Option(0, "--column-slices", help="INA: send each row as this many column slices, every unit's first slice before any unit's second, so the first slices' sums come down while the rest go up (beyond the paper; a layer of one block whose width it divides; 1: whole rows; 0: through the kernel data plane 2 where a model of the plan says its sums come down sooner, else 1; whole rows through the userspace agent)."),
    as_json: bool = JsonOpt,
):
    """Train GCN full-graph with its embedding exchange through an emulated SwitchGNN switch (or peer to peer)."""
    from ..report.console import emit_json, out, table
    from ..scenarios.testbed import TestbedGnnScenario

    result = TestbedGnnScenario(dataset=dataset, workers=workers, exchange=exchange, memory=memory, gbps=gbps,
                                epochs=epochs, hidden=hidden, layers=layers, blocking=blocking, dataplane=dataplane,
                                overlap=overlap, check=check, seed=seed, congestion_control=congestion_control,
                                ecn_kb=ecn_kb, background=background, switch_buffer_kb=switch_buffer_kb, fast_pull=fast_pull,
                                transform_first=transform_first, pin_switch=pin_switch, switch_cpus=switch_cpus,
                                isolate_switch=isolate_switch, overlap_local=overlap_local,
                                column_slices=column_slices).run()
    summary, r = result.summary(), result.run
    if as_json:
        return emit_json(summary)
    for e in r.epochs:
        out.print(f"epoch {e['epoch']}: loss {e['loss']:.4f}, {e['epoch_s']:.3f} s (compute {e['compute_s']:.3f} s, "
                  f"exchange {e['exchange_s']:.3f} s, sync {e['sync_s']:.3f} s), exchange "
                  f"{e['exchange_bytes'] / 1e6:.2f} MB up, {e['exchange_received_bytes'] / 1e6:.2f} MB down, "
                  f"busiest link {e['accounting_busiest_link_busy_exchanging']:.0%} busy outside compute: "
                  f"{e['accounting_bound']}", soft_wrap=True)  # one line an epoch, whatever the width
    out.print(table("summary", {k: v for k, v in summary.items() if k not in ("epochs", "planned", "switch")}))
