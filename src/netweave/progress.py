"""Progress display and warnings on stderr (rich). Spinners only when stderr is a terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

console = Console(stderr=True)


def _live() -> bool:
    """Spinners only on a terminal, and not when ``NETWEAVE_NO_PROGRESS`` is set."""
    return console.is_terminal and not os.environ.get("NETWEAVE_NO_PROGRESS")


@contextlib.contextmanager
def stage(description: str) -> Iterator[None]:
    """Show a spinner with elapsed time while a long step runs; log its duration afterwards."""
    if not _live():
        yield
        return
    t0 = time.perf_counter()
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        progress.add_task(description, total=None)
        yield
    console.print(f"[green]✓[/] {description} [dim]({time.perf_counter() - t0:.2f} s)[/]")


def warn(message: str) -> None:
    """One line on stderr that something was filled in, guessed or skipped."""
    print(f"netweave: warning: {message}", file=sys.stderr)


@contextlib.contextmanager
def epoch_bar(total: int, description: str, enabled: bool = True) -> Iterator:
    """A progress bar over ``total`` steps on a terminal; yields ``advance(status_text)``."""
    if not (enabled and _live()):
        yield lambda status="": None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total, status="")
        yield lambda status="": progress.update(task, advance=1, status=status)
