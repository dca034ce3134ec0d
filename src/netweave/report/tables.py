"""A section as a rich table: headers keep their units and wrap between words instead of being
cut (``traffic (MB)`` on two lines at 80 columns, never ``traffic_…``), numbers never wrap; the
caption says which inputs the section used, what the reader should see, where netweave differs
from the paper, and which rows are the baseline."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .columns import cell, header, is_number, paper_line
from .section import Section

BORDER = 3  # characters per column for rich's default box: one rule and one space of padding each side
COMPACT_BORDER = 2  # without a box: one space of padding each side


def section_table(s: Section, width: int = 80) -> Table:
    """The rows of ``s`` under headers with units, for a console ``width`` characters wide.

    Columns get :func:`column_widths`; numeric columns are right-aligned and the baseline rows dim.
    Where boxed columns do not fit (80 columns, any pipe) the vertical rules go, so that numbers
    stay whole and headers keep their units. Text is shown as is (``'.[train]'`` is not rich markup).
    """
    title = Text(f"{s.title}  ({s.seconds:.1f} s)")
    if s.skipped:
        t = Table(title=title, title_justify="left", show_header=False, box=None)
        t.add_column(overflow="fold")
        t.add_row(Text(s.skipped))
        return t
    headers = [header(c) for c in s.columns]
    texts = [[cell(r[c]) for c in s.columns] for r in s.rows]
    numeric = [any(is_number(r[c]) for r in s.rows) for c in s.columns]
    style = {}
    widths = column_widths(headers, texts, numeric, width, BORDER)
    if widths is not None and sum(widths) + BORDER * len(headers) + 1 > width:
        style = {"box": None, "pad_edge": False, "header_style": "bold underline"}
        widths = column_widths(headers, texts, numeric, width, COMPACT_BORDER)
    t = Table(title=title, title_justify="left", caption=Text(caption(s)), caption_justify="left", **style)
    for i, column in enumerate(s.columns):
        t.add_column(Text(headers[i]), justify="right" if numeric[i] else "left", overflow="fold",
                     width=None if widths is None else widths[i])
    for r, row in zip(s.rows, texts):
        t.add_row(*map(Text, row), style="dim" if s.is_baseline(r) else None)
    return t


def column_widths(headers: list[str], texts: list[list[str]], numeric: list[bool], width: int,
                  border: int = BORDER) -> list[int] | None:
    """Content widths for a ``width``-character table with ``border`` characters per column, or
    ``None`` where rich may choose (everything fits on one line, or nothing can be kept whole).

    Every column gets at least what its values need (a number whole, text its longest word); the
    space left goes first to the columns that need least to keep their header words whole (headers
    break between words, so a unit stays ``(ms)``), then to whole headers and values. A width that
    cannot hold even the values' needs returns ``None`` and rich folds.
    """
    def longest_word(text: str) -> int:
        return max((len(w) for w in text.split()), default=0)

    natural = [max([len(h)] + [len(row[i]) for row in texts]) for i, h in enumerate(headers)]
    must = [max([1] + [len(row[i]) if numeric[i] else longest_word(row[i]) for row in texts]) for i in range(len(headers))]
    words = [max(m, longest_word(h)) for m, h in zip(must, headers)]
    room = width - border * len(headers) - 1
    if sum(natural) <= room or sum(must) > room:
        return None if sum(natural) <= room or border == COMPACT_BORDER else must
    widths, left = list(must), room - sum(must)
    for goal in (words, natural):
        for i in sorted(range(len(widths)), key=lambda j: goal[j] - widths[j]):
            grow = min(max(goal[i] - widths[i], 0), left)
            widths[i] += grow
            left -= grow
    return widths


def caption(s: Section) -> str:
    """The inputs, the note, the line on the paper, and which rows are the baseline; one sentence each."""
    lines = [f"Inputs: {s.inputs}."] if s.inputs else []
    lines += [s.note] if s.note else []
    if s.differs:
        lines.append(f"Where netweave differs from the paper: {s.differs}")
    if paper := paper_line(s):
        lines.append(f"The paper: {paper}")
    if s.baseline:
        lines.append(f"Baseline (dimmed rows): {s.baseline}.")
    return "\n".join(lines)
