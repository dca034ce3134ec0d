"""Progress and warnings on stderr; stdout carries only a command's result.

Three modes (:func:`mode`):

* ``live`` — stderr is a terminal: rich spinners and bars that vanish when done;
* ``plain`` — a ``netweave`` command (:func:`enable_plain`) whose stderr is a file or a pipe (a log,
  CI, ``2>&1 | tee``), where rich's live display is invisible: one line per step, ``netweave: partitioning …``, bars as a line every
  :data:`BAR_EVERY_S` seconds, and while a command runs (:func:`heartbeat`) a line
  ``netweave: still working …`` whenever nothing was printed for :data:`SILENCE_S` seconds, so
  that no run is silent for more than 10 s;
* ``off`` — ``--quiet`` (:func:`set_quiet`) or the environment variable ``NETWEAVE_NO_PROGRESS``
  (the workers of a sweep set it), or netweave used as a library off a terminal: nothing but
  warnings and errors.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

console = Console(stderr=True)
QUIET_ENV = "NETWEAVE_NO_PROGRESS"
BAR_EVERY_S = 5.0  # plain mode: at most one line per bar in this many seconds (and its last step)
SILENCE_S = 8.0  # plain mode: the heartbeat speaks when nothing was printed for this long
POLL_S = 0.5  # plain mode: how often the heartbeat looks
DONE_AFTER_S = 1.0  # plain mode: a step that took longer says when it is done

_lock = threading.Lock()  # one line at a time; held across fork (see _at_fork) so no child inherits it taken
_last_line = time.monotonic()
_doing: list[str] = []  # the steps under way, innermost last (what the heartbeat names)
_plain = False  # set by the command line: off a terminal, plain lines instead of nothing


PLAIN_ENV = "NETWEAVE_PLAIN_PROGRESS"  # inherited by the processes a command starts (training ranks)


def enable_plain() -> None:
    """Off a terminal, print plain progress lines, here and in the processes this one starts (the
    ``netweave`` command calls this)."""
    global _plain
    _plain = True
    os.environ[PLAIN_ENV] = "1"


def set_quiet() -> None:
    """``--quiet``: no progress from here on, in this process and the processes it starts."""
    os.environ[QUIET_ENV] = "1"


def mode() -> str:
    """``live``, ``plain`` or ``off`` (module docstring)."""
    if os.environ.get(QUIET_ENV):
        return "off"
    return "live" if console.is_terminal else ("plain" if _plain or os.environ.get(PLAIN_ENV) else "off")


def _live() -> bool:
    return mode() == "live"


def _say(text: str) -> None:
    """``netweave: TEXT`` on stderr, one line at a time; the heartbeat counts silence from here."""
    global _last_line
    with _lock:
        print(f"netweave: {text}", file=sys.stderr, flush=True)
        _last_line = time.monotonic()


def line(text: str) -> None:
    """One plain progress line on stderr (plain mode only)."""
    if mode() == "plain":
        _say(text)


@contextlib.contextmanager
def stage(description: str) -> Iterator[None]:
    """A long step: a spinner with elapsed time on a terminal (then its duration), one line when
    it starts and one when it ends (if it took more than :data:`DONE_AFTER_S`) off a terminal."""
    how = mode()
    t0 = time.perf_counter()
    if how == "off":
        yield
        return
    _doing.append(description)
    try:
        if how == "plain":
            line(f"{description} …")
            yield
            if (seconds := time.perf_counter() - t0) > DONE_AFTER_S:
                line(f"{description}: done ({seconds:.1f} s)")
            return
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            progress.add_task(description, total=None)
            yield
        console.print(f"[green]✓[/] {description} [dim]({time.perf_counter() - t0:.2f} s)[/]")
    finally:
        _doing.pop()


def warn(message: str) -> None:
    """One line on stderr that something was filled in, guessed or skipped."""
    _say(f"warning: {message}")


@contextlib.contextmanager
def epoch_bar(total: int, description: str, enabled: bool = True) -> Iterator:
    """A progress bar over ``total`` steps; yields ``advance(status_text)``. Off a terminal a line
    ``description: k/total status`` at most every :data:`BAR_EVERY_S` seconds and at the last step."""
    how = mode() if enabled else "off"
    if how == "off":
        yield lambda status="": None
        return
    if how == "plain":
        done, t0, shown = [0], time.perf_counter(), [-BAR_EVERY_S]
        line(f"{description}: 0/{total}")

        def advance(status: str = "") -> None:
            done[0] += 1
            now = time.perf_counter() - t0
            if done[0] >= total or now - shown[0] >= BAR_EVERY_S:
                shown[0] = now
                line(f"{description}: {done[0]}/{total} ({now:.0f} s)" + (f" {status}" if status else ""))

        _doing.append(description)
        try:
            yield advance
        finally:
            _doing.pop()
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total, status="")
        yield lambda status="": progress.update(task, advance=1, status=status)


@contextlib.contextmanager
def heartbeat(command: str) -> Iterator[None]:
    """While the block runs (a whole command), in plain mode: a line ``netweave: still working on
    COMMAND (STEP), N s`` whenever nothing was printed for :data:`SILENCE_S` seconds (it looks every
    :data:`POLL_S` seconds). A daemon
    thread; nothing in the other modes."""
    global _last_line
    if mode() != "plain":
        yield
        return
    stop = threading.Event()
    t0 = _last_line = time.monotonic()

    def beat() -> None:
        while not stop.wait(POLL_S):
            if time.monotonic() - _last_line >= SILENCE_S and mode() == "plain":
                step = f" ({_doing[-1]})" if _doing else ""
                line(f"still working on {command}{step}, {time.monotonic() - t0:.0f} s")

    thread = threading.Thread(target=beat, name="netweave-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1.0)


def _at_fork() -> None:
    """A forked child (a pool worker) gets the line lock free and stays silent (its parent speaks)."""
    global _lock
    _lock = threading.Lock()
    os.environ[QUIET_ENV] = "1"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _lock.acquire(), after_in_parent=lambda: _lock.release(),
                        after_in_child=_at_fork)
