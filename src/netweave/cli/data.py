"""Inspect the inputs: ``datasets``, ``graph stats``, ``topology show|export`` and ``partition``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from ..outputs import check_output_file
from ..report.console import emit_json, finish, out, show, table
from .app import app, graph_app, topology_app
from .examples import EXAMPLES
from .options import DATASET_HELP, TOPOLOGY_HELP, FeatureDimOpt, JsonOpt, Method


# -- datasets ------------------------------------------------------------------------------------
@app.command(epilog=EXAMPLES["datasets"])
def datasets(as_json: bool = JsonOpt):
    """List bundled datasets, loadable formats and generators."""
    from ..graph import BUNDLED, FORMATS, GENERATORS

    info = {"bundled": BUNDLED, "formats": FORMATS, "generators": {k: v[0] for k, v in GENERATORS.items()}}
    if as_json:
        return emit_json(info)
    out.print(table("bundled (no files needed)", BUNDLED, ("name", "description")))
    out.print(table("file formats (prefix optional: detected from the path)", FORMATS, ("prefix", "spec")))
    out.print(table("generators", info["generators"], ("name", "spec")))


# -- graph ---------------------------------------------------------------------------------------
@graph_app.command("stats", epilog=EXAMPLES["graph stats"])
def graph_stats(dataset: str = typer.Argument(..., help=DATASET_HELP), as_json: bool = JsonOpt):
    """Size, feature and degree statistics of a dataset."""
    from ..graph import load_dataset

    t0 = time.perf_counter()
    g = load_dataset(dataset)
    stats = g.stats() | {"load_time_s": time.perf_counter() - t0}
    show(stats, as_json, f"graph {dataset}")


# -- partition -----------------------------------------------------------------------------------

@app.command(epilog=EXAMPLES["partition"])
def partition(
    dataset: str = typer.Argument(..., help=DATASET_HELP),
    parts: Optional[int] = typer.Option(None, "--parts", "-k", help="Number of parts (workers)."),
    method: Method = typer.Option(Method.metis, "--method", help="metis (min edge cut), metis32 (the system's 32-bit METIS: half the memory on large graphs, other parts for a seed), random (balanced), range (MGG Alg. 1), hierarchical (machines, then GPUs; needs --topology)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="Its workers set --parts (and its machines the levels of hierarchical). " + TOPOLOGY_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of METIS / random."),
    feature_dim: Optional[int] = FeatureDimOpt,
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the partition (.npz with `parts`)."),
    as_json: bool = JsonOpt,
):
    """Partition a graph and report edge cut, balance, halo and exchange volume."""
    from ..scenarios import PartitionScenario

    check_output_file(out_file, "--out")
    r = PartitionScenario(dataset=dataset, method=method.value, parts=parts, topology=topology, seed=seed,
                          feature_dim=feature_dim).run()
    finish(r.summary(), r.partition, out_file, as_json,
           f"{method.value} partition of {dataset} into {r.partition.num_parts} parts", hidden=("part_sizes", "halo_sizes"))


# -- topology ------------------------------------------------------------------------------------
@topology_app.command("show", epilog=EXAMPLES["topology show"])
def topology_show(spec: str = typer.Argument(..., help=TOPOLOGY_HELP),
                  links: bool = typer.Option(False, "--links", help="List every link."),
                  as_json: bool = JsonOpt):
    """Summarise a topology: nodes by kind, workers, INA switches, link speeds."""
    from ..topology import load_topology_spec, topology_to_dict

    topo = load_topology_spec(spec)
    summary = topo.summary()
    if as_json:
        if links:
            summary["links"] = topology_to_dict(topo)["links"]
        return emit_json(summary)
    out.print(table(f"topology {topo.name}", {k: v for k, v in summary.items() if k != "links_by_gbps"}))
    out.print(table("links by speed", summary["links_by_gbps"], ("Gb/s per direction", "links")))
    if links:
        rows = [(l.a, l.b, l.gbps, l.latency_us, l.label or "") for l in topo.links]
        out.print(table("links", rows, ("a", "b", "gbps", "latency_us", "label")))


@topology_app.command("export", epilog=EXAMPLES["topology export"])
def topology_export(spec: str = typer.Argument(..., help=TOPOLOGY_HELP),
                    out_file: Path = typer.Option(..., "--out", help="YAML file to write.")):
    """Write a topology (builder spec or file) as YAML."""
    from ..topology import load_topology_spec, save_topology

    check_output_file(out_file, "--out")
    topo = load_topology_spec(spec)
    save_topology(topo, out_file)
    print(f"wrote {out_file} ({len(topo.nodes)} nodes, {len(topo.links)} links)", file=sys.stderr)
