"""The one matplotlib module (Agg backend: no display needed). A section's figure puts one panel
per metric side by side, e.g. time and bytes, the baseline's bars grey; the other figures of
netweave (``repro``'s, :mod:`.series`; ``sim``'s timelines, :mod:`.timeline`) draw with its helpers.

Figures are returned, not shown; :func:`png_bytes` and :func:`save_png` render them and close them.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .columns import cell, header, is_number
from .section import Section

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BASELINE_COLOUR = "0.65"  # grey
COLOUR = "C0"
LOG_SPAN = 20  # a panel whose positive values span more than this factor gets a log axis
TITLE_CHARS_PER_INCH = 13  # characters of a 9 pt title that fit in an inch, with a margin
LABEL_CHARS = 10  # longer bar labels are tilted (a bar is 0.6 inch wide)
QUALIFIERS = ("memory", "cost_model")  # columns that tell apart rows of the same first column


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The PNG of ``fig`` (laid out tight); closes it."""
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=dpi)
    pyplot().close(fig)
    return buf.getvalue()


def save_png(fig: Figure, path: str | Path, dpi: int = 110) -> bytes:
    """Write the PNG of ``fig`` to ``path`` and return its bytes; closes the figure."""
    data = png_bytes(fig, dpi)
    Path(path).write_bytes(data)
    return data


def plotted_metrics(s: Section) -> tuple[str, ...]:
    """The columns the figure of ``s`` plots: its declared metrics, else its first numeric column.

    A declared metric must be a numeric column (``None`` allowed): plotting ``memory`` ("UL",
    "200 KB") as bars is the mistake this guards against.
    """
    for m in s.plotted:
        bad = [r[m] for r in s.rows if r[m] is not None and not is_number(r[m])] if m in s.columns else [None]
        if bad:
            what = f"not a numeric column ({bad[0]!r})" if m in s.columns else "not one of its columns"
            raise ValueError(f"section {s.name}: metric {m!r} is {what}; name numeric columns of {', '.join(s.columns)}")
    if s.plotted:
        return s.plotted
    numeric = [c for c in s.columns[1:] if s.rows and all(r[c] is None or is_number(r[c]) for r in s.rows)]
    return tuple(numeric[:1])


def row_labels(s: Section) -> list[str]:
    """Bar labels: the first column, qualified by ``memory`` or ``cost_model`` where the section has one."""
    q = next((q for q in QUALIFIERS if q in s.columns), None)
    return [f"{r[s.columns[0]]}" + (f"\n{r[q]}" if q and r[q] not in (None, "–") else "") for r in s.rows]


def section_figure(s: Section) -> Figure:
    """One bar panel per metric of ``s``, side by side: a bar per row, labelled with its value.

    The y axes carry units (``predicted time (ms)``); a panel whose values span more than
    :data:`LOG_SPAN` times is drawn on a log axis.
    """
    metrics = plotted_metrics(s)
    plt = pyplot()
    n = len(s.rows)
    panel = max(3.0, 0.6 * n + 1.4)
    paper = s.paper.pairs(s.rows, s.columns[0]) if s.paper is not None else ([], [], [])
    panels = max(len(metrics), 1) + bool(paper[0])
    fig, axes = plt.subplots(1, panels, figsize=(max(5.0, panel * panels), 3.8), squeeze=False)
    colours = [BASELINE_COLOUR if s.is_baseline(r) else COLOUR for r in s.rows]
    labels = row_labels(s)
    tilt = max((len(line) for label in labels for line in label.split("\n")), default=0) > LABEL_CHARS
    x = np.arange(n)
    for ax, m in zip(axes[0], metrics):
        values = np.array([np.nan if r[m] is None else float(r[m]) for r in s.rows])
        err = None
        if m in s.spread:  # e.g. the quartiles of a median
            lo, hi = s.spread[m]
            err = np.array([[v - float(r[lo]) for v, r in zip(values, s.rows)],
                            [float(r[hi]) - v for v, r in zip(values, s.rows)]])
        bars = ax.bar(x, values, color=colours, yerr=err, capsize=4 if err is not None else 0)
        ax.bar_label(bars, labels=[cell(r[m]) for r in s.rows], fontsize=7, padding=1)
        positive = values[np.isfinite(values) & (values > 0)]
        log = 0 < positive.size == np.isfinite(values).sum() and positive.max() > LOG_SPAN * positive.min()
        if log:  # e.g. the α–β and §5.1 predictions, orders of magnitude apart
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
        ax.margins(y=0.15)
        ax.set_ylabel(header(m) + (", log axis" if log else "") + (", median and quartiles" if m in s.spread else ""))
        ax.set_xticks(x, labels, fontsize=8, rotation=30 if tilt else 0, ha="right" if tilt else "center")
        ax.grid(axis="y", alpha=0.3)
    if paper[0]:
        paper_panel(axes[0][-1], s.paper, *paper)
    if s.baseline:
        from matplotlib.patches import Patch

        axes[0][0].legend(handles=[Patch(color=BASELINE_COLOUR, label=f"baseline ({s.baseline})")], fontsize=7,
                          loc="lower left", bbox_to_anchor=(0, 1), frameon=False, borderaxespad=0.2)  # above the bars
    fig.suptitle(textwrap.fill(s.title, int(TITLE_CHARS_PER_INCH * fig.get_figwidth())), fontsize=9)
    return fig


def paper_panel(ax, paper, labels: list[str], ours: list[float], theirs: list[float]) -> None:
    """netweave's and the paper's values side by side per row, both as ratios to the paper's reference row."""
    x = np.arange(len(labels))
    for offset, values, colour, name in ((-0.2, ours, COLOUR, "netweave (this run)"),
                                         (0.2, theirs, "C1", "paper")):
        bars = ax.bar(x + offset, values, 0.4, color=colour, label=name)
        ax.bar_label(bars, labels=[f"{v:.2g}" for v in values], fontsize=7, padding=1)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel(f"{header(paper.metric)} ÷ {paper.relative_to}'s")
    ax.set_title(textwrap.fill(paper.figure, 40), fontsize=8)
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
