"""Tables as CSV files: one row per dict, a header, and the run's metadata as trailing ``run_*``
columns (:func:`netweave.run_info.csv_columns`, the same on every row), so that a CSV copied out of
its folder still says which netweave, commit, machine and command produced it."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def write_csv(path: str | Path, rows: list[dict], run: dict | None = None) -> None:
    """``rows`` under the union of their keys (in first-seen order), then the ``run_*`` columns."""
    from ..run_info import csv_columns

    extra = csv_columns(run)
    keys = list(dict.fromkeys(k for row in rows for k in row)) + list(extra)
    with Path(path).open("w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows({**row, **extra} for row in rows)


def write_array_csv(path: str | Path, values: np.ndarray, columns: tuple[str, ...], run: dict | None = None) -> None:
    """A numeric ``(T, len(columns))`` array, nine significant digits, then the ``run_*`` columns."""
    write_csv(path, [{c: float(f"{v:.9g}") for c, v in zip(columns, row)} for row in np.asarray(values)], run)
