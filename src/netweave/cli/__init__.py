"""The ``netweave`` command: one sub-command per layer, each parse → scenario → run → render.

With ``--json`` a command prints exactly one JSON object on stdout; progress and logs go to stderr.
Bad input ends with one line ``netweave: error: …`` on stderr and exit status 2.

Commands live by topic (``data``, ``exchange``, ``ina``, ``route``, ``jobs``) and register on the
application of :mod:`.app`; their shared options and choices are in :mod:`.options`.
"""

from __future__ import annotations

import sys

from ..errors import NetweaveError
from . import data, exchange, ina, jobs, route  # noqa: F401 (they register the commands)
from .app import app
from .options import CostModelName  # noqa: F401 (the choices tests compare with the library's)


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


__all__ = ["app", "main"]
