"""Progress display on stderr (rich). Silent when stderr is not a terminal or when disabled."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from rich.console import Console

console = Console(stderr=True)
_enabled = True


def set_enabled(flag: bool) -> None:
    """Turn spinners and bars on or off (``--quiet``)."""
    global _enabled
    _enabled = flag


def _live() -> bool:
    return _enabled and console.is_terminal and not os.environ.get("NETWEAVE_NO_PROGRESS")


@contextlib.contextmanager
def stage(description: str) -> Iterator[None]:
    """Show a spinner with elapsed time while a long step runs; log its duration afterwards."""
    if not _live():
        yield
        return
    t0 = time.perf_counter()
    with console.status(f"{description} …"):
        yield
    console.print(f"[green]✓[/] {description} [dim]({time.perf_counter() - t0:.2f} s)[/]")


def warn(message: str) -> None:
    """One line on stderr that something was filled in, guessed or skipped."""
    print(f"netweave: warning: {message}", file=sys.stderr)
