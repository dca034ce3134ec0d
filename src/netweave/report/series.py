"""A paper's figure redrawn: netweave's series over one x column, the paper's points beside them.

A :class:`Panel` names the columns it draws with readable legend names (never raw column names),
its y label with the unit, and the paper's values per x where the paper quotes them; a figure is one
or more panels side by side (:func:`series_figure`), or netweave's and the paper's bars per category
(:func:`bars_figure`) where the paper's x is a set of schemes, not a number. The paper's points are
drawn as black-edged stars in the colour of the series they belong to, labelled "(paper)".
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .columns import header
from .plots import TITLE_CHARS_PER_INCH, pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Panel:
    """One panel: ``series`` maps a column to its legend name; ``paper`` a column to ``{x: value}``
    (what the paper reports for that series); ``note``: a line under the panel's title (e.g. "the
    paper gives no numbers"); ``log``: a log y axis."""

    series: dict[str, str]
    ylabel: str
    paper: dict[str, dict] = field(default_factory=dict)
    paper_label: dict[str, str] = field(default_factory=dict)  # column -> legend of its paper points
    note: str = ""
    log: bool = False


def series_figure(rows: list[dict], x: str, panels: list[Panel], title: str, xlabel: str | None = None) -> Figure:
    """Each panel's series as lines over ``x`` with the paper's points; a shared title."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels) + 0.8, 3.9), squeeze=False)
    xs = [row[x] for row in rows]
    for ax, panel in zip(axes[0], panels):
        for i, (column, label) in enumerate(panel.series.items()):
            colour = f"C{i}"
            values = [np.nan if row.get(column) is None else row[column] for row in rows]
            ax.plot(xs, values, "o-", color=colour, label=label, markersize=4)
            points = panel.paper.get(column, {})
            if points:
                ax.plot(list(points), list(points.values()), "*", color=colour, markersize=13, markeredgecolor="k",
                        linestyle="none", label=panel.paper_label.get(column, f"{label} (paper)"))
        if panel.log:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel or header(x))
        ax.set_ylabel(panel.ylabel)
        if panel.note:
            ax.set_title(textwrap.fill(panel.note, 60), fontsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle(textwrap.fill(title, int(TITLE_CHARS_PER_INCH * fig.get_figwidth())), fontsize=9)
    return fig


def bars_figure(labels: list[str], ours: list[float], theirs: list[float | None], ylabel: str, title: str,
                spread: list[tuple[float, float]] | None = None, ours_label: str = "netweave",
                theirs_label: str = "paper") -> Figure:
    """netweave's bar (with its ``spread`` ``(low, high)`` as an error bar) and the paper's bar per label."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(labels) + 1.5), 3.9))
    x = np.arange(len(labels))
    err = None
    if spread is not None:
        err = np.array([[o - lo for o, (lo, _) in zip(ours, spread)], [hi - o for o, (_, hi) in zip(ours, spread)]])
    bars = ax.bar(x - 0.2, ours, 0.4, color="C0", label=ours_label, yerr=err, capsize=3)
    ax.bar_label(bars, labels=[f"{v:.3g}" for v in ours], fontsize=7, padding=2)
    paper = np.array([np.nan if v is None else v for v in theirs], dtype=float)
    pbars = ax.bar(x + 0.2, paper, 0.4, color="C1", label=theirs_label)
    ax.bar_label(pbars, labels=["" if np.isnan(v) else f"{v:.3g}" for v in paper], fontsize=7, padding=2)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    fig.suptitle(textwrap.fill(title, int(TITLE_CHARS_PER_INCH * fig.get_figwidth())), fontsize=9)
    return fig
