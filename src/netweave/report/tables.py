"""A section as a rich table: headers keep their units and wrap between words instead of being
cut (``traffic (MB)`` on two lines at 80 columns, never ``traffic_…``); the caption says what the
reader should see, where netweave differs from the paper, and which rows are the baseline."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .columns import cell, header, is_number, paper_line
from .section import Section

BORDER = 3  # characters per column for rich's default box: one rule and one space of padding each side


def section_table(s: Section, width: int = 80) -> Table:
    """The rows of ``s`` under headers with units, for a console ``width`` characters wide.

    Columns get :func:`column_widths`; numeric columns are right-aligned and the baseline rows dim.
    Text is shown as is (``'.[train]'`` is not rich markup).
    """
    title = Text(f"{s.title}  ({s.seconds:.1f} s)")
    if s.skipped:
        t = Table(title=title, title_justify="left", show_header=False, box=None)
        t.add_column(overflow="fold")
        t.add_row(Text(s.skipped))
        return t
    headers = [header(c) for c in s.columns]
    texts = [[cell(r[c]) for c in s.columns] for r in s.rows]
    widths = column_widths(headers, texts, width)
    t = Table(title=title, title_justify="left", caption=Text(caption(s)), caption_justify="left")
    for i, column in enumerate(s.columns):
        numeric = any(is_number(r[column]) for r in s.rows)
        t.add_column(Text(headers[i]), justify="right" if numeric else "left", overflow="fold", width=widths[i])
    for r, row in zip(s.rows, texts):
        t.add_row(*map(Text, row), style="dim" if s.is_baseline(r) else None)
    return t


def column_widths(headers: list[str], texts: list[list[str]], width: int) -> list[int | None]:
    """Content widths that fit a ``width``-character table, or ``None`` each where rich may choose.

    Where every header fits on one line nothing is fixed. Otherwise each column gets at least its
    longest header word and widest value, so headers break between words and no value wraps; the
    space left widens the columns that need least to show their header on one line first. Where even
    that does not fit, rich folds long words.
    """
    natural = [max([len(h)] + [len(row[i]) for row in texts]) for i, h in enumerate(headers)]
    room = width - BORDER * len(headers) - 1
    least = [max([len(w) for w in h.split()] + [len(row[i]) for row in texts]) for i, h in enumerate(headers)]
    if sum(natural) <= room or sum(least) > room:
        return [None] * len(headers)
    widths, left = list(least), room - sum(least)
    for i in sorted(range(len(widths)), key=lambda j: natural[j] - least[j]):
        grow = min(natural[i] - least[i], left)
        widths[i] += grow
        left -= grow
    return widths


def caption(s: Section) -> str:
    """The note, the line on the paper, and which rows are the baseline; one sentence each."""
    lines = [s.note] if s.note else []
    if s.differs:
        lines.append(f"Where netweave differs from the paper: {s.differs}")
    if paper := paper_line(s):
        lines.append(f"The paper: {paper}")
    if s.baseline:
        lines.append(f"Baseline (dimmed rows): {s.baseline}.")
    return "\n".join(lines)
