"""The ``netweave`` application and its command groups (every command module registers on these)."""

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Plan, simulate and run the communication of distributed training.")
graph_app = typer.Typer(no_args_is_help=True, help="Inspect graphs.")
topology_app = typer.Typer(no_args_is_help=True, help="Inspect and export topologies.")
aggsvc_app = typer.Typer(no_args_is_help=True, help="PAHInA's aggregation service on loopback.")
kernels_app = typer.Typer(no_args_is_help=True, help="MGG's multi-GPU aggregation kernels.")
testbed_app = typer.Typer(no_args_is_help=True, help="An emulated cluster of network namespaces (needs root).")
for group, name in ((graph_app, "graph"), (topology_app, "topology"), (aggsvc_app, "aggsvc"), (kernels_app, "kernels"),
                    (testbed_app, "testbed")):
    app.add_typer(group, name=name)
