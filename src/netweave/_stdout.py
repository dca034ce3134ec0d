"""stdout carries a command's result and nothing else.

Libraries print on file descriptor 1 from C and C++ (HiGHS's banner since highspy 1.16, METIS's
diagnostics), where ``sys.stdout`` cannot intercept them, and one such line in front of ``--json``'s
object breaks every script that reads it. :func:`stdout_to_stderr` points descriptor 1 at stderr for
a block; :func:`results_only` does that for a whole command while Python's ``sys.stdout`` (the
result: a table, the JSON object, help) keeps writing to the real stdout.
"""

from __future__ import annotations

import ctypes
import io
import os
import sys
from contextlib import contextmanager

try:
    _libc = ctypes.CDLL(None)
except OSError:  # pragma: no cover (no C library to flush)
    _libc = None


def _flush_c() -> None:
    if _libc is not None:
        _libc.fflush(None)  # C stdio's buffered bytes leave while fd 1 is still stderr


@contextmanager
def stdout_to_stderr(discard: bool = False):
    """File descriptor 1 points at stderr (``discard``: at ``/dev/null``) inside the block: what C and
    C++ code prints goes there. Python's ``sys.stdout`` is untouched."""
    sys.stdout.flush()
    saved = os.dup(1)
    target = os.open(os.devnull, os.O_WRONLY) if discard else 2
    try:
        os.dup2(target, 1)
        yield
    finally:
        _flush_c()
        os.dup2(saved, 1)
        os.close(saved)
        if discard:
            os.close(target)


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return None


@contextmanager
def results_only():
    """For a whole command: descriptor 1 → stderr (libraries' and child processes' prints), while
    ``sys.stdout`` writes to the real stdout through a descriptor of its own. Where ``sys.stdout``
    is not descriptor 1 (a test's capture), it is left as it is."""
    original = sys.stdout
    if _fileno(original) != 1:
        with stdout_to_stderr():
            yield
        return
    original.flush()
    saved = os.dup(1)
    result = io.TextIOWrapper(io.FileIO(saved, "w", closefd=False), encoding=original.encoding,
                              errors=original.errors, line_buffering=original.line_buffering)
    try:
        os.dup2(2, 1)
        sys.stdout = result
        yield
    finally:
        try:
            result.flush()
        except OSError:  # a closed pipe: nothing more reaches the reader
            pass
        sys.stdout = original
        _flush_c()
        os.dup2(saved, 1)
        os.close(saved)
