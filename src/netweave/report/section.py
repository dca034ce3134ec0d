"""One section of a report: a table of strategies measured against a baseline, what the reader
should see in it, and which of its columns the figure plots."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    - ``metric``: a single plotted column, used only when ``metrics`` is empty.
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
    metric: str = ""
    skipped: str | None = None
    seconds: float = 0.0

    @property
    def plotted(self) -> tuple[str, ...]:
        """The columns the figure plots: ``metrics``, else ``(metric,)``, else none declared."""
        return tuple(self.metrics) or ((self.metric,) if self.metric else ())

    def is_baseline(self, row: dict) -> bool:
        return row[self.columns[0]] == self.baseline
