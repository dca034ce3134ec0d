"""The ``netweave`` application and its command groups (every command module registers on these).

The root takes ``--version`` and ``--quiet`` (also accepted after any command: :mod:`.command`)."""

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Plan, simulate and run the communication of distributed training.",
                  epilog="Every command that computes something takes --json (one JSON object on stdout, with "
                         "the run's metadata under \"run\"); progress goes to stderr (--quiet silences it). "
                         "File formats: docs/formats.md.")
graph_app = typer.Typer(no_args_is_help=True, help="Inspect graphs.")
topology_app = typer.Typer(no_args_is_help=True, help="Inspect and export topologies.")
aggsvc_app = typer.Typer(no_args_is_help=True, help="PAHInA's aggregation service on loopback.")
kernels_app = typer.Typer(no_args_is_help=True, help="MGG's multi-GPU aggregation kernels.")
testbed_app = typer.Typer(no_args_is_help=True, help="An emulated cluster of network namespaces (needs root).")
for group, name in ((graph_app, "graph"), (topology_app, "topology"), (aggsvc_app, "aggsvc"), (kernels_app, "kernels"),
                    (testbed_app, "testbed")):
    app.add_typer(group, name=name)


def _version(value: bool) -> None:
    if value:
        from ..run_info import version_line

        print(version_line())
        raise typer.Exit()


def _quiet(value: bool) -> None:
    if value:
        from ..progress import set_quiet

        set_quiet()


@app.callback()
def root(version: bool = typer.Option(False, "--version", is_eager=True, expose_value=False, callback=_version,
                                      help="Print netweave's version (and git commit) and exit."),
         quiet: bool = typer.Option(False, "--quiet", "-q", expose_value=False, callback=_quiet,
                                    help="No progress lines or bars on stderr (warnings and errors remain).")):
    """Plan, simulate and run the communication of distributed training."""
