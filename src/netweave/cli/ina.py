"""In-network aggregation of a GNN layer: ``ina`` (SwitchGNN, simulated) and ``timeslot`` (§3.2.1's model)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..outputs import check_output_file
from ..report.console import out, show
from ..report.tables import section_table
from .app import app
from .examples import EXAMPLES
from .options import (DATASET_HELP, GAMR_START_HELP, TOPOLOGY_HELP, FeatureDimOpt, JsonOpt, Method, MethodOpt, Order,
                      PartsFileOpt, path_str, Strategy, Blocking)


# -- ina -----------------------------------------------------------------------------------------


@app.command(epilog=EXAMPLES["ina"])
def ina(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    workers: int = typer.Option(8, "--workers", "-n", help="Workers (one partition and one host each)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="A star or leaf-spine with WORKERS hosts (default star:n=WORKERS,gbps=GBPS,latency_us=2). " + TOPOLOGY_HELP),
    switch_memory: str = typer.Option("topology", "--switch-memory", help="Aggregator memory per switch (128 B aggregators): 'topology' (each switch's aggregator_memory, 100MB where the topology gives none), one size for every switch (e.g. 100MB), or 'unlimited'."),
    strategy: Strategy = typer.Option(Strategy.switchgnn, "--strategy", help="host (BNS-GCN), straw (§2.3.2 strawman) or switchgnn (GAMR + multi-level blocks)."),
    blocking: Blocking = typer.Option(Blocking.auto, "--blocking", help="switchgnn's blocks: auto (every candidate priced on the cost model, the cheapest runs; may pick host exchange), paper (§3.3 multi-level METIS, sized by demand), multilevel / destination / hybrid (sized by peak aggregator occupancy under GAMR order), single (one block, best effort), multicast (one block, the switch only multicasts)."),
    overlap: bool = typer.Option(False, "--overlap/--no-overlap", help="Double-buffer an explicit --blocking: blocks fit half the memory and block b+1 is sent while block b drains."),
    order: Order = typer.Option(Order.gamr, "--order", help="Sending order: gamr (priority BFS, §3.2) or random."),
    feature_dim: Optional[int] = FeatureDimOpt,
    gbps: float = typer.Option(100.0, "--gbps", help="Link speed of the default star."),
    seed: int = typer.Option(0, "--seed", help="Seed of METIS, the orders, loss and background traffic."),
    start: Optional[int] = typer.Option(None, "--start", help=GAMR_START_HELP),
    method: Method = MethodOpt,
    parts_file: Optional[Path] = PartsFileOpt,
    loss: float = typer.Option(0.0, "--loss", help="Probability that a message is lost on a link (recovered by timeout + pull, §3.4)."),
    buffer: Optional[str] = typer.Option(None, "--buffer", help="Switch buffer per output port, e.g. 1MB (default unlimited); overflow drops."),
    cc: bool = typer.Option(False, "--cc/--no-cc", help="ECN marking and halve / additive-increase senders (§3.4)."),
    ecn: str = typer.Option("100KB", "--ecn", help="ECN marking threshold of a switch queue."),
    background: float = typer.Option(0.0, "--background", help="Hadoop-like Poisson background load, fraction of line rate (§6.5)."),
    timeout_us: float = typer.Option(500.0, "--timeout-us", help="Silence after which a host pulls what it misses."),
    verify: bool = typer.Option(False, "--verify", help="Carry random features and check the delivered sums against A_cross @ X."),
    timeline: Optional[Path] = typer.Option(None, "--timeline", help="Write the time series (CSV: throughput, aggregators, queue)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write the time series as a PNG (like the paper's Figure 2)."),
    as_json: bool = JsonOpt,
):
    """Simulate one GNN layer's propagation through in-network multicast and aggregation (SwitchGNN)."""
    from ..sim import SimConfig
    from ..scenarios import InaScenario
    from ..sim.layer import parse_switch_memory
    from ..report.csv import write_array_csv
    from ..report.timeline import plot_timelines
    from ..sim.timeline import COLUMNS
    from ..topology.yaml_io import parse_bytes

    check_output_file(timeline, "--timeline")
    check_output_file(plot, "--plot")
    sim = SimConfig(buffer_bytes=None if buffer is None else parse_bytes(buffer, "--buffer"), congestion_control=cc,
                    ecn_bytes=parse_bytes(ecn, "--ecn"), loss=loss, timeout_us=timeout_us,
                    background_load=background, seed=seed)
    config = InaScenario(dataset=dataset, workers=workers, topology=topology,
                         switch_memory=parse_switch_memory(switch_memory), strategy=strategy.value, order=order.value,
                         blocking=blocking.value, overlap=overlap,
                         feature_dim=feature_dim, gbps=gbps, seed=seed, start=start, method=method.value,
                         parts_file=path_str(parts_file), verify=verify, sim=sim)
    r = config.run()
    report, result = r.summary(), r.sim
    if timeline is not None:
        write_array_csv(timeline, result.timeline, COLUMNS)
        report["timeline"] = str(timeline)
    if plot is not None:
        plot_timelines({strategy.value: result.timeline}, plot)
        report["plot"] = str(plot)
    if show(report, as_json, f"{strategy.value} on {dataset}, {workers} workers, {report['topology']}",
            hidden=("choice",)) or "choice" not in report:
        return
    out.print(section_table(choice_section(report["choice"]), out.width))


def choice_section(choice: dict):
    """``ina``'s JSON ``choice`` as a table: one row per candidate blocking, its predicted traffic (MB)
    and completion (µs), and which ran or why one was not priced."""
    from ..report import Section

    def note(c) -> str:
        if c["skipped"]:
            return c["skipped"]
        if c["pruned"]:
            return "pruned"
        return "chosen" if all(c[k] == choice[k] for k in ("blocking", "overlap", "forward", "order")) else ""

    rows = [{"blocking": c["blocking"], "overlap": c["overlap"], "forward": c["forward"], "order": c["order"],
             "blocks": c["num_blocks"],
             "predicted_traffic_MB": None if c["predicted_traffic_bytes"] is None else c["predicted_traffic_bytes"] / 1e6,
             "predicted_completion_us": None if c["predicted_completion_s"] is None else c["predicted_completion_s"] * 1e6,
             "note": note(c)} for c in choice["candidates"]]
    return Section(name="choice", title="the blockings --blocking auto priced on its cost model", columns=tuple(rows[0]),
                   rows=rows, note="pruned: stopped once it could no longer beat the best candidate so far.")


@app.command(epilog=EXAMPLES["timeslot"])
def timeslot(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    order: Order = typer.Option(Order.gamr, "--order", help="gamr (priority BFS, §3.2.2) or random."),
    k: int = typer.Option(1, "--k", help="Vertices entering (and results leaving) the switch per slot."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random order."),
    start: Optional[int] = typer.Option(None, "--start", help=GAMR_START_HELP),
    as_json: bool = JsonOpt,
):
    """The time-slot model of §3.2.1 (eqs. 3–6): every vertex's aggregator needs its neighbours;
    vertices reach the switch in ORDER, k per slot; reports the completion slot z and the queue."""
    from ..scenarios import TimeslotScenario

    report = TimeslotScenario(dataset=dataset, order=order.value, k=k, seed=seed, start=start).run().summary()
    show(report, as_json, f"time-slot model of {dataset}, {order.value} order, k={k}")
