"""The ``netweave`` command: one sub-command per layer, each parse → scenario → run → render.

With ``--json`` a command prints exactly one JSON object on stdout; progress and logs go to stderr.
Bad input ends with one line ``netweave: error: …`` on stderr and exit status 2.

Commands live by topic (``data``, ``exchange``, ``ina``, ``route``, ``jobs``) and register on the
application of :mod:`.app`; their shared options and choices are in :mod:`.options`.
"""

from __future__ import annotations

import sys

import typer

from .._stdout import results_only
from ..errors import NetweaveError
from ..progress import enable_plain, heartbeat, set_quiet
from ..run_info import set_command
from . import data, exchange, ina, jobs, route, testbed  # noqa: F401 (they register the commands)
from .app import app
from .command import netweave_command
from .options import CostModelName  # noqa: F401 (the choices tests compare with the library's)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning bad input into one error line (exit 2).

    Usage errors (an unknown option or choice, a missing argument) get the same one line as every
    other error, naming the command's ``--help``; a bare command group still prints its help."""
    try:  # typer >= 0.24 carries its own copy of click
        from typer._click import exceptions as click
    except ImportError:  # pragma: no cover (older typer)
        from click import exceptions as click

    args = sys.argv[1:] if argv is None else list(argv)
    set_command(["netweave", *args])
    enable_plain()
    if {"--quiet", "-q"} & set(args[:args.index("--")] if "--" in args else args):
        set_quiet()  # before the heartbeat starts (the option's callback runs only once parsing reaches it)
    try:
        with results_only(), heartbeat(_command_path(args).removeprefix("netweave ") or "netweave"):
            # what libraries print from C goes to stderr; stdout holds the result
            code = netweave_command().main(args=args, prog_name="netweave", standalone_mode=False)  # commands return or raise
        # typer returns (does not raise) the status of an Exit: 130 is how it reports Ctrl-C
        if type(code) is int and code == 130:
            raise KeyboardInterrupt
        if type(code) is int and code:
            sys.exit(code)
    except click.NoArgsIsHelpError:  # typer printed the help
        pass
    except click.UsageError as exc:
        path = exc.ctx.command_path if exc.ctx else _command_path(sys.argv[1:] if argv is None else argv)
        _fail(" ".join(exc.format_message().replace("Value error, ", "").split()) + f" (see `{path} --help`)")
    except (typer.Abort, KeyboardInterrupt):
        print("netweave: interrupted", file=sys.stderr)
        sys.exit(130)
    except NetweaveError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    sys.exit(0)


def _command_path(argv: list[str]) -> str:
    """``netweave topology show`` for ``["topology", "show", "dgx1", "--links=3"]``: the (sub)commands
    that ``argv`` names, for a usage error that click raised without its context."""
    command = typer.main.get_command(app)
    path = ["netweave"]
    for word in argv:
        if word.startswith("-"):
            continue
        sub = command.commands.get(word) if hasattr(command, "commands") else None
        if sub is None:
            break
        command = sub
        path.append(word)
    return " ".join(path)


def _fail(message: str) -> None:
    print(f"netweave: error: {message}", file=sys.stderr)
    sys.exit(2)


__all__ = ["app", "main"]
