"""A section's figure plots its declared metrics side by side, baseline grey, with units on the axes."""

import matplotlib.colors as mcolors
import numpy as np
import pytest

from netweave.report import header, section_figure
from netweave.report.plots import BASELINE_COLOUR, plotted_metrics, pyplot, row_labels


def bars(ax) -> np.ndarray:
    return np.array([p.get_height() for p in ax.patches])


def test_one_panel_per_declared_metric(sections):
    s = sections[1]
    fig = section_figure(s)
    try:
        axes = fig.axes
        assert [ax.get_ylabel() for ax in axes] == [header(m) for m in s.metrics] == ["traffic (MB)", "completion (µs)"]
        for ax, m in zip(axes, s.metrics):
            assert np.allclose(bars(ax), [r[m] for r in s.rows])
        grey = mcolors.to_rgba(BASELINE_COLOUR)
        assert [p.get_facecolor() == grey for p in axes[0].patches] == [s.is_baseline(r) for r in s.rows]
        assert [t.get_text() for t in axes[0].get_xticklabels()] == ["host", "straw\nUL", "straw\n200 KB",
                                                                     "switchgnn\n200 KB"]
    finally:
        pyplot().close(fig)


def test_a_string_column_is_not_plotted(sections):
    s = sections[1]
    s.metrics = ("memory", "traffic_MB")
    with pytest.raises(ValueError, match="memory"):
        section_figure(s)
    s.metrics, s.metric = (), "completion_us"
    assert plotted_metrics(s) == ("completion_us",)
    s.metric = ""
    assert plotted_metrics(s) == ("traffic_MB",)  # the first numeric column, never "memory"


def test_log_axis_only_beyond_20x(sections):
    fig = section_figure(sections[0])  # 1.5 ms … 120 ms; 9.75 … 12.5 MB
    try:
        assert [ax.get_yscale() for ax in fig.axes] == ["log", "linear"]
        assert np.allclose(bars(fig.axes[0]), [2, 1.5, 120, 90])
    finally:
        pyplot().close(fig)


def test_missing_values_draw_no_bar(sections):
    s = sections[0]
    s.metrics = ("speedup",)
    fig = section_figure(s)
    try:
        assert np.isnan(bars(fig.axes[0])).tolist() == [True, False, True, False]
        assert row_labels(s)[0] == "p2p\nalpha-beta"
    finally:
        pyplot().close(fig)


def test_a_metric_that_is_not_a_column_is_named(sections):
    sections[1].metrics = ("traffic_bytes",)
    with pytest.raises(ValueError, match="'traffic_bytes' is not one of its columns"):
        section_figure(sections[1])


def test_the_papers_figure_is_one_more_panel_of_ratios(sections):
    """Both series divided by the paper's reference row: here SwitchGNN at 12/40 = 0.3 of host's
    traffic against the paper's 0.19; a row the paper does not report is left out."""
    import dataclasses

    from netweave.report.columns import paper_line
    from netweave.report.section import PaperFigure

    s = dataclasses.replace(sections[1], paper=PaperFigure("Fig. 18", "traffic_MB", {"host": 1.0, "switchgnn": 0.19},
                                                           relative_to="host"))
    fig = section_figure(s)
    try:
        ax = fig.axes[-1]
        assert len(fig.axes) == len(s.metrics) + 1 and ax.get_title() == "Fig. 18"
        assert np.allclose(bars(ax), [1.0, 0.3, 1.0, 0.19])  # netweave's bars, then the paper's
        assert [t.get_text() for t in ax.get_xticklabels()] == ["host", "switchgnn"]
    finally:
        pyplot().close(fig)
    assert paper_line(s) == "Fig. 18: traffic (MB) relative to host: host 1 (netweave 1), switchgnn 0.19 (netweave 0.3)."
    missing = dataclasses.replace(s, paper=dataclasses.replace(s.paper, relative_to="ps"))  # no such row: no panel
    fig = section_figure(missing)
    try:
        assert len(fig.axes) == len(s.metrics)
    finally:
        pyplot().close(fig)
