"""The emulated cluster: ``testbed up`` (namespaces, shaped links, routes) and ``testbed down``."""

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
def testbed_down(all_: bool = typer.Option(False, "--all", help="Also clusters whose owner still runs."),
                 as_json: bool = JsonOpt):
    """Remove the clusters `testbed up` left and those of runs that died (namespaces, links, processes)."""
    from ..testbed import down

    show({"removed": down(all_)}, as_json, "testbed down")
