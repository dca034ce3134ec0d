"""Gradient aggregation: ``route`` (ARO, PAHInA and the baselines) and ``aggsvc demo`` (PAHInA's service on loopback)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import NetweaveError
from ..outputs import check_output_file
from ..report.console import finish, show
from .app import app, aggsvc_app
from .examples import EXAMPLES
from .options import path_str, TOPOLOGY_HELP, Algorithm, JsonOpt


# -- route ---------------------------------------------------------------------------------------

@app.command(epilog=EXAMPLES["route"])
def route(
    topology: str = typer.Option(..., "--topology", help="A leaf-spine or fat-tree with INA switches. " + TOPOLOGY_HELP),
    jobs_file: Optional[Path] = typer.Option(None, "--jobs", help="Jobs YAML (jobs: [{name, weight, tasks: [{ps, workers}]}])."),
    workers: Optional[int] = typer.Option(None, "--workers", help="One task of W random workers (instead of --jobs)."),
    ps: Optional[str] = typer.Option(None, "--ps", help="Its PS (default: the first host under an INA switch)."),
    algorithm: Algorithm = typer.Option(Algorithm.aro, "--algorithm", help="aro (exact MILP), ecmp (ATP), grid, aggtree or ps (no INA), one precision per task; with mixed precisions: pahina, atp, grid or ps."),
    precisions: Optional[str] = typer.Option(None, "--precisions", help="Precision-aware routing (PAHInA model): the workers' precision mix, e.g. fp8:5,fp16:3,fp32:2."),
    switch_gbps: float = typer.Option(100.0, "--switch-gbps", help="Aggregated-output capacity per precision of INA switches without ina_capacity_gbps."),
    seed: int = typer.Option(0, "--seed", help="Seed of the workers' placement, the randomised baselines and PAHInA's last tie-break."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds the ARO solver may take."),
    accelerate: str = typer.Option("", "--accelerate", help="ARO's §III-C heuristics, comma-separated: app (pre-pruning, α=0.6), sro (staged), qsr (100 rate levels). Default: none (exact)."),
    evaluate: Optional[Path] = typer.Option(None, "--evaluate", help="Evaluate a routes JSON instead of planning."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the routes JSON."),
    as_json: bool = JsonOpt,
):
    """Route gradient aggregation through INA switches (ARO) or by a baseline, and evaluate the rates.

    The tasks come from a jobs YAML (--jobs, docs/formats.md) or are one task of --workers random
    hosts sending to --ps. aro solves ARO's MILP exactly (eq. 1-3: one task, the sum, or the
    weighted max-min of several jobs); ecmp, grid, aggtree and ps are the baselines. With mixed
    precisions (--precisions, or a jobs file's worker_precision) the task runs on PAHInA's model:
    pahina against atp, grid and ps, with its training-time estimate. --out writes the routes
    JSON; --evaluate checks someone else's routes JSON on the topology and gives its max-min rates."""
    from ..route.jobs import parse_precision_mix
    from ..route.plan import PrecisionResult
    from ..scenarios import RouteCheck, RouteScenario

    check_output_file(out_file, "--out")
    if evaluate is not None:
        r = RouteCheck(topology=topology, routes_file=str(evaluate), jobs_file=path_str(jobs_file)).run()
        return show(r.summary(), as_json, f"routes {evaluate} on {r.topology_name}")
    result = RouteScenario(
        topology=topology, algorithm=algorithm.value, jobs_file=path_str(jobs_file), workers=workers, ps=ps,
        precisions=parse_precision_mix(precisions) if precisions else None, switch_gbps=switch_gbps,
        time_limit_s=time_limit, accelerations=tuple(a.strip() for a in accelerate.split(",") if a.strip()),
        seed=seed).run()
    kind = "(precision-aware)" if isinstance(result, PrecisionResult) else "routing"
    finish(result.summary(), result, out_file, as_json, f"{algorithm.value} {kind} on {result.topology}",
           hidden=("tasks", "output_streams_gbps"))


# -- aggsvc --------------------------------------------------------------------------------------


@aggsvc_app.command("demo", epilog=EXAMPLES["aggsvc demo"])
def aggsvc_demo(
    workers: int = typer.Option(8, "--workers", help="Workers (every fifth sends straight to the PS)."),
    aggregators: int = typer.Option(2, "--aggregators", help="Aggregation nodes between the workers and the PS."),
    loss: float = typer.Option(0.0, "--loss", help="Probability a worker's packet is lost."),
    dup: float = typer.Option(0.0, "--dup", help="Probability a worker's packet is sent twice."),
    reorder: float = typer.Option(0.0, "--reorder", help="Probability a worker's packet is delayed (reordered)."),
    values: int = typer.Option(1000, "--values", help="Gradient values per tensor (one datagram)."),
    precisions: Optional[str] = typer.Option(None, "--precisions", help="The workers' precision mix (default PAHInA §VI's fp8:5,fp16:3,fp32:2)."),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = JsonOpt,
):
    """Send tensors of mixed precisions through real UDP aggregators to a PS; check the sums exactly."""
    from ..dataplane.demo import demo
    from ..dataplane.service import Faults
    from ..route.jobs import parse_precision_mix
    from ..scenarios import PRECISION_MIX

    report = demo(workers, aggregators, values=values, faults=Faults(loss, dup, reorder), seed=seed,
                  mix=parse_precision_mix(precisions) if precisions else PRECISION_MIX)
    if not report["exact"]:
        raise NetweaveError("the PS's sums differ from the integer sums of what the workers sent")
    show(report, as_json, "aggregation service on loopback")
