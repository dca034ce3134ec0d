"""Output paths are checked before any work, and a failed run leaves nothing behind.

``netweave`` writes only after it has computed what to write; :func:`check_output_file` and
:func:`check_output_dir` make a bad ``--out``/``--plot``/``--timeline``/``--dump-logits``/
``--report`` fail in one line before a minute of simulation or training is spent, and
:func:`output_dir` removes a results folder that a failing run created and left empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import NetweaveError


def _writable_parent(path: Path, option: str) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise NetweaveError(f"{option} {path}: the folder {parent} does not exist; create it or choose another path")
    if not parent.is_dir():
        raise NetweaveError(f"{option} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise NetweaveError(f"{option} {path}: cannot write in {parent} (permission denied); choose another path")


def check_output_file(path: str | Path | None, option: str) -> None:
    """``path`` (if given) can be written as a file: its folder exists and is writable, and it is
    not itself a folder. Nothing is created."""
    if path is None:
        return
    path = Path(path)
    if str(path) in ("", "."):
        raise NetweaveError(f"{option}: an empty path; name a file")
    if path.is_dir():
        raise NetweaveError(f"{option} {path}: is a folder; name a file in it")
    if path.exists() and not os.access(path, os.W_OK):
        raise NetweaveError(f"{option} {path}: cannot overwrite it (permission denied)")
    _writable_parent(path, option)


def check_output_dir(path: str | Path | None, option: str) -> None:
    """``path`` (if given) is a writable folder or can be created as one. Nothing is created."""
    if path is None:
        return
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise NetweaveError(f"{option} {path}: is a file, not a folder; choose a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise NetweaveError(f"{option} {path}: cannot write in it (permission denied)")
        return
    _writable_parent(path, option)


@contextmanager
def output_dir(path: str | Path, option: str = "--out") -> Iterator[Path]:
    """Check ``path`` (a folder of results), create it, and remove it again if the block fails
    and leaves it empty (a folder that held results before is never removed)."""
    path = Path(path)
    check_output_dir(path, option)
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    except BaseException:
        if created and path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        raise
