"""One section of a report: a table of strategies measured against a baseline, what the reader
should see in it, and which of its columns the figure plots."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class PaperFigure:
    """What a paper's figure reports for the rows of a section, to draw beside netweave's values.

    - ``figure``: where, e.g. ``"ARO Fig. 7a (24x24 leaf-spine, 200 workers)"``.
    - ``metric``: the section's column the paper's values correspond to.
    - ``values``: the paper's value of ``metric`` per row (first-column value); only their ratios
      to ``relative_to``'s are drawn, since the paper's setting is not netweave's.
    - ``relative_to``: the row both series are divided by (the paper's own reference).
    """

    figure: str
    metric: str
    values: dict[str, float]
    relative_to: str

    def pairs(self, rows: list[dict], first_column: str) -> tuple[list[str], list[float], list[float]]:
        """``(labels, netweave, paper)``: each row the paper reports, as a ratio to ``relative_to``."""
        ours = {r[first_column]: r[self.metric] for r in rows if r.get(self.metric) is not None}
        if self.relative_to not in ours or not ours[self.relative_to]:
            return [], [], []
        labels = [k for k in self.values if k in ours]
        return (labels, [ours[k] / ours[self.relative_to] for k in labels],
                [self.values[k] / self.values[self.relative_to] for k in labels])


@dataclass
class Section:
    """One comparison, as ``compare`` measures it and ``report/`` shows it.

    - ``name``: a short id, also the stem of its figure (``exchange`` → ``exchange.png``).
    - ``title``: one line, what was measured on what.
    - ``columns``: the table's columns in order. Names carry their units (``_ms``, ``_MB``,
      ``_gbps``; see :func:`netweave.report.columns.header`); the first column names the row
      (planner, strategy, algorithm …).
    - ``rows``: one dict per row, keyed by ``columns``; numbers are ``int``/``float``, ``None``
      where a value does not exist.
    - ``baseline``: the first-column value of the baseline row(s), drawn grey.
    - ``metrics``: the numeric columns its figure plots side by side, e.g. time and bytes.
    - ``note``: one sentence, what the reader should see and why.
    - ``differs``: where netweave differs from the paper behind the section.
    - ``inputs``: which dataset and topology the section used, and why where it did not use the
      user's (``compare DATASET --topology T`` names both; not every section can take them).
    - ``metric``: a single plotted column, used only when ``metrics`` is empty.
    - ``spread``: for a plotted metric, the columns of its spread (``{"epoch_ms": ("epoch_q1_ms",
      "epoch_q3_ms")}``), drawn as an error bar on its bar.
    - ``paper``: the paper's figure for these rows, drawn as one more panel (None: no such figure).
    - ``skipped``: why the section did not run (its rows are then empty).
    - ``seconds``: wall-clock time the section took.
    """

    name: str
    title: str
    columns: tuple[str, ...]
    rows: list[dict] = field(default_factory=list)
    baseline: str = ""
    metrics: tuple[str, ...] = ()
    note: str = ""
    differs: str = ""
    inputs: str = ""
    metric: str = ""
    paper: PaperFigure | None = None
    spread: dict[str, tuple[str, str]] = field(default_factory=dict)
    skipped: str | None = None
    seconds: float = 0.0

    @property
    def plotted(self) -> tuple[str, ...]:
        """The columns the figure plots: ``metrics``, else ``(metric,)``, else none declared."""
        return tuple(self.metrics) or ((self.metric,) if self.metric else ())

    def summary(self) -> dict:
        """Every field, JSON-able (what ``compare --json`` and ``compare.json`` hold)."""
        return asdict(self)

    def is_baseline(self, row: dict) -> bool:
        return row[self.columns[0]] == self.baseline
