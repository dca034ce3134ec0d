"""Many runs at once: ``compare`` (the main job), ``sweep``, ``repro`` and ``kernels bench``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import NetweaveError
from ..outputs import check_output_dir
from ..report.console import emit_json, out, table
from .app import app, kernels_app
from .examples import EXAMPLES
from .options import (DATASET_HELP, TOPOLOGY_HELP, TRANSPORT_HELP, JsonOpt, ProcessesOpt, RayOpt, TransportName,
                      WorkersAliasOpt, renamed)


# -- kernels -------------------------------------------------------------------------------------
KERNELS_FEATURE_DIM = 16  # kernels.bench.bench_kernels's dim (tests/test_defaults.py keeps them equal)



@kernels_app.command("bench", epilog=EXAMPLES["kernels bench"])
def kernels_bench(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    gpus: int = typer.Option(4, "--gpus", help="GPUs the rows and embeddings are split over (simulated on one device)."),
    feature_dim: Optional[int] = typer.Option(None, "--feature-dim", min=1, help="Embedding width D (float32 values). [default: 16]"),
    dim: Optional[int] = typer.Option(None, "--dim", min=1, hidden=True, help="The old name of --feature-dim."),
    ps: int = typer.Option(8, "--ps"), dist: int = typer.Option(2, "--dist"), wpb: int = typer.Option(4, "--wpb"),
    tune_: bool = typer.Option(False, "--tune", help="Run MGG's cross-iteration tuner on measured latencies."),
    repeats: int = typer.Option(5, "--repeats", help="Timed runs per measurement (median; the first run is discarded)."),
    as_json: bool = JsonOpt,
):
    """Latency of the reference, torch.sparse, non-overlapped and MGG kernels (GPU if present, else
    Triton's interpreter on the CPU: correct but slow, for small graphs)."""
    from ..kernels.bench import check_requirements

    check_requirements()  # at once, not after loading the dataset and torch
    from ..graph import load_dataset
    from ..kernels import Config
    from ..kernels.bench import bench_kernels

    dim = renamed(feature_dim, dim, "--feature-dim", "--dim")
    dim = KERNELS_FEATURE_DIM if dim is None else dim
    if repeats < 1 or gpus < 1 or dim < 1:
        raise NetweaveError(f"--repeats {repeats}, --gpus {gpus} and --feature-dim {dim} must each be at least 1")
    config = Config(ps, dist, wpb)
    config.check()
    report = bench_kernels(load_dataset(dataset), gpus, dim, config, tune_, repeats)
    if as_json:
        return emit_json(report)
    out.print(table(f"MGG kernels on {dataset} ({report['device']})", {k: v for k, v in report.items() if k != "tuner_path"}))


# -- compare -------------------------------------------------------------------------------------
@app.command(epilog=EXAMPLES["compare"])
def compare(
    dataset: Optional[str] = typer.Argument(None, help="Dataset of every section that takes a graph (default: cora for "
                                            "the exchange and training, a Reddit-like graph for INA). " + DATASET_HELP),
    topology: str = typer.Option("dgx1", "--topology", help="The exchange's GPU server; the INA, routing and precision "
                                 "sections use it too where it fits them (each says). " + TOPOLOGY_HELP),
    epochs: int = typer.Option(200, "--epochs", help="Epochs of the training section (the GCN recipe's 200; the section "
                               "says whether it converged)."),
    sections: str = typer.Option("exchange,ina,routing,precision,training", "--sections",
                                 help="Which comparisons to run (comma-separated)."),
    seed: int = typer.Option(0, "--seed"),
    transport: Optional[TransportName] = typer.Option(None, "--transport", help="Exchange section: " + TRANSPORT_HELP),
    report: Optional[Path] = typer.Option(None, "--report", help="Write report.md, a self-contained report.html, PNG figures and compare.json to DIR."),
    as_json: bool = JsonOpt,
):
    """The main job: every netweave strategy next to its baseline, for each communication problem."""
    from ..compare import CompareConfig, compare as run_compare, write_report

    check_output_dir(report, "--report")
    from ..report import section_table

    config = CompareConfig(dataset, topology, epochs=epochs, seed=seed, transport=transport.value if transport else None,
                           sections=tuple(x.strip() for x in sections.split(",") if x.strip()))
    results = run_compare(config)
    path = write_report(results, report, config) if report is not None else None
    if as_json:
        return emit_json({"sections": [s.summary() for s in results], "report": None if path is None else str(path)})
    for s in results:
        out.print(section_table(s, out.width))
    if path is not None:
        print(f"report written to {path} and {path.with_suffix('.html')}", file=sys.stderr)


# -- sweep ---------------------------------------------------------------------------------------
@app.command("sweep", epilog=EXAMPLES["sweep"])
def sweep_command(
    config_file: Path = typer.Argument(..., help="Sweep YAML (name, kind: ina|route|precision, grid, fixed)."),
    out_dir: Path = typer.Option(Path("sweep-out"), "--out", help="Directory of results.jsonl (resumed if present)."),
    processes: Optional[int] = ProcessesOpt,
    workers: Optional[int] = WorkersAliasOpt,
    ray: Optional[str] = RayOpt,
    as_json: bool = JsonOpt,
):
    """Run a grid of cases in a process pool (or on Ray), resumably, and show one table."""
    from ..sweep import load_config, sweep

    workers = renamed(processes, workers, "--processes", "--workers")

    config = load_config(config_file)
    rows = sweep(config, out_dir, workers, ray)
    if as_json:
        return emit_json({"name": config.get("name"), "cases": len(rows), "rows": rows})
    keys = sorted(config["grid"])
    metrics = [k for k in ("traffic_bytes", "completion_time_s", "min_rate_gbps", "objective_gbps", "training_time_s")
               if any(k in r["result"] for r in rows)]
    out.print(table(f"sweep {config.get('name', config_file)} ({len(rows)} cases, {out_dir / 'results.jsonl'})",
                    [tuple(r["params"][k] for k in keys) + tuple(r["result"].get(m) for m in metrics) for r in rows],
                    tuple(keys) + tuple(metrics)))


# -- repro ---------------------------------------------------------------------------------------
@app.command(epilog=EXAMPLES["repro"])
def repro(
    name: Optional[str] = typer.Argument(None, help="Which result (see --list), or all."),
    list_: bool = typer.Option(False, "--list", help="List the reproductions."),
    full: bool = typer.Option(False, "--full", help="The paper's scale (slow); the same as --scale full."),
    scale: Optional[str] = typer.Option(None, "--scale", help="tiny (seconds, a smoke test), reduced (the default: minutes) or full."),
    out_dir: Path = typer.Option(Path("repro-out"), "--out", help="Directory for NAME.csv/.png/.md and NAME.jsonl (resumed if present)."),
    processes: Optional[int] = ProcessesOpt,
    workers: Optional[int] = WorkersAliasOpt,
    ray: Optional[str] = RayOpt,
    as_json: bool = JsonOpt,
):
    """Reproduce a paper's headline result: CSV, plot and a paper-vs-netweave table."""
    from rich.markup import escape

    from ..repro import REPROS, reproduce, reproduce_all

    workers = renamed(processes, workers, "--processes", "--workers")
    if list_ or name is None:
        rows = [(r.name, r.what, r.paper) for r in REPROS.values()]
        return emit_json({"repros": [dict(zip(("name", "what", "paper"), r)) for r in rows]}) if as_json else \
            out.print(table("netweave repro", rows, ("name", "what", "paper")))
    if name == "all":
        results = reproduce_all(out_dir, full, scale, workers, ray, None if as_json else lambda r: out.print(
            f"[bold]{r.name}[/] ({r.case_seconds:.1f} s of cases): {escape(r.netweave)}"))
        return emit_json({"repros": [r.summary() for r in results]}) if as_json else \
            out.print(f"paper against netweave: {out_dir / 'summary.md'}")
    r = reproduce(name, out_dir, full, scale, workers, ray)
    if as_json:
        return emit_json(r.summary())
    out.print(table(f"{name} ({r.seconds:.1f} s, {out_dir})", {"paper": r.paper, "netweave": r.netweave}))
