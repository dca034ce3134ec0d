"""The ``netweave`` command: one sub-command per layer.

With ``--json`` a command prints exactly one JSON object on stdout; progress and logs go to stderr.
Bad input ends with one line ``netweave: error: …`` on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import NetweaveError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Plan, simulate and run the communication of distributed training.")
graph_app = typer.Typer(no_args_is_help=True, help="Inspect graphs.")
topology_app = typer.Typer(no_args_is_help=True, help="Inspect and export topologies.")
app.add_typer(graph_app, name="graph")
app.add_typer(topology_app, name="topology")

out = Console()
JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")
DATASET_HELP = "Dataset spec: cora, planetoid:DIR:NAME, npz:FILE, snap:FILE|GLOB, musae:DIR, rmat:n=…,m=…, reddit-like:scale=… (see `netweave datasets`)."
TOPOLOGY_HELP = "Topology YAML file or builder spec: dgx1, dgx1x2, pcie8, star:n=…, leafspine:leaves=…,spines=…,hosts=…, fattree:k=…, random:switches=…,degree=…,hosts=…"


def emit_json(obj: dict) -> None:
    """The one JSON object of a ``--json`` run."""
    sys.stdout.write(json.dumps(obj, default=_jsonable) + "\n")


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def table(title: str, rows: dict | list[tuple], columns: tuple[str, ...] = ("", "")) -> Table:
    t = Table(title=title, show_header=any(columns), title_justify="left")
    for c in columns:
        t.add_column(c)
    for row in rows.items() if isinstance(rows, dict) else rows:
        t.add_row(*(_fmt(v) for v in row))
    return t


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list):
        return ", ".join(map(str, value[:8])) + (" …" if len(value) > 8 else "")
    return str(value)


# -- datasets ------------------------------------------------------------------------------------
@app.command()
def datasets(as_json: bool = JsonOpt):
    """List bundled datasets, loadable formats and generators."""
    from .graph import BUNDLED, FORMATS, GENERATORS

    info = {"bundled": BUNDLED, "formats": FORMATS, "generators": {k: v[0] for k, v in GENERATORS.items()}}
    if as_json:
        return emit_json(info)
    out.print(table("bundled (no files needed)", BUNDLED, ("name", "description")))
    out.print(table("file formats (prefix optional: detected from the path)", FORMATS, ("prefix", "spec")))
    out.print(table("generators", info["generators"], ("name", "spec")))


# -- graph ---------------------------------------------------------------------------------------
@graph_app.command("stats")
def graph_stats(dataset: str = typer.Argument(..., help=DATASET_HELP), as_json: bool = JsonOpt):
    """Size, feature and degree statistics of a dataset."""
    from .graph import load_dataset

    t0 = time.perf_counter()
    g = load_dataset(dataset)
    stats = g.stats() | {"load_time_s": time.perf_counter() - t0}
    if as_json:
        return emit_json(stats)
    out.print(table(f"graph {dataset}", stats))


# -- partition -----------------------------------------------------------------------------------
class Method(str, Enum):
    metis = "metis"
    random = "random"
    range = "range"
    hierarchical = "hierarchical"


@app.command()
def partition(
    dataset: str = typer.Argument(..., help=DATASET_HELP),
    parts: Optional[int] = typer.Option(None, "--parts", "-k", help="Number of parts (workers)."),
    method: Method = typer.Option(Method.metis, "--method", help="metis (min edge cut), random (balanced), range (MGG Alg. 1), hierarchical (machines, then GPUs; needs --topology)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="For --method hierarchical: " + TOPOLOGY_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of METIS / random."),
    feature_dim: Optional[int] = typer.Option(None, "--feature-dim", help="Feature width (float32) for the exchange volume; default: the dataset's, else 128."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the partition (.npz with `parts`)."),
    as_json: bool = JsonOpt,
):
    """Partition a graph and report edge cut, balance, halo and exchange volume."""
    from .graph import load_dataset
    from .partition import (comm_relation, hierarchical_partition, metis_partition, partition_stats,
                            random_partition, range_partition)

    if method == Method.hierarchical:
        if topology is None:
            raise NetweaveError("--method hierarchical needs --topology (its machines and GPUs define the levels)")
        from .topology import load_topology_spec

        machines = load_topology_spec(topology).machines()
        if parts is not None and parts != sum(map(len, machines)):
            raise NetweaveError(f"--parts {parts} differs from the topology's {sum(map(len, machines))} workers; drop --parts")
    elif parts is None:
        raise NetweaveError("--parts K is required (the number of workers)")
    t0 = time.perf_counter()
    g = load_dataset(dataset)
    t1 = time.perf_counter()
    if method == Method.metis:
        p = metis_partition(g, parts, seed)
    elif method == Method.random:
        p = random_partition(g, parts, seed)
    elif method == Method.range:
        p = range_partition(g, parts)
    else:
        p = hierarchical_partition(g, machines, seed)
    t2 = time.perf_counter()
    comm = comm_relation(g, p)
    t3 = time.perf_counter()
    dim = feature_dim if feature_dim is not None else (g.feature_dim or 128)
    if dim < 1:
        raise NetweaveError(f"--feature-dim {dim} must be positive")
    stats = {"dataset": dataset, "num_nodes": g.num_nodes, "num_edges": g.num_edges, "seed": seed,
             "feature_dim": dim} | partition_stats(g, p, comm, 4 * dim)
    stats |= {"load_time_s": t1 - t0, "partition_time_s": t2 - t1, "comm_relation_time_s": t3 - t2}
    if out_file is not None:
        p.save(out_file)
        stats["out"] = str(out_file)
    if as_json:
        return emit_json(stats)
    shown = {k: v for k, v in stats.items() if k not in ("part_sizes", "halo_sizes")}
    out.print(table(f"{method.value} partition of {dataset} into {p.num_parts} parts", shown))


# -- topology ------------------------------------------------------------------------------------
@topology_app.command("show")
def topology_show(spec: str = typer.Argument(..., help=TOPOLOGY_HELP),
                  links: bool = typer.Option(False, "--links", help="List every link."),
                  as_json: bool = JsonOpt):
    """Summarise a topology: nodes by kind, workers, INA switches, link speeds."""
    from .topology import load_topology_spec, topology_to_dict

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


@topology_app.command("export")
def topology_export(spec: str = typer.Argument(..., help=TOPOLOGY_HELP),
                    out_file: Path = typer.Option(..., "--out", help="YAML file to write.")):
    """Write a topology (builder spec or file) as YAML."""
    from .topology import load_topology_spec, save_topology

    topo = load_topology_spec(spec)
    save_topology(topo, out_file)
    print(f"wrote {out_file} ({len(topo.nodes)} nodes, {len(topo.links)} links)", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning bad input into one error line (exit 2)."""
    try:
        app(args=argv, prog_name="netweave")  # standalone: usage errors print and exit 2 themselves
    except NetweaveError as exc:
        print(f"netweave: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:
        print(f"netweave: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
