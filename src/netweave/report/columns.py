"""How a column reads: its header with the unit spelled out, and the text of one value.

Column names carry their unit as a suffix (docs/formats.md, "Conventions"): ``predicted_time_ms`` reads
``predicted time (ms)``, ``exchange_MB_per_epoch`` ``exchange (MB/epoch)``, ``rate_x_ps``
``rate (× PS)``; dimensionless ratios say so (``speedup (×)``, ``traffic reduction (fraction)``).
"""

from __future__ import annotations

UNITS = {"s": "s", "ms": "ms", "us": "µs", "ns": "ns", "B": "B", "bytes": "B", "KB": "KB", "MB": "MB", "GB": "GB",
         "kb": "KB", "mb": "MB", "gb": "GB", "bps": "b/s", "mbps": "Mb/s", "gbps": "Gb/s"}
RATIOS = {"speedup": "×", "reduction": "fraction", "efficiency": "fraction", "acc": "fraction"}  # last word -> unit
WORDS = {"acc": "accuracy", "ina": "INA", "ps": "PS"}


def split_unit(column: str) -> tuple[str, str]:
    """``(label, unit)`` of a column name; ``unit`` is ``""`` for counts and names.

    >>> split_unit("exchange_MB_per_epoch")
    ('exchange', 'MB/epoch')
    """
    words = column.split("_")
    per = ""
    if "per" in words[1:]:
        i = words.index("per", 1)
        words, per = words[:i], "/" + " ".join(words[i + 1:])
    if len(words) > 2 and words[-2] == "x":  # rate_x_ps: a multiple of the named baseline
        return _label(words[:-2]), f"× {_label(words[-1:])}"
    if len(words) > 1 and words[-1] in UNITS:
        return _label(words[:-1]), UNITS[words[-1]] + per
    return _label(words), RATIOS.get(words[-1], "")


def header(column: str) -> str:
    """``label (unit)``, or the label alone when the column has no unit."""
    label, unit = split_unit(column)
    return f"{label} ({unit})" if unit else label


def is_number(value) -> bool:
    """An ``int`` or ``float`` that a figure can plot (``bool`` is not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cell(value) -> str:
    """A table cell: four significant digits for floats, thousands separators, ``–`` for ``None``."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.4g}"
    if is_number(value):
        return f"{value:,}"
    return str(value)


def _label(words: list[str]) -> str:
    return " ".join(WORDS.get(w, w) for w in words)


def paper_line(s) -> str:
    """One sentence on a section's :class:`~.section.PaperFigure`: the paper's ratios and netweave's
    ("" when the section has no figure or no row to compare)."""
    if s.paper is None:
        return ""
    labels, ours, theirs = s.paper.pairs(s.rows, s.columns[0])
    if not labels:
        return ""
    pairs = ", ".join(f"{k} {p:.2g} (netweave {o:.2g})" for k, o, p in zip(labels, ours, theirs))
    return f"{s.paper.figure}: {header(s.paper.metric)} relative to {s.paper.relative_to}: {pairs}."
