"""``--help`` (issue 33): every command ends with examples that parse as the command would, and off a
terminal (any pipe, 80 columns) help keeps every option name whole instead of cutting it with "…"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from command_lines import command_names, invocations, parse
from netweave.cli.examples import EXAMPLES, EXAMPLES_RAW

OTHERS = {"testbed up", "testbed down", "testbed train", "testbed gnn"}  # the testbed's CLI has its own owner


def test_every_command_has_examples():
    assert set(command_names()) - OTHERS <= set(EXAMPLES)
    assert set(EXAMPLES) <= set(command_names())


@pytest.mark.parametrize("name", sorted(EXAMPLES_RAW))
def test_every_example_parses(name):
    for line in EXAMPLES_RAW[name]:
        (args,) = invocations(line)
        assert " ".join(args).startswith(name), (name, line)
        parse(args)


@pytest.mark.parametrize("command", [["train"], ["ina"], ["route"], ["compare"], ["kernels", "bench"]])
def test_help_in_a_pipe_keeps_option_names_and_shows_examples(command):
    """Rich's boxed help cut ``--normalize-features`` to ``--normalize-feat…`` at 80 columns."""
    import typer

    import netweave.cli

    env = dict(os.environ, COLUMNS="80")
    done = subprocess.run([sys.executable, "-m", "netweave", *command, "--help"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    cmd = typer.main.get_command(netweave.cli.app)
    for word in command:
        cmd = cmd.commands[word]
    shown = [o for p in cmd.params if not getattr(p, "hidden", False) for o in p.opts + p.secondary_opts
             if o.startswith("-")]
    assert shown and all(o in done.stdout for o in shown), [o for o in shown if o not in done.stdout]
    assert "--quiet" in done.stdout and "Examples:" in done.stdout
    assert f"netweave {' '.join(command)} " in done.stdout.split("Examples:")[1]
    if command == ["train"]:
        assert "--normalize-features / --raw-features" in done.stdout


def test_version(capsys):
    from netweave import __version__
    from netweave.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    out = capsys.readouterr().out
    assert (e.value.code or 0) == 0 and out.startswith(f"netweave {__version__}")
