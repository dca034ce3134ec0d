"""The click command ``netweave`` runs: typer's, with two additions made once, here.

* ``--quiet`` / ``-q`` on every command (``netweave plan cora --topology dgx1 --quiet``), as on the root.
* Help in click's plain layout when stdout is not a terminal or narrower than :data:`RICH_HELP_COLUMNS`:
  rich's boxed help cuts option names and values with ``…`` at 80 columns
  (``--normalize-feat…``); the plain layout wraps every word and keeps each name whole.
"""

from __future__ import annotations

import shutil
import sys

import typer

from .app import app

RICH_HELP_COLUMNS = 120


def netweave_command():
    """``netweave`` as a click group, with the additions of the module docstring."""
    command = typer.main.get_command(app)
    quiet = next(p for p in command.params if p.name == "quiet")  # the root's option, shared by every command
    plain = not sys.stdout.isatty() or shutil.get_terminal_size().columns < RICH_HELP_COLUMNS
    for cmd in _walk(command):
        if plain and hasattr(cmd, "rich_markup_mode"):
            cmd.rich_markup_mode = None
        if not hasattr(cmd, "commands") and not any("--quiet" in p.opts for p in cmd.params):
            cmd.params.append(quiet)
    return command


def _walk(command):
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _walk(sub)
