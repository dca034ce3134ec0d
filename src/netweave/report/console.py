"""A command's result on the console: one JSON object on stdout (``--json``) or rich tables."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .columns import cell, header

out = Console()


def emit_json(obj: dict) -> None:
    """The one JSON object of a ``--json`` run, with the run's metadata under ``"run"``
    (:func:`netweave.run_info.run_metadata`): strict JSON, so a NaN or infinite number (a loss that
    diverged, a rate over an empty interval) is ``null``, never the bare ``NaN`` that JSON parsers refuse."""
    from ..run_info import run_metadata

    obj = {**obj, "run": obj.get("run") or run_metadata()}
    try:
        text = json.dumps(obj, default=_jsonable, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), default=_jsonable, allow_nan=False)
    sys.stdout.write(text + "\n")


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _finite(value):
    """``value`` with every NaN and ±inf float replaced by None (containers rebuilt, arrays as lists)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "tolist"):
        return _finite(value.tolist())
    return value


def finish(result: dict, artefact, out_file: Path | None, as_json: bool, title: str, hidden=()) -> bool:
    """Save ``artefact`` to ``--out`` if given, then print one JSON object (returns True) or a table."""
    if out_file is not None:
        artefact.save(out_file)
        result["out"] = str(out_file)
    return show(result, as_json, title, hidden)


def show(result: dict, as_json: bool, title: str, hidden=()) -> bool:
    """Print ``result`` as one JSON object (returns True) or as a two-column table without ``hidden`` keys."""
    if as_json:
        emit_json(result)
        return True
    out.print(table(title, {k: v for k, v in result.items() if k not in hidden}))
    return False


def table(title: str, rows: dict | list[tuple], columns: tuple[str, ...] = ("", "")) -> Table:
    """A rich table of ``rows`` (a dict reads as key/value rows) under ``columns``; column names with
    a unit suffix read as ``label (unit)`` (:func:`~netweave.report.columns.header`), and long cells
    and headers fold instead of being cut."""
    t = Table(title=title, show_header=any(columns), title_justify="left")
    for c in columns:
        t.add_column(header(c) if "_" in c else c, overflow="fold")
    for row in rows.items() if isinstance(rows, dict) else rows:
        t.add_row(*(value_text(v) for v in row))
    return t


NESTED = "see --json"  # what a table shows for a nested value instead of dumping it


def value_text(value) -> str:
    """:func:`~netweave.report.columns.cell`; a list as its first eight items; a flat mapping as
    ``key=value`` pairs; a nested one (a list of mappings, a mapping of mappings) by its size only."""
    if isinstance(value, dict):
        if len(value) <= 8 and not any(isinstance(v, (dict, list, tuple)) for v in value.values()):
            return ", ".join(f"{k}={value_text(v)}" for k, v in value.items())
        return f"{len(value)} entries ({NESTED})"
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (dict, list, tuple)) for v in value):
            return f"{len(value)} items ({NESTED})"
        return ", ".join(map(value_text, value[:8])) + (" …" if len(value) > 8 else "")
    return cell(value)
