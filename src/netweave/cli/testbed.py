"""The emulated cluster: ``testbed up`` (namespaces, shaped links, routes), ``testbed down`` and
``testbed train`` (data-parallel training through its in-network aggregation)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import NetweaveError
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
def testbed_down(all_: bool = typer.Option(False, "--all", help="Also clusters whose owner still runs."),
                 as_json: bool = JsonOpt):
    """Remove the clusters `testbed up` left and those of runs that died (namespaces, links, processes)."""
    from ..testbed import down

    show({"removed": down(all_)}, as_json, "testbed down")


@testbed_app.command("train")
def testbed_train(
    precisions: str = typer.Option("fp8:2,fp16:2", "--precisions", help="Workers per precision, e.g. fp8:2,fp16:2 (PAHInA §VI-B: two fp8, the rest fp16)."),
    routing: str = typer.Option("pahina", "--routing", help="pahina (each precision aggregated at the INA switch), ps (every gradient to the PS, no INA) or ring (gloo's ring all-reduce, fp32, no PS)."),
    dataplane: str = typer.Option("xdp", "--dataplane", help="xdp (in the kernel) or user (the reference, in the switch's agent)."),
    epochs: int = typer.Option(5, "--epochs"),
    scale: float = typer.Option(0.1, "--scale", help="Factor on the star's 100 Gb/s links; recorded in the output."),
    batch: int = typer.Option(64, "--batch", help="Global batch, split evenly over the workers."),
    lr: float = typer.Option(0.05, "--lr"), seed: int = typer.Option(0, "--seed"),
    as_json: bool = JsonOpt,
):
    """Train LeNet-5 on scikit-learn's digits, data-parallel through in-network aggregation on an emulated star."""
    from ..report.console import emit_json, out, table
    from ..route.jobs import parse_precision_mix
    from ..testbed.run import train_on_testbed

    counts = parse_precision_mix(precisions)
    if any(v != int(v) for v in counts.values()):
        raise NetweaveError(f"--precisions {precisions}: give whole worker counts, e.g. fp8:2,fp16:2")
    workers = [p for p, k in counts.items() for _ in range(int(k))]
    r = train_on_testbed(workers, routing, dataplane, epochs, scale, batch, lr, seed=seed,
                         on_epoch=None if as_json else lambda e: out.print(
                             f"epoch {e['epoch']}: loss {e['loss']:.4f}, test accuracy {e['test_acc']:.3f}, "
                             f"{e['epoch_s']:.2f} s ({e['comm_s']:.2f} s aggregating), {e['samples_per_s']:,.0f} samples/s"))
    summary = {"workers": workers, "routing": routing, "dataplane": dataplane if routing == "pahina" else None,
               "scale": scale, **r.summary, "epochs": r.epochs, "switch": r.agent}
    if as_json:
        return emit_json(summary)
    out.print(table("summary", {k: v for k, v in summary.items() if k not in ("epochs", "done")}))
